// The host half of the probe "wgmma_operand_layout" (src/cuda/probes/throughput_wgmma_operand_layout.cu):
// does the way an operand sits in shared memory (K-major or MN-major, in the 128-byte swizzle that TMA
// writes the library's stages in) or an N that ends inside a 64-column swizzle slab change the cycles
// of a wgmma m64nNk16 bf16?
//
// The question comes from the library's GEMM (docs/gemm.md): with B stored MN-major (layouts NN and
// TN) the 128 x 168 tiles ran at 0.61x-0.69x of cuBLASLt where K-major ones ran at 0.99x, and the
// narrow tail's 104-column tiles lost 8-10 % of the whole product where their K-major twins gained
// 2 %. Both N end inside a 64-column slab of an MN-major B (168 = 2 x 64 + 40, 104 = 64 + 40); 128,
// 192 and 256 do not. The probe times the instruction alone, its operands resident in shared memory,
// so that what the GEMMs lost can be split into the instruction's own cost and the loads'.
//
// Each operand is kDepth (64) elements of K deep, one 128-byte swizzle row of bf16:
//   K-major:  row i (of M or N) is one 128-byte row; 8 rows make a 1024-byte swizzle atom.
//   MN-major: slabs of 64 rows (M or N), each kDepth rows of K x 128 bytes (8 KB); in a slab, row k
//             holds the slab's 64 elements of K index k.
// Inside a 1024-byte atom, 16-byte chunk c of row r lands at chunk c ^ (r % 8) (the 128B swizzle:
// address bits [4,7) XOR bits [7,10) of a 1024-aligned tile).
//
// Host-tested by tests/host/test_probes_throughput.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rigel::probes::oplayout {

enum class Major { k, mn };

inline constexpr int kDepth = 64;                  // K of the staged operands (bf16: one 128-byte row)
inline constexpr int kKSteps = kDepth / 16;        // m64nNk16 instructions to cover it
inline constexpr int kRowBytes = 128;              // one swizzle row
inline constexpr int kSlabColumns = 64;            // bf16 elements in a 128-byte row
inline constexpr int kSlabBytes = kDepth * kRowBytes;  // one 64-row slab of an MN-major operand
inline constexpr int kM = 64;                      // A's rows: one m64 instruction

// The N swept, and the operand majors: every N the library issues on a bf16 tile (the narrow tails'
// 104 and 64, the 168/176/192 tiles, 128 and 256) and 40, the part of 104 and 168 past their whole
// slabs, alone (a partial slab, or a partial slab after whole ones); A and B each K- or MN-major (the
// library's four layouts: NT = A K, B K; NN = A K, B MN; TT = A MN, B K; TN = A MN, B MN).
inline constexpr std::array<int, 8> kNs{40, 64, 104, 128, 168, 176, 192, 256};

// Byte `col_byte` of 128-byte row `row` of a 1024-aligned tile in the 128B swizzle.
constexpr unsigned sw128_offset(int row, int col_byte) {
    return static_cast<unsigned>(row * kRowBytes + ((((col_byte >> 4) ^ row) & 7) << 4) + (col_byte & 15));
}

// Byte offset of bf16 element (i, k) of an operand: i its row of M (A) or N (B), k its index along K.
constexpr unsigned operand_offset(Major major, int i, int k) {
    return major == Major::k ? sw128_offset(i, 2 * k)
                             : static_cast<unsigned>((i / kSlabColumns) * kSlabBytes) +
                                   sw128_offset(k, 2 * (i % kSlabColumns));
}

// The bytes an operand of `rows` rows occupies: an MN-major one in whole slabs (as the library's
// stages hold an MN-major B in whole 64-column boxes), the rest of the last slab zero.
constexpr int operand_bytes(Major major, int rows) {
    return major == Major::k ? rows * kRowBytes : (rows + kSlabColumns - 1) / kSlabColumns * kSlabBytes;
}

// The descriptor fields the library's kernels set (cuda/hopper/warp_specialized.cuh, operand_desc and
// operand_k_step): the leading byte offset, the stride byte offset (between 8-row groups of M/N for a
// K-major operand, between 8-row groups of K for an MN-major one) and the start address's advance
// from one k16 step to the next.
struct DescFields {
    unsigned lbo, sbo, k_step_bytes;
};
constexpr DescFields desc_fields(Major major) {
    return major == Major::k ? DescFields{16, 8 * kRowBytes, 32} : DescFields{kSlabBytes, 8 * kRowBytes, 16 * kRowBytes};
}

// The shared-memory image of a rows x kDepth operand given row-major (m[i * kDepth + k]), as element
// bits (the caller encodes the values as bf16 first).
inline std::vector<std::uint8_t> operand_image(Major major, int rows, const std::vector<std::uint16_t>& bits) {
    if (rows < 8 || rows % 8 != 0 || bits.size() != static_cast<std::size_t>(rows) * kDepth)
        throw std::invalid_argument("operand_image: rows must be a positive multiple of 8 and bits rows x 64");
    std::vector<std::uint8_t> out(static_cast<std::size_t>(operand_bytes(major, rows)), 0);
    for (int i = 0; i < rows; ++i)
        for (int k = 0; k < kDepth; ++k) {
            const std::uint16_t b = bits[static_cast<std::size_t>(i) * kDepth + k];
            const unsigned o = operand_offset(major, i, k);
            out[o] = static_cast<std::uint8_t>(b);
            out[o + 1] = static_cast<std::uint8_t>(b >> 8);
        }
    return out;
}

// The checksum's weight of D(row, col): every thread adds its accumulators times their elements'
// weights, so that an element computed in the wrong place (a misread layout) changes the sum.
constexpr int weight(int row, int col) { return 1 + (row * 37 + col * 11) % 61; }

// The weighted sum of D = A B^T for A (kM x kDepth) and B (n x kDepth), both row-major: exact in a
// double for the probe's small integers.
inline double weighted_product(const std::vector<double>& a, const std::vector<double>& b, int n) {
    if (a.size() != static_cast<std::size_t>(kM) * kDepth || b.size() != static_cast<std::size_t>(n) * kDepth)
        throw std::invalid_argument("weighted_product: A is 64 x 64 and B n x 64");
    double total = 0;
    for (int r = 0; r < kM; ++r)
        for (int c = 0; c < n; ++c) {
            double d = 0;
            for (int k = 0; k < kDepth; ++k) d += a[static_cast<std::size_t>(r) * kDepth + k] * b[static_cast<std::size_t>(c) * kDepth + k];
            total += d * weight(r, c);
        }
    return total;
}

// A launch: each of kChains warpgroups of every CTA runs `iters` commit groups of 2 kKSteps wgmma
// (the kKSteps steps of K with B, then with B negated: they cancel), then one pass with B, so its
// accumulators end at A B (the verifying launch passes B for B negated: (2 iters + 1) A B). Every
// thread adds its iteration count (the cancelling run would otherwise pass a kernel that skipped
// its loop).
inline constexpr int kChains = 2;
constexpr long long wgmmas_per_chain(long long iters) { return 2LL * kKSteps * iters + kKSteps; }
inline double launch_checksum(long long ctas, double weighted_ab, long long iters, bool verify) {
    const double factor = verify ? 2.0 * static_cast<double>(iters) + 1.0 : 1.0;
    return static_cast<double>(ctas) * kChains * (factor * weighted_ab + 128.0 * static_cast<double>(iters));
}

// The SM's cycles a wgmma: both chains share the SM's tensor cores, so the slower chain's cycles over
// both chains' instructions.
inline double sm_cycles_per_wgmma(double slower_chain_cycles, long long iters) {
    return slower_chain_cycles / static_cast<double>(kChains * wgmmas_per_chain(iters));
}

// What a dense m64nNk16 costs at 2,048 bf16 multiply-adds a clock an SM, the rate at which the probe
// wgmma_corun timed m64n128k16 with no-swizzle K-major operands (64.02 cycles): N / 2 cycles.
constexpr double ideal_cycles(int n) { return n / 2.0; }

inline std::string major_name(Major m) { return m == Major::k ? "K-major" : "MN-major"; }

// The library's name for a layout with A and B of these majors (op(A) n: A K-major; op(B) t: B K-major).
inline std::string layout_name(Major a, Major b) {
    return std::string(a == Major::k ? "N" : "T") + (b == Major::k ? "T" : "N");
}

}  // namespace rigel::probes::oplayout
