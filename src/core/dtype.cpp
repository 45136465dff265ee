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
constexpr std::array<DTypeInfo, 10> kTable{{
    {DType::f64, "f64", 64, OutType::f64, 0x1p-53, 1e-10},
    {DType::f32, "f32", 32, OutType::f32, 0x1p-24, 1e-3},
    {DType::tf32, "tf32", 32, OutType::f32, 0x1p-24, 1e-3},
    {DType::f16, "f16", 16, OutType::f32, 0x1p-24, 1e-3},
    {DType::bf16, "bf16", 16, OutType::f32, 0x1p-24, 1e-3},
    {DType::e4m3, "e4m3", 8, OutType::f32, 0x1p-14, 2e-2},
    {DType::e5m2, "e5m2", 8, OutType::f32, 0x1p-14, 2e-2},
    {DType::e2m1, "e2m1", 4, OutType::f32, 0x1p-24, 1e-3},
    {DType::mxfp4, "mxfp4", 4, OutType::f32, 0x1p-24, 1e-3},
    {DType::i8, "i8", 8, OutType::i32, 0.0, 0.0},
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
