// Host tests of the Hopper state types (src/cuda/hopper/sm90_types.cuh): the
// (stage, phase) walk of an mbarrier ring and the wgmma shared-memory matrix
// descriptor, which the kernels build on the device with the same constexpr
// code.
#include "cuda/hopper/sm90_types.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using rigel::cuda::sm90::desc_advance;
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
