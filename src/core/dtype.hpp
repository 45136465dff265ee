// The operand types rigel knows, and the facts about each that the rest of the
// code needs (storage size, which type the output is kept in, accumulator
// precision used by the verification gate).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace rigel {

enum class DType : std::uint8_t { f64, f32, tf32, f16, bf16, e4m3, e5m2, e2m1, i8 };

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
};

std::span<const DTypeInfo> dtype_table();
const DTypeInfo& info(DType t);
std::string_view name(DType t);
std::optional<DType> parse_dtype(std::string_view s);

// Bytes needed to store n elements of t (e2m1 packs two per byte).
std::size_t storage_bytes(DType t, std::size_t n);
std::size_t out_bytes(DType t, std::size_t n);

}  // namespace rigel
