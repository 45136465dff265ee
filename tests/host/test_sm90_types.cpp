// Host tests of the Hopper state types (src/cuda/hopper/sm90_types.cuh): the
// (stage, phase) walk of an mbarrier ring, the wgmma shared-memory matrix
// descriptor and the persistent kernels' tile order, which the kernels use on
// the device with the same constexpr code; and the ping-pong kernel's use of
// them, alone and in pairs (src/cuda/hopper/pingpong_gemm.cuh), replayed here.
#include "cuda/hopper/sm90_types.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using rigel::cuda::sm90::desc_advance;
using rigel::cuda::sm90::Schedule;
using rigel::cuda::sm90::tile_coords;
using rigel::cuda::sm90::PipelineState;
using rigel::cuda::sm90::SmemDescriptor;
using rigel::cuda::sm90::Swizzle;

struct Use {
    int stage;
    std::uint32_t phase;
    bool operator==(const Use&) const = default;
};

// Use u of the ring (u = 0, 1, 2, ...) is stage u % S in round u / S; the
// consumer waits on parity round & 1, the producer on the opposite parity.
std::vector<Use> expected_uses(int stages, int uses, std::uint32_t first_phase) {
    std::vector<Use> out;
    for (int u = 0; u < uses; ++u)
        out.push_back({u % stages, static_cast<std::uint32_t>((u / stages) % 2) ^ first_phase});
    return out;
}

template <int S>
std::vector<Use> walk(PipelineState<S> state, int uses) {
    std::vector<Use> out;
    for (int u = 0; u < uses; ++u) {
        out.push_back({state.stage(), state.phase()});
        state.advance();
    }
    return out;
}

template <int S>
void check_ring() {
    SCOPED_TRACE("stages " + std::to_string(S));
    const int uses = 5 * S + 2;  // several wraps, ending mid-ring
    EXPECT_EQ(walk(PipelineState<S>::consumer_start(), uses), expected_uses(S, uses, 0));
    EXPECT_EQ(walk(PipelineState<S>::producer_start(), uses), expected_uses(S, uses, 1));
}

TEST(PipelineState, WalksStagesAndFlipsThePhaseOnEachWrap) {
    check_ring<1>();
    check_ring<2>();
    check_ring<3>();
    check_ring<4>();
    check_ring<6>();
}

// advance(n) lands where n single steps land, from every position of the
// ring and for jumps shorter and longer than the ring (the ping-pong
// consumers jump over the other warpgroup's k-tiles).
template <int S>
void check_jumps() {
    for (int start = 0; start < 2 * S; ++start)
        for (int n : {0, 1, S - 1, S, S + 1, 3 * S + 2, 786}) {
            auto stepped = PipelineState<S>::consumer_start();
            stepped.advance(start);
            auto jumped = stepped;
            for (int i = 0; i < n; ++i) stepped.advance();
            jumped.advance(n);
            EXPECT_EQ(jumped.stage(), stepped.stage()) << "stages " << S << " start " << start << " n " << n;
            EXPECT_EQ(jumped.phase(), stepped.phase()) << "stages " << S << " start " << start << " n " << n;
        }
}

TEST(PipelineState, JumpsLikeRepeatedSteps) {
    check_jumps<1>();
    check_jumps<4>();
    check_jumps<6>();
}

TEST(PipelineState, ProducerWaitsOnePhaseBehindTheConsumer) {
    auto producer = PipelineState<4>::producer_start();
    auto consumer = PipelineState<4>::consumer_start();
    for (int u = 0; u < 40; ++u) {
        EXPECT_EQ(producer.stage(), consumer.stage());
        EXPECT_EQ(producer.phase(), consumer.phase() ^ 1u);
        producer.advance();
        consumer.advance();
    }
}

TEST(PipelineState, PreviousStageIsTheOneUsedBefore) {
    auto state = PipelineState<3>::consumer_start();
    int last = -1;
    for (int u = 0; u < 10; ++u) {
        if (last >= 0) {
            EXPECT_EQ(state.previous_stage(), last);
        }
        last = state.stage();
        state.advance();
    }
    EXPECT_EQ(PipelineState<3>::consumer_start().previous_stage(), 2);
}

// Usable in constant expressions, as the kernels' templates may need.
static_assert([] {
    auto s = PipelineState<2>::consumer_start();
    s.advance();
    s.advance();
    return s.stage() == 0 && s.phase() == 1u;
}());

// The encodings the kernels used before SmemDescriptor, kept here verbatim as
// the reference: sm90.cuh's 128B-swizzled K-major descriptor and the layout
// probes' no-swizzle one.
std::uint64_t old_sw128_kmajor_desc(std::uint32_t smem_addr) {
    constexpr std::uint64_t kLbo = 16 >> 4;
    constexpr std::uint64_t kSbo = 1024 >> 4;
    constexpr std::uint64_t kSwizzle128B = 1;
    return static_cast<std::uint64_t>((smem_addr & 0x3FFFF) >> 4) | (kLbo << 16) | (kSbo << 32) |
           (kSwizzle128B << 62);
}
std::uint64_t old_probe_smem_desc(std::uint32_t addr, std::uint32_t lbo_bytes, std::uint32_t sbo_bytes) {
    return std::uint64_t((addr & 0x3FFFFu) >> 4) | (std::uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
           (std::uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32);
}
std::uint64_t old_desc_k_step(std::uint64_t desc, int j) { return desc + static_cast<std::uint64_t>((32 >> 4) * j); }

const std::vector<std::uint32_t>& addresses() {
    static const std::vector<std::uint32_t> a = {0x0,     0x400,   0x2000,  0x8000,  0x1C400, 0x37C00,
                                                 0x3FFF0, 0x3FC00, 0x12345, 0x40400, 0x7FFFFFF0};
    return a;
}

TEST(SmemDescriptor, Sw128KMajorEncodesWhatTheShiftsDid) {
    for (const std::uint32_t a : addresses()) {
        const std::uint64_t d = SmemDescriptor{.start_address = a,
                                               .leading_byte_offset = 16,
                                               .stride_byte_offset = 1024,
                                               .swizzle = Swizzle::b128}
                                    .encode();
        EXPECT_EQ(d, old_sw128_kmajor_desc(a)) << std::hex << a;
        for (int j = 0; j < 4; ++j) EXPECT_EQ(desc_advance(d, 32 * j), old_desc_k_step(d, j)) << std::hex << a;
    }
}

TEST(SmemDescriptor, NoSwizzleEncodesWhatTheProbesShiftsDid) {
    const std::vector<std::uint32_t> offsets = {16, 128, 64 * 16, 256 * 16, 0x3FFF0, 0x40010};
    for (const std::uint32_t a : addresses())
        for (const std::uint32_t lbo : offsets)
            for (const std::uint32_t sbo : offsets)
                EXPECT_EQ((SmemDescriptor{.start_address = a, .leading_byte_offset = lbo, .stride_byte_offset = sbo}
                               .encode()),
                          old_probe_smem_desc(a, lbo, sbo))
                    << std::hex << a << " " << lbo << " " << sbo;
}

TEST(SmemDescriptor, FieldsSitWhereThePtxIsaPutsThem) {
    // One field at a time, at its largest value: nothing spills into a neighbour.
    EXPECT_EQ(SmemDescriptor{.start_address = 0x3FFF0}.encode(), 0x3FFFull);
    EXPECT_EQ(SmemDescriptor{.leading_byte_offset = 0x3FFF0}.encode(), 0x3FFFull << 16);
    EXPECT_EQ(SmemDescriptor{.stride_byte_offset = 0x3FFF0}.encode(), 0x3FFFull << 32);
    EXPECT_EQ(SmemDescriptor{.base_offset = 7}.encode(), 7ull << 49);
    EXPECT_EQ(SmemDescriptor{.swizzle = Swizzle::b128}.encode(), 1ull << 62);
    EXPECT_EQ(SmemDescriptor{.swizzle = Swizzle::b64}.encode(), 2ull << 62);
    EXPECT_EQ(SmemDescriptor{.swizzle = Swizzle::b32}.encode(), 3ull << 62);
    // Bits below 16 bytes and above 2^18 are not encoded; base offset keeps 3 bits.
    EXPECT_EQ(SmemDescriptor{.start_address = 0x4000F}.encode(), 0ull);
    EXPECT_EQ(SmemDescriptor{.base_offset = 9}.encode(), 1ull << 49);
}

constexpr SmemDescriptor kExample{.start_address = 0x1C400,
                                  .leading_byte_offset = 16,
                                  .stride_byte_offset = 1024,
                                  .base_offset = 3,
                                  .swizzle = Swizzle::b64};

TEST(SmemDescriptor, DecodeInvertsEncode) {
    EXPECT_EQ(SmemDescriptor::decode(kExample.encode()), kExample);
    EXPECT_EQ(SmemDescriptor::decode(desc_advance(kExample.encode(), 96)).start_address, 0x1C400u + 96);
}

TEST(SmemDescriptor, PrintShowsEveryField) {
    EXPECT_EQ(to_string(kExample), "start 0x1c400 LBO 16 SBO 1024 base 3 swizzle 64B");
    EXPECT_EQ(to_string(SmemDescriptor::decode(old_sw128_kmajor_desc(0x400))),
              "start 0x00400 LBO 16 SBO 1024 base 0 swizzle 128B");
    EXPECT_EQ(to_string(SmemDescriptor::decode(old_probe_smem_desc(0x400, 64 * 16, 128))),
              "start 0x00400 LBO 1024 SBO 128 base 0 swizzle none");
}

}  // namespace

namespace {

// The ping-pong kernel's walk, as pingpong_gemm.cuh writes it: `units` CTAs
// (clusters of cluster_m) each take sequence indices unit, unit + units, ...,
// consumer c the even (c = 0) or odd ones; sequence index i is the pair tile
// (pm, tn) of tile_coords over ceil(tiles_m / cluster_m) pair rows in groups
// of 8 / cluster_m, and rank r computes tile row cluster_m pm + r. Every
// output tile is computed exactly once, the ranks of a cluster always share
// the tile column (their B), and a rank whose row lies past M is the only
// one left without work.
void check_pingpong_walk(int tiles_m, int tiles_n, int units, int cluster_m) {
    SCOPED_TRACE("tiles " + std::to_string(tiles_m) + " x " + std::to_string(tiles_n) + ", " +
                 std::to_string(units) + " units of " + std::to_string(cluster_m));
    const int tiles_pm = (tiles_m + cluster_m - 1) / cluster_m;
    const int sequence = tiles_pm * tiles_n;
    std::vector<int> seen(static_cast<std::size_t>(tiles_m) * tiles_n, 0);
    for (int unit = 0; unit < units; ++unit)
        for (int consumer = 0; consumer < 2; ++consumer)
            for (int i = unit + consumer * units; i < sequence; i += 2 * units) {
                int pm = 0, tn = 0;
                tile_coords<Schedule::persistent_grouped>(i, tiles_pm, tiles_n, 8 / cluster_m, pm, tn);
                ASSERT_GE(tn, 0);
                ASSERT_LT(tn, tiles_n);
                for (int rank = 0; rank < cluster_m; ++rank) {
                    const int tm = cluster_m * pm + rank;
                    if (tm >= tiles_m) {
                        EXPECT_EQ(rank, cluster_m - 1);  // only a last, odd row is missing
                        continue;
                    }
                    ++seen[static_cast<std::size_t>(tm) * tiles_n + tn];
                }
            }
    for (std::size_t t = 0; t < seen.size(); ++t) EXPECT_EQ(seen[t], 1) << "tile " << t;
}

TEST(TileOrder, EveryPingPongTileOnceAloneAndInPairs) {
    for (int cluster_m : {1, 2})
        for (auto [tm, tn, units] : {std::tuple{3, 5, 2}, std::tuple{17, 17, 66}, std::tuple{128, 393, 66},
                                     std::tuple{1, 1, 1}, std::tuple{9, 3, 132}, std::tuple{24, 6, 5}})
            check_pingpong_walk(tm, tn, cluster_m == 1 ? 2 * units : units, cluster_m);
}

// The ring as the ping-pong kernel walks it: the producer fills the k-tiles
// of the CTA's tiles in sequence; consumer c starts k_tiles x c uses in,
// waits on each of its tile's k-tiles, then jumps over the other consumer's.
// Both consumers wait on exactly the (stage, phase) the producer filled.
TEST(PipelineState, PingPongConsumersMeetTheProducersUses) {
    constexpr int kStages = 6;
    for (int k_tiles : {1, 5, 6, 12, 13}) {
        const int tiles = 7;
        std::vector<Use> filled;
        auto producer = PipelineState<kStages>::producer_start();
        for (int u = 0; u < tiles * k_tiles; ++u) {
            filled.push_back({producer.stage(), producer.phase() ^ 1u});  // the phase a consumer then waits on
            producer.advance();
        }
        for (int consumer = 0; consumer < 2; ++consumer) {
            auto ring = PipelineState<kStages>::consumer_start();
            ring.advance(consumer * k_tiles);
            for (int tile = consumer; tile < tiles; tile += 2) {
                for (int kt = 0; kt < k_tiles; ++kt) {
                    const Use want = filled[static_cast<std::size_t>(tile) * k_tiles + kt];
                    EXPECT_EQ((Use{ring.stage(), ring.phase()}), want)
                        << "k_tiles " << k_tiles << " consumer " << consumer << " tile " << tile << " kt " << kt;
                    ring.advance();
                }
                ring.advance(k_tiles);
            }
        }
    }
}

}  // namespace
