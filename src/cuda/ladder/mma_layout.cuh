// The index maps of the mma.sync rungs (k21, k22, k23): which lane loads what
// into shared memory, where it lands (swizzle), which lane gives ldmatrix which
// row address, how ldmatrix registers become mma operands, and where each
// accumulator goes in C. They are constexpr functions that compile as CUDA and
// as plain C++, so tests/host/test_mma_layout.cpp runs these same maps on the
// CPU against the PTX ISA's fragment tables and a plain matrix product.
//
// Everything is in bytes. One mma.sync consumes a 32-byte slice of K for all
// three operand types (m16n8k16 on 2-byte f16/bf16, m16n8k8 on 4-byte tf32,
// m16n8k32 on 1-byte e4m3), and in bytes their fragments coincide (PTX ISA
// 9.7.14.5.7 m16n8k8 .tf32, 9.7.14.5.8 m16n8k16 .f16/.bf16, 9.7.14.5.10
// m16n8k32 .e4m3), with g = lane >> 2 ("groupID") and q = lane & 3
// ("threadID_in_group"):
//   A (16 x 32 bytes, row-major): register r holds bytes [16*(r>>1) + 4q, +4)
//     of row g + 8*(r&1).
//   B (N x K, 8 x 32 bytes, K contiguous per n): register r holds bytes
//     [16*r + 4q, +4) of column n = g.
//   C (16 x 8 f32): c_i is row g + 8*(i>>1), column 2q + (i&1).
// ldmatrix.m8n8.x4.b16 (PTX ISA, "ldmatrix"): lane 8j + r gives the
// address of row r (16 bytes) of matrix j; lane l receives, in register j,
// bytes [4*(l&3), +4) of row l>>2 of matrix j. Read with 4-byte granularity
// this is exactly the A/B fragment shape above, for any element size: an x4
// load of a 16 x 32-byte A block (matrices: rows 0-7 / 8-15 x bytes 0-15 /
// 16-31, in that order: rows fastest) gives a0..a3, and an x4 load of a
// 16 x 32-byte block of B (n 0-7 bytes 0-15, n 0-7 bytes 16-31, n 8-15 bytes
// 0-15, n 8-15 bytes 16-31) gives {b0, b1} of two n8 tiles. No .trans is
// needed because B is stored N x K (BLayout::n_by_k).
#pragma once
#include <cstdint>

#include "cuda/host_device.hpp"

namespace rigel::mma {

constexpr int kWarpSize = 32;
constexpr int kChunkBytes = 16;       // one cp.async, one ldmatrix row
constexpr int kMmaKBytes = 32;        // the K slice of one mma.sync, in bytes
constexpr int kMmaM = 16;
constexpr int kMmaN = 8;

RIGEL_HOST_DEVICE constexpr int lane_group(int lane) { return lane >> 2; }  // PTX "groupID"
RIGEL_HOST_DEVICE constexpr int lane_quad(int lane) { return lane & 3; }    // PTX "threadID_in_group"

// Accumulator c_i (i = 0..3) of an m16n8 f32 tile: PTX ISA 9.7.14.5.7/8/10
// "row = groupID for c0, c1; groupID + 8 for c2, c3; col = threadID_in_group * 2 + (i & 0x1)".
RIGEL_HOST_DEVICE constexpr int acc_row(int lane, int i) { return lane_group(lane) + 8 * (i >> 1); }
RIGEL_HOST_DEVICE constexpr int acc_col(int lane, int i) { return 2 * lane_quad(lane) + (i & 1); }

// ldmatrix x4 for A: lane l points at row (l & 15) of the 16-row block and at
// 16-byte chunk (l >> 4) of the 32-byte K slice, so matrix j = l >> 3 is
// (rows 0-7 | 8-15) x (bytes 0-15 | 16-31) with rows fastest: registers 0..3
// are then a0..a3 of the mma (see the header comment).
RIGEL_HOST_DEVICE constexpr int a_ldsm_row(int lane) { return lane & 15; }
RIGEL_HOST_DEVICE constexpr int a_ldsm_chunk(int lane, int kstep) { return 2 * kstep + (lane >> 4); }

// ldmatrix x4 for B (N x K): lane l points at n = (l & 7) + 8 * (l >> 4) of a
// 16-column pair of n8 tiles and at chunk (l >> 3) & 1 of the K slice, so
// matrix j covers n-tile (j >> 1) and chunk (j & 1): register j is b[j & 1]
// of n8 tile 2p + (j >> 1).
RIGEL_HOST_DEVICE constexpr int b_ldsm_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
RIGEL_HOST_DEVICE constexpr int b_ldsm_chunk(int lane, int kstep) { return 2 * kstep + ((lane >> 3) & 1); }
RIGEL_HOST_DEVICE constexpr int b_x4_tile(int reg) { return reg >> 1; }
RIGEL_HOST_DEVICE constexpr int b_x4_half(int reg) { return reg & 1; }

// Output tiles in groups of `group` tile rows, column by column inside a group,
// so that blocks running together share rows of A and columns of B in L2.
// A bijection of [0, tiles_m * tiles_n) onto the tiles (the host test checks).
struct TileCoord {
    int m, n;
};
RIGEL_HOST_DEVICE constexpr TileCoord tile_coord(int tile, int tiles_m, int tiles_n, int group) {
    const int per_group = group * tiles_n;
    const int g = tile / per_group;
    const int first_m = g * group;
    const int rows = tiles_m - first_m < group ? tiles_m - first_m : group;
    const int in = tile - g * per_group;
    return {first_m + in % rows, in / rows};
}

// A block tile configuration of the multistage mma.sync kernel. Shared memory
// per stage: A as kBM rows and B as kBN rows of kRowBytes bytes of K each.
template <int BM, int BN, int RowBytes, int WarpsM, int WarpsN, int Stages>
struct TileConfig {
    static constexpr int kBM = BM;
    static constexpr int kBN = BN;
    static constexpr int kRowBytes = RowBytes;
    static constexpr int kChunks = RowBytes / kChunkBytes;  // 16-byte chunks per row
    static constexpr int kWarpsM = WarpsM;
    static constexpr int kWarpsN = WarpsN;
    static constexpr int kWarps = WarpsM * WarpsN;
    static constexpr int kThreads = kWarps * kWarpSize;
    static constexpr int kWarpM = BM / WarpsM;  // warp tile
    static constexpr int kWarpN = BN / WarpsN;
    static constexpr int kMTiles = kWarpM / kMmaM;  // m16 tiles per warp
    static constexpr int kNTiles = kWarpN / kMmaN;  // n8 tiles per warp
    static constexpr int kKSteps = RowBytes / kMmaKBytes;
    static constexpr int kStages = Stages;
    static constexpr int kATileBytes = BM * RowBytes;
    static constexpr int kBTileBytes = BN * RowBytes;
    static constexpr int kStageBytes = kATileBytes + kBTileBytes;
    static constexpr int kSmemBytes = Stages * kStageBytes;
    static constexpr int kAChunksPerThread = BM * kChunks / kThreads;
    static constexpr int kBChunksPerThread = BN * kChunks / kThreads;

    static_assert(RowBytes == 64 || RowBytes == 128, "the swizzle below is for 64- or 128-byte rows");
    static_assert(BM % (WarpsM * kMmaM) == 0 && BN % (WarpsN * 2 * kMmaN) == 0,
                  "warp tiles are whole m16 tiles and whole n16 pairs (one ldmatrix x4 of B)");
    static_assert(kKSteps % 2 == 0, "fragments are double-buffered by k-step parity");
    static_assert((BM * kChunks) % kThreads == 0 && (BN * kChunks) % kThreads == 0,
                  "every thread copies the same number of chunks");
    static_assert(Stages >= 2, "a pipeline needs two stages at least");
    static_assert(BM % 8 == 0 && BN % 8 == 0, "the swizzle repeats every 8 rows");

    // Byte offset of 16-byte chunk `chunk` of row `row` inside a tile. The chunk
    // index is XORed with a function of the row so that the 8 row addresses of
    // one ldmatrix matrix (8 consecutive rows, one logical chunk) and the 8
    // chunks of 8 consecutive threads' cp.async land in 8 different 16-byte
    // bank groups: no bank conflicts. 128-byte rows: chunk ^ (row % 8).
    // 64-byte rows hold two rows per 128-byte line: chunk ^ ((row / 2) % 4).
    RIGEL_HOST_DEVICE static constexpr int swizzle(int row) {
        return kChunks == 8 ? (row & 7) : ((row >> 1) & 3);
    }
    RIGEL_HOST_DEVICE static constexpr int smem_offset(int row, int chunk) {
        return row * RowBytes + ((chunk ^ swizzle(row)) * kChunkBytes);
    }

    // ldmatrix offsets of k-step ks from those of step 0: the lane's chunk is
    // 2 ks + c (c = 0 or 1), which is (2 ks) ^ c, and XOR commutes with the
    // swizzle's XOR, so the offset changes by XOR with ks * 32 bytes. That is
    // below kRowBytes, so the row part (and any multiple of kRowBytes added
    // to it, such as a warp origin) is left alone. Host-tested.
    RIGEL_HOST_DEVICE static constexpr std::uint32_t kstep_offset(std::uint32_t offset0, int ks) {
        return offset0 ^ static_cast<std::uint32_t>(ks * kMmaKBytes);
    }

    // The loader: the i-th chunk a thread copies, of A (i < kAChunksPerThread)
    // or of B. Consecutive threads take consecutive chunks of a row, so one
    // copy instruction of a warp reads 4 whole 128-byte row segments (8 of 64
    // bytes when the rows are 64 bytes).
    RIGEL_HOST_DEVICE static constexpr int load_row(int tid, int i) { return (tid + i * kThreads) / kChunks; }
    RIGEL_HOST_DEVICE static constexpr int load_chunk(int tid, int i) { return (tid + i * kThreads) % kChunks; }
    // A thread keeps one chunk column, and its i-th row is kLoadRowStep * i
    // rows below its first: a whole number of swizzle periods, so the kernel
    // places copy i at smem_offset(first row, chunk) + i * kLoadRowStep rows.
    static constexpr int kLoadRowStep = kThreads / kChunks;
    static_assert(kThreads % kChunks == 0 && kLoadRowStep % 8 == 0, "copies step whole swizzle periods");

    // Warp tile origin inside the block tile: warps laid out WarpsM x WarpsN,
    // M fastest.
    RIGEL_HOST_DEVICE static constexpr int warp_m0(int warp) { return (warp % WarpsM) * kWarpM; }
    RIGEL_HOST_DEVICE static constexpr int warp_n0(int warp) { return (warp / WarpsM) * kWarpN; }

    // The ring of stages: K tile t (t >= 0) lives in stage t % kStages.
    RIGEL_HOST_DEVICE static constexpr int stage_of(int ktile) {
        return static_cast<int>(static_cast<unsigned>(ktile) % static_cast<unsigned>(Stages));
    }
};

// k21 and k22: 128 x 256 block tile, 128 bytes of K per stage (K64 for 16-bit
// types, K32 for tf32: four mma k-steps per barrier), 8 warps of 64 x 64, 4
// stages (192 KB of shared memory, one block per SM as the registers allow).
using MmaSyncTileConfig = TileConfig<128, 256, 128, 2, 4, 4>;
// k23: on sm_90 the e4m3 mma.sync is unpacked to f16 in registers, which costs
// the 64 x 64 warp tile its last registers (it spills): 64 x 32 warp tiles.
using MmaSyncE4m3TileConfig = TileConfig<128, 128, 64, 2, 4, 4>;

}  // namespace rigel::mma
