// Host tests of the mma.sync rungs' index maps (src/cuda/ladder/mma_layout.cuh).
// No GPU here, so the kernel's own index arithmetic is run on the CPU against
// an independent transcription of the PTX ISA: the fragment tables of
// mma.m16n8k16 (.f16/.bf16), mma.m16n8k8 (.tf32) and mma.m16n8k32 (.e4m3)
// (PTX ISA 9.7.14.5.7, 9.7.14.5.8, 9.7.14.5.10) and the ldmatrix x4 rule (lane
// 8j + r addresses row r of matrix j; lane l receives bytes 4(l%4)..+3 of row
// l/4). An emulator replays the kernel of tensor_rungs.cuh step by step (the
// loader, the swizzle, the stage ring, ldmatrix addresses, fragment routing,
// the guarded epilogue) on small integer matrices and must reproduce their
// plain product exactly, with a model of cp.async groups and barriers that
// fails on any read of a stage not yet landed or any write to a stage still
// being read. Bank-conflict freedom of the swizzle is checked too.
#include "cuda/ladder/mma_layout.cuh"

#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace rigel::mma;

// ---------------------------------------------------------------------------
// The PTX ISA, transcribed on its own (nothing here comes from mma_layout.cuh).

enum class Kind { f16, tf32, e4m3 };  // m16n8k16 .f16/.bf16, m16n8k8 .tf32, m16n8k32 .e4m3

struct KindInfo {
    int elem_bytes;
    int k;        // K of one instruction
    int a_elems;  // elements of A per thread
    int b_elems;  // elements of B per thread
};

KindInfo info(Kind kind) {
    switch (kind) {
        case Kind::f16: return {2, 16, 8, 4};
        case Kind::tf32: return {4, 8, 4, 2};
        case Kind::e4m3: return {1, 32, 16, 8};
    }
    throw std::logic_error("kind");
}

struct RowCol {
    int row, col;
};

// Multiplicand A, element a_i of a lane: (row, col) in the 16 x k matrix.
RowCol ptx_a(Kind kind, int lane, int i) {
    const int group_id = lane >> 2;
    const int tig = lane % 4;  // threadID_in_group
    switch (kind) {
        case Kind::f16:  // 9.7.14.5.8
            return {(i < 2 || (i >= 4 && i < 6)) ? group_id : group_id + 8,
                    i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8};
        case Kind::tf32:  // 9.7.14.5.7
            return {(i == 0 || i == 2) ? group_id : group_id + 8, (i == 0 || i == 1) ? tig : tig + 4};
        case Kind::e4m3:  // 9.7.14.5.10
            return {(i < 4 || (i >= 8 && i < 12)) ? group_id : group_id + 8,
                    i < 8 ? tig * 4 + (i & 3) : tig * 4 + (i & 3) + 16};
    }
    throw std::logic_error("kind");
}

// Multiplicand B, element b_i: (row = k, col = n) in the k x 8 matrix.
RowCol ptx_b(Kind kind, int lane, int i) {
    const int group_id = lane >> 2;
    const int tig = lane % 4;
    switch (kind) {
        case Kind::f16: return {i < 2 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8, group_id};
        case Kind::tf32: return {i == 0 ? tig : tig + 4, group_id};
        case Kind::e4m3: return {i < 4 ? tig * 4 + (i & 3) : tig * 4 + (i & 3) + 16, group_id};
    }
    throw std::logic_error("kind");
}

// Accumulator c_i (f32), the same for all three shapes.
RowCol ptx_c(int lane, int i) {
    const int group_id = lane >> 2;
    const int tig = lane % 4;
    return {i < 2 ? group_id : group_id + 8, tig * 2 + (i & 1)};
}

// Elements are packed low to high in each 32-bit register.
int reg_of(Kind kind, int i) { return i / (4 / info(kind).elem_bytes); }
int byte_in_reg(Kind kind, int i) { return (i % (4 / info(kind).elem_bytes)) * info(kind).elem_bytes; }

// The element value at `bytes` (little-endian signed integer of E bytes): the
// tests use small integers so that products are exact.
std::int64_t decode(const std::uint8_t* bytes, int e) {
    if (e == 1) return static_cast<std::int8_t>(bytes[0]);
    if (e == 2) {
        std::int16_t v;
        std::memcpy(&v, bytes, 2);
        return v;
    }
    std::int32_t v;
    std::memcpy(&v, bytes, 4);
    return v;
}

void encode(std::uint8_t* bytes, int e, std::int64_t v) {
    if (e == 1) {
        bytes[0] = static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
    } else if (e == 2) {
        const auto x = static_cast<std::int16_t>(v);
        std::memcpy(bytes, &x, 2);
    } else {
        const auto x = static_cast<std::int32_t>(v);
        std::memcpy(bytes, &x, 4);
    }
}

using Regs4 = std::array<std::uint32_t, 4>;
using Regs2 = std::array<std::uint32_t, 2>;

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: addr[l] is the row address lane l
// supplies; returns what each lane receives.
std::array<Regs4, kWarpSize> ldmatrix_x4(const std::vector<std::uint8_t>& smem,
                                         const std::array<std::uint32_t, kWarpSize>& addr) {
    std::array<Regs4, kWarpSize> out{};
    for (int l = 0; l < kWarpSize; ++l) {
        if (addr[l] % 16 != 0) throw std::runtime_error("ldmatrix row address not 16-byte aligned");
        if (addr[l] + 16 > smem.size()) throw std::runtime_error("ldmatrix row address outside shared memory");
    }
    for (int l = 0; l < kWarpSize; ++l)
        for (int j = 0; j < 4; ++j) {
            const std::uint32_t src = addr[8 * j + l / 4] + 4 * (l % 4);
            std::memcpy(&out[l][j], &smem[src], 4);
        }
    return out;
}

// One mma.sync of `kind`, executed from the PTX tables: rebuild A and B from
// the lanes' registers (each element must be supplied exactly once), multiply,
// and hand D back to the lanes as the C table says.
void mma_emulated(Kind kind, const std::array<Regs4, kWarpSize>& a, const std::array<Regs2, kWarpSize>& b,
                  std::array<std::array<std::int64_t, 4>, kWarpSize>& acc) {
    const KindInfo ki = info(kind);
    std::vector<std::int64_t> am(16 * ki.k), bm(ki.k * 8);
    std::vector<int> a_seen(16 * ki.k, 0), b_seen(ki.k * 8, 0);
    for (int l = 0; l < kWarpSize; ++l) {
        for (int i = 0; i < ki.a_elems; ++i) {
            const RowCol rc = ptx_a(kind, l, i);
            std::uint8_t bytes[4];
            std::memcpy(bytes, &a[l][reg_of(kind, i)], 4);
            am[rc.row * ki.k + rc.col] = decode(bytes + byte_in_reg(kind, i), ki.elem_bytes);
            ++a_seen[rc.row * ki.k + rc.col];
        }
        for (int i = 0; i < ki.b_elems; ++i) {
            const RowCol rc = ptx_b(kind, l, i);
            std::uint8_t bytes[4];
            std::memcpy(bytes, &b[l][reg_of(kind, i)], 4);
            bm[rc.row * 8 + rc.col] = decode(bytes + byte_in_reg(kind, i), ki.elem_bytes);
            ++b_seen[rc.row * 8 + rc.col];
        }
    }
    for (int s : a_seen)
        if (s != 1) throw std::logic_error("PTX A table does not cover the matrix once");
    for (int s : b_seen)
        if (s != 1) throw std::logic_error("PTX B table does not cover the matrix once");
    for (int l = 0; l < kWarpSize; ++l)
        for (int i = 0; i < 4; ++i) {
            const RowCol rc = ptx_c(l, i);
            std::int64_t sum = 0;
            for (int kk = 0; kk < ki.k; ++kk) sum += am[rc.row * ki.k + kk] * bm[kk * 8 + rc.col];
            acc[l][i] += sum;
        }
}

// ---------------------------------------------------------------------------
// cp.async groups and barriers of one CTA, at stage granularity. All threads
// run the same program, so a race is a stage written and read in the same
// barrier phase, or read before the group that filled it was waited for and
// a barrier passed.

class PipelineModel {
public:
    explicit PipelineModel(int stages) : stage_(stages) {}
    void write(int stage, int tile, bool async) {
        Stage& s = stage_.at(stage);
        if (s.last_read_phase >= phase_)
            fail("tile " + std::to_string(tile) + " overwrites stage " + std::to_string(stage) +
                 " in the barrier phase that still reads it");
        s.tile = tile;
        s.group = committed_;
        s.done_phase = async ? INT_MAX : phase_;  // a plain store is done at once, seen after a barrier
    }
    void commit() { ++committed_; }
    void wait(int pending) {
        for (Stage& s : stage_)
            if (s.done_phase == INT_MAX && s.group < committed_ - pending) s.done_phase = phase_;
    }
    void barrier() { ++phase_; }
    void read(int stage, int tile) {
        Stage& s = stage_.at(stage);
        if (s.tile != tile)
            fail("stage " + std::to_string(stage) + " holds tile " + std::to_string(s.tile) + ", not " +
                 std::to_string(tile));
        if (s.done_phase >= phase_)
            fail("tile " + std::to_string(tile) + " read before its copy was waited for and a barrier passed");
        s.last_read_phase = phase_;
    }

private:
    struct Stage {
        int tile = -1;
        int group = -1;
        int done_phase = INT_MAX;
        int last_read_phase = -1;
    };
    [[noreturn]] static void fail(const std::string& why) { throw std::runtime_error("pipeline: " + why); }
    std::vector<Stage> stage_;
    int committed_ = 0;
    int phase_ = 0;
};

// ---------------------------------------------------------------------------
// The kernel of tensor_rungs.cuh (mma_sync_kernel), replayed on the CPU with
// the index maps of mma_layout.cuh. A is m x k, B is n x k (both row-major,
// E-byte elements); returns C (m x n).

template <class Cfg>
std::vector<std::int64_t> emulate_kernel(Kind kind, int m, int n, int k, bool vec,
                                         const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
    const int e = info(kind).elem_bytes;
    const std::int64_t k_bytes = static_cast<std::int64_t>(k) * e;
    if (vec && k_bytes % kChunkBytes != 0) throw std::logic_error("vec needs whole 16-byte chunks");
    const int tiles_m = (m - 1) / Cfg::kBM + 1;
    const int tiles_n = (n - 1) / Cfg::kBN + 1;
    constexpr std::int64_t kPoison = INT64_MIN;
    std::vector<std::int64_t> c(static_cast<std::size_t>(m) * n, kPoison);
    std::vector<std::uint8_t> smem(Cfg::kSmemBytes);

    using Acc = std::array<std::array<std::int64_t, 4>, kWarpSize>;
    using AFrag = std::array<Regs4, kWarpSize>;
    using BFrag = std::array<Regs2, kWarpSize>;

    for (int block = 0; block < tiles_m * tiles_n; ++block) {
        const TileCoord tile = tile_coord(block, tiles_m, tiles_n, 8);
        const int m0 = tile.m * Cfg::kBM;
        const int n0 = tile.n * Cfg::kBN;
        const int k_tiles = static_cast<int>((k_bytes - 1) / Cfg::kRowBytes + 1);
        PipelineModel model(Cfg::kStages);
        std::fill(smem.begin(), smem.end(), std::uint8_t{0xA5});  // never zero: unwritten bytes show

        auto load_tile = [&](int kt) {
            const int stage = Cfg::stage_of(kt);
            model.write(stage, kt, vec);
            for (int tid = 0; tid < Cfg::kThreads; ++tid) {
                const int chunk = Cfg::load_chunk(tid, 0);
                const int row0 = Cfg::load_row(tid, 0);
                const int dst0 = Cfg::smem_offset(row0, chunk);
                const std::int64_t kb = static_cast<std::int64_t>(kt) * Cfg::kRowBytes + chunk * kChunkBytes;
                for (int operand = 0; operand < 2; ++operand) {
                    const int count = operand == 0 ? Cfg::kAChunksPerThread : Cfg::kBChunksPerThread;
                    const int limit = operand == 0 ? m : n;
                    const int origin = operand == 0 ? m0 : n0;
                    const int rows_left = limit - origin - row0;
                    const auto& src = operand == 0 ? a : b;
                    const int base = stage * Cfg::kStageBytes + (operand == 0 ? 0 : Cfg::kATileBytes);
                    for (int i = 0; i < count; ++i) {
                        // The kernel's arithmetic: copy i is kLoadRowStep * i rows below copy 0.
                        const int r = row0 + i * Cfg::kLoadRowStep;
                        EXPECT_EQ(r, Cfg::load_row(tid, i));
                        EXPECT_EQ(Cfg::load_chunk(tid, i), chunk);
                        const bool row_in = i * Cfg::kLoadRowStep < rows_left;
                        EXPECT_EQ(row_in, origin + r < limit);
                        std::uint8_t bytes[kChunkBytes] = {};
                        const std::int64_t row_start = static_cast<std::int64_t>(origin + r) * k_bytes;
                        if (vec) {
                            if (row_in && kb < k_bytes) {
                                if (kb + kChunkBytes > k_bytes) throw std::logic_error("chunk straddles K");
                                std::memcpy(bytes, &src[row_start + kb], kChunkBytes);
                            }
                        } else if (row_in) {
                            for (int x = 0; x < kChunkBytes / e; ++x)
                                if (kb + x * e < k_bytes) std::memcpy(bytes + x * e, &src[row_start + kb + x * e], e);
                        }
                        std::memcpy(&smem[base + dst0 + i * Cfg::kLoadRowStep * Cfg::kRowBytes], bytes, kChunkBytes);
                    }
                }
            }
        };

        std::vector<std::array<std::array<AFrag, Cfg::kMTiles>, 2>> af(Cfg::kWarps);
        std::vector<std::array<std::array<BFrag, Cfg::kNTiles>, 2>> bf(Cfg::kWarps);
        auto load_frags = [&](int buf, int kt, int ks) {
            if (kt < k_tiles) model.read(Cfg::stage_of(kt), kt);  // past the last tile: stale, unused
            const int stage_base = Cfg::stage_of(kt) * Cfg::kStageBytes;
            for (int w = 0; w < Cfg::kWarps; ++w) {
                for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
                    std::array<std::uint32_t, kWarpSize> addr{};
                    for (int l = 0; l < kWarpSize; ++l)
                        addr[l] = stage_base +
                                  Cfg::kstep_offset(static_cast<std::uint32_t>(
                                                        Cfg::warp_m0(w) * Cfg::kRowBytes +
                                                        Cfg::smem_offset(a_ldsm_row(l), a_ldsm_chunk(l, 0))),
                                                    ks) +
                                  mi * kMmaM * Cfg::kRowBytes;
                    af[w][buf][mi] = ldmatrix_x4(smem, addr);
                }
                for (int p = 0; p < Cfg::kNTiles / 2; ++p) {
                    std::array<std::uint32_t, kWarpSize> addr{};
                    for (int l = 0; l < kWarpSize; ++l)
                        addr[l] = stage_base + Cfg::kATileBytes +
                                  Cfg::kstep_offset(static_cast<std::uint32_t>(
                                                        Cfg::warp_n0(w) * Cfg::kRowBytes +
                                                        Cfg::smem_offset(b_ldsm_row(l), b_ldsm_chunk(l, 0))),
                                                    ks) +
                                  p * 2 * kMmaN * Cfg::kRowBytes;
                    const auto r = ldmatrix_x4(smem, addr);
                    for (int l = 0; l < kWarpSize; ++l)
                        for (int j = 0; j < 4; ++j) bf[w][buf][2 * p + b_x4_tile(j)][l][b_x4_half(j)] = r[l][j];
                }
            }
        };

        std::vector<std::array<std::array<Acc, Cfg::kNTiles>, Cfg::kMTiles>> acc(Cfg::kWarps);
        for (auto& w : acc)
            for (auto& row : w)
                for (auto& t : row)
                    for (auto& l : t) l.fill(0);

        for (int s = 0; s < Cfg::kStages - 1; ++s) {
            if (s < k_tiles) load_tile(s);
            model.commit();
        }
        model.wait(Cfg::kStages - 2);
        model.barrier();
        load_frags(0, 0, 0);
        for (int kt = 0; kt < k_tiles; ++kt) {
            for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
                if (ks == Cfg::kKSteps - 1) {
                    model.wait(Cfg::kStages - 2);
                    model.barrier();
                }
                const int next_ks = (ks + 1) % Cfg::kKSteps;
                load_frags((ks + 1) % 2, next_ks == 0 ? kt + 1 : kt, next_ks);
                if (ks == 0) {
                    if (kt + Cfg::kStages - 1 < k_tiles) load_tile(kt + Cfg::kStages - 1);
                    model.commit();
                }
                for (int w = 0; w < Cfg::kWarps; ++w)
                    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
                        for (int nj = 0; nj < Cfg::kNTiles; ++nj)
                            mma_emulated(kind, af[w][ks % 2][mi], bf[w][ks % 2][nj], acc[w][mi][nj]);
            }
        }

        for (int w = 0; w < Cfg::kWarps; ++w)
            for (int l = 0; l < kWarpSize; ++l)
                for (int mi = 0; mi < Cfg::kMTiles; ++mi)
                    for (int nj = 0; nj < Cfg::kNTiles; ++nj)
                        for (int h = 0; h < 2; ++h) {
                            const int row = m0 + Cfg::warp_m0(w) + mi * kMmaM + acc_row(l, 2 * h);
                            const int col = n0 + Cfg::warp_n0(w) + nj * kMmaN + acc_col(l, 2 * h);
                            if (row >= m) continue;
                            for (int x = 0; x < 2; ++x) {
                                if (col + x >= n) continue;
                                auto& out = c[static_cast<std::size_t>(row) * n + col + x];
                                if (out != kPoison) throw std::logic_error("an output element written twice");
                                out = acc[w][mi][nj][l][2 * h + x];
                            }
                        }
    }
    return c;
}

struct Case {
    int m, n, k;
    bool vec;
};

// Random small integers (|v| <= 4), A m x k and B n x k, the emulated kernel
// against the plain product; every element must be written, and exactly.
template <class Cfg>
void check_product(Kind kind, const Case& cs, std::uint32_t seed) {
    const int e = info(kind).elem_bytes;
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> dist(-4, 4);
    std::vector<std::int64_t> av(static_cast<std::size_t>(cs.m) * cs.k), bv(static_cast<std::size_t>(cs.n) * cs.k);
    std::vector<std::uint8_t> ab(av.size() * e), bb(bv.size() * e);
    for (std::size_t i = 0; i < av.size(); ++i) encode(&ab[i * e], e, av[i] = dist(rng));
    for (std::size_t i = 0; i < bv.size(); ++i) encode(&bb[i * e], e, bv[i] = dist(rng));
    const auto c = emulate_kernel<Cfg>(kind, cs.m, cs.n, cs.k, cs.vec, ab, bb);
    int bad = 0;
    for (int i = 0; i < cs.m; ++i)
        for (int j = 0; j < cs.n; ++j) {
            std::int64_t ref = 0;
            for (int kk = 0; kk < cs.k; ++kk)
                ref += av[static_cast<std::size_t>(i) * cs.k + kk] * bv[static_cast<std::size_t>(j) * cs.k + kk];
            const std::int64_t got = c[static_cast<std::size_t>(i) * cs.n + j];
            if (got != ref && ++bad <= 5)
                ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", expected " << ref << " (m " << cs.m
                              << " n " << cs.n << " k " << cs.k << " vec " << cs.vec << ")";
        }
    EXPECT_EQ(bad, 0);
}

// ---------------------------------------------------------------------------

TEST(MmaLayout, AccumulatorMapIsThePtxTable) {
    for (int l = 0; l < kWarpSize; ++l)
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(acc_row(l, i), ptx_c(l, i).row);
            EXPECT_EQ(acc_col(l, i), ptx_c(l, i).col);
        }
}

// The header's claim: in bytes, register r of A holds bytes 16(r>>1) + 4q .. +3
// of row g + 8(r&1), and register r of B bytes 16r + 4q .. +3 of column g, for
// all three types.
TEST(MmaLayout, ByteMapIsTheSameForAllThreeTypes) {
    for (Kind kind : {Kind::f16, Kind::tf32, Kind::e4m3}) {
        const KindInfo ki = info(kind);
        for (int l = 0; l < kWarpSize; ++l) {
            const int g = l >> 2, q = l & 3;
            for (int i = 0; i < ki.a_elems; ++i) {
                const RowCol rc = ptx_a(kind, l, i);
                const int r = reg_of(kind, i);
                EXPECT_EQ(rc.row, g + 8 * (r & 1));
                EXPECT_EQ(rc.col * ki.elem_bytes, 16 * (r >> 1) + 4 * q + byte_in_reg(kind, i));
            }
            for (int i = 0; i < ki.b_elems; ++i) {
                const RowCol rc = ptx_b(kind, l, i);
                const int r = reg_of(kind, i);
                EXPECT_EQ(rc.col, g);
                EXPECT_EQ(rc.row * ki.elem_bytes, 16 * r + 4 * q + byte_in_reg(kind, i));
            }
        }
    }
}

TEST(MmaLayout, TileCoordIsABijection) {
    for (int tm : {1, 2, 7, 8, 9, 17, 32})
        for (int tn : {1, 3, 16, 33}) {
            std::set<std::pair<int, int>> seen;
            for (int t = 0; t < tm * tn; ++t) {
                const TileCoord c = tile_coord(t, tm, tn, 8);
                ASSERT_GE(c.m, 0);
                ASSERT_LT(c.m, tm);
                ASSERT_GE(c.n, 0);
                ASSERT_LT(c.n, tn);
                seen.insert({c.m, c.n});
            }
            EXPECT_EQ(static_cast<int>(seen.size()), tm * tn) << tm << " x " << tn;
        }
}

// Shared memory has 32 banks of 4 bytes; a 16-byte access per lane is served
// 8 lanes at a time, conflict-free when those 8 hit 8 different 16-byte bank
// groups ((address / 16) % 8).
template <class Cfg>
void check_banks() {
    auto distinct_groups = [](const std::array<int, 8>& addr) {
        std::set<int> g;
        for (int x : addr) g.insert((x / 16) % 8);
        return g.size() == 8;
    };
    for (int w = 0; w < Cfg::kWarps; ++w)
        for (int ks = 0; ks < Cfg::kKSteps; ++ks)
            for (int j = 0; j < 4; ++j) {  // one ldmatrix matrix = 8 lanes
                for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
                    std::array<int, 8> addr{};
                    for (int r = 0; r < 8; ++r) {
                        const int l = 8 * j + r;
                        addr[r] = Cfg::smem_offset(Cfg::warp_m0(w) + mi * kMmaM + a_ldsm_row(l), a_ldsm_chunk(l, ks));
                    }
                    EXPECT_TRUE(distinct_groups(addr)) << "A ldmatrix conflicts: warp " << w << " mi " << mi;
                }
                for (int p = 0; p < Cfg::kNTiles / 2; ++p) {
                    std::array<int, 8> addr{};
                    for (int r = 0; r < 8; ++r) {
                        const int l = 8 * j + r;
                        addr[r] = Cfg::smem_offset(Cfg::warp_n0(w) + p * 16 + b_ldsm_row(l), b_ldsm_chunk(l, ks));
                    }
                    EXPECT_TRUE(distinct_groups(addr)) << "B ldmatrix conflicts: warp " << w << " pair " << p;
                }
            }
    for (int i = 0; i < Cfg::kBChunksPerThread; ++i)
        for (int t0 = 0; t0 < Cfg::kThreads; t0 += 8) {
            std::array<int, 8> addr{};
            for (int x = 0; x < 8; ++x) addr[x] = Cfg::smem_offset(Cfg::load_row(t0 + x, i), Cfg::load_chunk(t0 + x, i));
            EXPECT_TRUE(distinct_groups(addr)) << "cp.async stores conflict: threads " << t0 << "+, chunk " << i;
        }
}

TEST(MmaLayout, SwizzleIsConflictFree) {
    check_banks<MmaSyncTileConfig>();
    check_banks<MmaSyncE4m3TileConfig>();
    check_banks<TileConfig<128, 128, 128, 2, 2, 3>>();  // 128-byte rows, 2 x 2 warps
}

// The swizzle is a permutation of the chunks of each row, and the warp-tile
// origins (multiples of 8 rows) do not change it: the kernel adds the origin
// outside smem_offset.
TEST(MmaLayout, SwizzleIsAPermutationInvariantUnderEightRowShifts) {
    using Cfg = MmaSyncTileConfig;
    for (int r = 0; r < Cfg::kBN; ++r) {
        std::set<int> chunks;
        for (int ch = 0; ch < Cfg::kChunks; ++ch) chunks.insert(Cfg::smem_offset(r, ch) - r * Cfg::kRowBytes);
        EXPECT_EQ(static_cast<int>(chunks.size()), Cfg::kChunks);
        EXPECT_EQ(Cfg::swizzle(r), Cfg::swizzle(r % 8));
    }
}

// The kernel's shortcuts for two index maps: copy i of a thread lands
// kLoadRowStep * i rows below its copy 0 (same chunk column, same swizzle),
// and the ldmatrix offset of k-step ks is that of step 0 XOR ks * 32, also
// after a warp origin (a multiple of 8 rows) is added.
template <class Cfg>
void check_index_shortcuts() {
    for (int tid = 0; tid < Cfg::kThreads; ++tid)
        for (int i = 0; i < Cfg::kBChunksPerThread; ++i) {
            const int row0 = Cfg::load_row(tid, 0);
            const int chunk = Cfg::load_chunk(tid, 0);
            EXPECT_EQ(Cfg::load_row(tid, i), row0 + i * Cfg::kLoadRowStep);
            EXPECT_EQ(Cfg::load_chunk(tid, i), chunk);
            EXPECT_EQ(Cfg::smem_offset(Cfg::load_row(tid, i), chunk),
                      Cfg::smem_offset(row0, chunk) + i * Cfg::kLoadRowStep * Cfg::kRowBytes);
        }
    for (int origin = 0; origin < Cfg::kBN; origin += 8)
        for (int l = 0; l < kWarpSize; ++l)
            for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
                const auto a0 = static_cast<std::uint32_t>(origin * Cfg::kRowBytes +
                                                           Cfg::smem_offset(a_ldsm_row(l), a_ldsm_chunk(l, 0)));
                const auto b0 = static_cast<std::uint32_t>(origin * Cfg::kRowBytes +
                                                           Cfg::smem_offset(b_ldsm_row(l), b_ldsm_chunk(l, 0)));
                EXPECT_EQ(Cfg::kstep_offset(a0, ks),
                          static_cast<std::uint32_t>(Cfg::smem_offset(origin + a_ldsm_row(l), a_ldsm_chunk(l, ks))));
                EXPECT_EQ(Cfg::kstep_offset(b0, ks),
                          static_cast<std::uint32_t>(Cfg::smem_offset(origin + b_ldsm_row(l), b_ldsm_chunk(l, ks))));
            }
}

TEST(MmaLayout, IndexShortcutsMatchTheMaps) {
    check_index_shortcuts<MmaSyncTileConfig>();
    check_index_shortcuts<MmaSyncE4m3TileConfig>();
    check_index_shortcuts<TileConfig<128, 128, 64, 2, 2, 3>>();  // the 64-byte-row swizzle on the 16-bit path
}

TEST(MmaLayout, KernelReproducesTheProductF16) {
    using Cfg = MmaSyncTileConfig;
    // K * 2 % 16 == 0 runs cp.async (vec); the others the element-wise path.
    // K = 520 and 301 are 9 and 5 K tiles: the stage ring wraps.
    for (const Case& cs : {Case{1, 1, 8, true}, Case{1, 1, 1, false}, Case{17, 33, 19, false},
                           Case{130, 260, 72, true}, Case{129, 257, 100, false}, Case{200, 9, 136, true},
                           Case{40, 300, 7, false}, Case{128, 256, 64, true}, Case{40, 270, 520, true},
                           Case{33, 20, 301, false}})
        check_product<Cfg>(Kind::f16, cs, 11u + static_cast<std::uint32_t>(cs.k));
}

TEST(MmaLayout, KernelReproducesTheProductTf32) {
    using Cfg = MmaSyncTileConfig;
    for (const Case& cs : {Case{1, 1, 4, true}, Case{1, 1, 3, false}, Case{17, 33, 19, false},
                           Case{130, 260, 72, true}, Case{129, 257, 50, false}, Case{200, 9, 68, true},
                           Case{20, 40, 260, true}})
        check_product<Cfg>(Kind::tf32, cs, 23u + static_cast<std::uint32_t>(cs.k));
}

TEST(MmaLayout, KernelReproducesTheProductE4m3) {
    using Cfg = MmaSyncE4m3TileConfig;
    for (const Case& cs : {Case{1, 1, 16, true}, Case{1, 1, 1, false}, Case{17, 33, 19, false},
                           Case{130, 260, 144, true}, Case{129, 257, 100, false}, Case{200, 9, 272, true}})
        check_product<Cfg>(Kind::e4m3, cs, 37u + static_cast<std::uint32_t>(cs.k));
}

// The emulator and its pipeline model must be able to fail: a stage ring one
// short (tile t + kStages - 1 written over the tile still being read) and a
// wait that allows one group too many in flight are both caught.
TEST(MmaLayout, PipelineModelCatchesRacesAndEarlyReads) {
    {
        PipelineModel model(2);
        model.write(0, 0, true);
        model.commit();
        model.wait(0);
        model.barrier();
        model.read(0, 0);
        EXPECT_THROW(model.write(0, 2, true), std::runtime_error);  // same phase as the read
    }
    {
        PipelineModel model(4);
        for (int s = 0; s < 3; ++s) {
            model.write(s, s, true);
            model.commit();
        }
        model.wait(3);  // allows all three in flight
        model.barrier();
        EXPECT_THROW(model.read(0, 0), std::runtime_error);
    }
    {
        PipelineModel model(4);
        model.write(0, 0, false);  // a plain store: needs a barrier before others read it
        model.commit();
        EXPECT_THROW(model.read(0, 0), std::runtime_error);
    }
}

// A wrong fragment route must not pass: the same product through a B map
// whose n-tiles are swapped.
TEST(MmaLayout, EmulatedMmaDetectsASwappedFragment) {
    std::array<Regs4, kWarpSize> a{};
    std::array<Regs2, kWarpSize> b{}, b_swapped{};
    for (int l = 0; l < kWarpSize; ++l) {
        for (int r = 0; r < 4; ++r) a[l][r] = 0x00010001u * static_cast<std::uint32_t>(1 + (l + r) % 3);
        b[l] = {0x00010002u, 0x00030001u};
        b_swapped[l] = {b[l][1], b[l][0]};
    }
    std::array<std::array<std::int64_t, 4>, kWarpSize> c1{}, c2{};
    mma_emulated(Kind::f16, a, b, c1);
    mma_emulated(Kind::f16, a, b_swapped, c2);
    EXPECT_NE(c1, c2);
}

}  // namespace
