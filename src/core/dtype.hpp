// The operand types rigel knows, and the facts about each that the rest of the
// code needs (storage size, which type the output is kept in, accumulator
// precision used by the verification gate).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace rigel {

enum class DType : std::uint8_t { f64, f32, tf32, f16, bf16, e4m3, e5m2, e2m1, i8, mxfp4 };

// Storage of the 4-bit types, as the runner uploads them (one buffer per
// operand, so GemmProblem's a and b pointers suffice):
// e2m1: the elements of the row-major matrix, two per byte, element i in the
//   low nibble of byte i / 2 when i is even, in the high nibble when odd; no
//   padding, so with an odd row length a row may start in the middle of a byte.
// mxfp4 (OCP MX v1.0): e2m1 elements packed exactly as above, then one e8m0
//   scale byte per block of 32 consecutive elements along K (the last block of
//   a line is partial when K % 32 != 0). The scales form the element matrix
//   shrunk by ceil(K/32) along K, row-major in the same orientation: for
//   A (M x K) and for B as N x K, ceil(K/32) bytes per row, at byte offset
//   ceil(rows * K / 2) of the buffer; for B as K x N, ceil(K/32) rows of N
//   bytes. Element (r, k) is worth e2m1(nibble) * 2^(scale - 127).

// What a GEMM on this operand type writes: fp64 for fp64, int32 for int8,
// fp32 for everything else (tensor-core paths accumulate into fp32).
enum class OutType : std::uint8_t { f64, f32, i32 };

struct DTypeInfo {
    DType type;
    std::string_view name;        // as written on the command line and in CSVs
    int storage_bits;             // bits per element in device memory
    OutType out;
    double unit_roundoff_accum;   // u of the accumulator the verification gate assumes
    double elem_tol_cap;          // the per-element tolerance never exceeds this
    // The verification gate's likely-error rule (element_tolerance in
    // reference.hpp): max(tol_floor_u * u, tol_sqrt_k * sqrt(K) * u), never
    // above the worst-case rule min(elem_tol_cap, max(16 u, 2 K u)).
    double tol_sqrt_k;
    double tol_floor_u;
};

std::span<const DTypeInfo> dtype_table();
const DTypeInfo& info(DType t);
std::string_view name(DType t);
std::optional<DType> parse_dtype(std::string_view s);

// Bytes needed to store n elements of t (e2m1 packs two per byte). For mxfp4
// this is the element nibbles only; operand_bytes adds the scales.
std::size_t storage_bytes(DType t, std::size_t n);
// Bytes of a whole operand with `lines` lines of k elements along K (A: M x K,
// B: N x K or K x N): storage_bytes of the elements, plus, for mxfp4, one scale
// byte per 32-element block of every line.
std::size_t operand_bytes(DType t, std::size_t lines, std::size_t k);
// The MX block: elements along K that share one scale.
inline constexpr std::size_t kMxBlock = 32;
std::size_t out_bytes(DType t, std::size_t n);

}  // namespace rigel
