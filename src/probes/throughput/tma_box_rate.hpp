// The host half of the probe "tma_box_rate" (src/cuda/probes/throughput_tma_box_rate.cu): does a
// TMA load of the 128B-swizzled boxes a GEMM's producer issues slow down when the boxes start between
// the 128-byte lines of the contiguous dimension?
//
// The question comes from the library's narrow tail with B stored MN-major (docs/gemm.md, "The narrow
// tail"): its 104-column tiles start at columns that are no multiple of 64 (3688, 3792, ... at
// 4096^3), so each row of each 64-column box of B spans two 128-byte lines, where a wide tile's boxes
// sit on the lines; the product lost 8-10 % where its K-major twin gained 2 %. The probe wgmma_operand_layout
// times the instruction; this one times the loads alone: one CTA an SM, one thread walking K in steps of
// 64 as a producer does, each step a 128-wide tile's B (two 64-column boxes of an MN-major matrix, or
// one 128-row box of a K-major one: 16 KB), into a ring of kStages stages, nothing computed.
//
// Host-tested by tests/host/test_probes_throughput.cpp.
#pragma once
#include <array>
#include <cstdint>

#include "probes/throughput/wgmma_operand_layout.hpp"

namespace rigel::probes::tmarate {

inline constexpr int kDim = 4224;            // the bf16 matrix: kDim x kDim
inline constexpr int kStepBytes = 16384;     // one step: 128 columns (or rows) x 64 of K, bf16
inline constexpr int kBoxBytes = 8192;       // one 64 x 64 box
inline constexpr int kStages = 8;
inline constexpr int kKSteps = 64;           // K = 4096 in steps of 64
inline constexpr int kTileCols = 128;        // CTA c takes the tile column c mod kTileColumns
inline constexpr int kTileColumns = 16;      // 2048 columns of them; the boxes stay inside kDim
inline constexpr int kThreads = 128;

struct Case {
    const char* name;
    bool mn_major;  // two 64-column boxes of rows of K (MN-major) or one 128-row box (K-major)
    int offset;     // columns past the tile column's start at which the boxes start (MN-major)
};
inline constexpr std::array<Case, 4> kCases{{
    {"K-major, one 128-row box", false, 0},
    {"MN-major, two 64-column boxes on the 128-byte lines", true, 0},
    {"MN-major, two 64-column boxes 16 bytes past the lines", true, 8},
    {"MN-major, two 64-column boxes 80 bytes past the lines (the narrow tail's 3688)", true, 40},
}};

// The matrix's element (row, col): a small integer, exact in bf16.
constexpr int value(int row, int col) { return (row * 5 + col * 3) % 251 - 125; }

// Where element i of a step lands in its 16 KB stage, and which element of the matrix it is, for the
// boxes of tile column `col0` (their first column, offset included) and K step `k0`: MN-major, i = k *
// 128 + n (n across both boxes) at the MN-major image's offset (the second box one slab on); K-major, i
// = n * 64 + k at the K-major image's.
struct Element {
    unsigned offset;
    int row, col;
};
constexpr Element step_element(bool mn_major, int i, int col0, int k0) {
    if (mn_major) {
        const int k = i / 128, n = i % 128;
        return {oplayout::operand_offset(oplayout::Major::mn, n, k), k0 + k, col0 + n};
    }
    const int n = i / 64, k = i % 64;
    return {oplayout::operand_offset(oplayout::Major::k, n, k), col0 + n, k0 + k};
}

// The first column of CTA `cta`'s boxes.
constexpr int first_col(int cta, int offset) { return (cta % kTileColumns) * kTileCols + offset; }

// The bytes of the matrix the walks read, offsets included (every CTA's tile column over K = 4096): about
// 17 MB, so that they stay in L2 even where each of its two partitions keeps its own copy of what its
// SMs read.
constexpr double footprint_bytes(int offset) {
    return static_cast<double>(kKSteps) * 64 * (kTileColumns * kTileCols + offset) * 2;
}

// Bytes a CTA loads in a launch of `passes` walks over K.
constexpr double cta_bytes(long long passes) { return static_cast<double>(passes) * kKSteps * kStepBytes; }

}  // namespace rigel::probes::tmarate
