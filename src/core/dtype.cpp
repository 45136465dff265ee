// The operand-type table. The verification gate reads its tolerances here, and
// nowhere else.
#include "core/dtype.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rigel {
namespace {

// unit_roundoff_accum: fp32 accumulation (2^-24) for every tensor-core type;
// fp8 gets 2^-14 because Hopper's fp8 path without promotion keeps only about
// 14 fraction bits in its accumulator (DeepSeek-V3 report, section 3.3.2), and
// rigel checks its own fp8 rungs and cuBLASLt's fast accumulation against it.
// e2m1 and mxfp4 run on fp32 accumulation too (rigel's fp4 rung unpacks them
// to f16 for mma.sync; mxfp4's power-of-two block scales multiply each block's
// exact partial sum exactly, before one rounded add).
// elem_tol_cap bounds the worst-case K*u growth so that a wrong result (error of
// the order of sum|a||b|) can never pass.
//
// The gate holds each element to a likely bound, not the worst case 2 K u,
// which grows so fast that a wrong result passes (an f32 rung rounding its
// inputs to tf32 at K = 1024, one K term dropped at K = 8192):
//   tol_sqrt_k 8: when the rounding errors behave as independent, mean-zero
//     terms of at most u each, the error of a K-term sum exceeds
//     8 sqrt(K) u sum|a b| with probability below 2 K exp(-32), under 1e-9
//     for K up to 2^16 (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019).
//     Round to nearest gives such errors; the tensor cores' truncation toward
//     zero (the 16-bit and tf32 paths) follows the sign of the running sum, a
//     random walk with the recipes' operands, all symmetric about zero.
//     Measured: at most 0.32 sqrt(K) u over every ladder row the H200
//     recorded, at most 0.77 sqrt(K) u in rigel's bit-exact tensor-core models
//     and an fp32 FMA chain on the hostile recipe
//     (src/probes/numerics/emulate.hpp).
//   fp8 (tol_floor_u 64, tol_sqrt_k 1): the fp8 wgmma cuts its 32 products and
//     the running sum to 13 bits below the largest of them. Cuts relative to a
//     running sum of size sqrt(k), against sum|a b| of size k, leave an error
//     that does not fall with K: at most 9 u over the H200's fp8 rows, 16 u in
//     the model on the hostile recipe, which the floor holds four times over;
//     the running sum's truncation adds a part that grows as sqrt(K).
// Promoted fp8 rungs are judged by the same rule, which their far smaller
// errors meet with room.
constexpr std::array<DTypeInfo, 10> kTable{{
    {DType::f64, "f64", 64, OutType::f64, 0x1p-53, 1e-10, 8.0, 16.0},
    {DType::f32, "f32", 32, OutType::f32, 0x1p-24, 1e-3, 8.0, 16.0},
    {DType::tf32, "tf32", 32, OutType::f32, 0x1p-24, 1e-3, 8.0, 16.0},
    {DType::f16, "f16", 16, OutType::f32, 0x1p-24, 1e-3, 8.0, 16.0},
    {DType::bf16, "bf16", 16, OutType::f32, 0x1p-24, 1e-3, 8.0, 16.0},
    {DType::e4m3, "e4m3", 8, OutType::f32, 0x1p-14, 2e-2, 1.0, 64.0},
    {DType::e5m2, "e5m2", 8, OutType::f32, 0x1p-14, 2e-2, 1.0, 64.0},
    {DType::e2m1, "e2m1", 4, OutType::f32, 0x1p-24, 1e-3, 8.0, 16.0},
    {DType::mxfp4, "mxfp4", 4, OutType::f32, 0x1p-24, 1e-3, 8.0, 16.0},
    {DType::i8, "i8", 8, OutType::i32, 0.0, 0.0, 0.0, 0.0},
}};

}  // namespace

std::span<const DTypeInfo> dtype_table() { return kTable; }

const DTypeInfo& info(DType t) {
    for (const auto& d : kTable)
        if (d.type == t) return d;
    throw std::logic_error("dtype missing from the table");
}

std::string_view name(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(std::string_view s) {
    for (const auto& d : kTable)
        if (d.name == s) return d.type;
    return std::nullopt;
}

std::size_t storage_bytes(DType t, std::size_t n) {
    return (n * static_cast<std::size_t>(info(t).storage_bits) + 7) / 8;
}

std::size_t operand_bytes(DType t, std::size_t lines, std::size_t k) {
    const std::size_t elements = storage_bytes(t, lines * k);
    if (t != DType::mxfp4) return elements;
    return elements + lines * ((k + kMxBlock - 1) / kMxBlock);
}

std::size_t out_bytes(DType t, std::size_t n) {
    return n * (info(t).out == OutType::f64 ? 8 : 4);
}

}  // namespace rigel
