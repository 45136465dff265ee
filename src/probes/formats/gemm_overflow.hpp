// The host half of the fp8_gemm_overflow probe: what an fp8 GEMM writes when
// its result does not fit the output type. Each output of a small GEMM is a
// crafted sum of up to 8 fp8 terms (A holds ones in a block pattern, B the
// terms), so that its exact value is known and lands on the boundaries that
// matter (the max, the rounding midpoint just past it, far beyond); the
// device half (src/cuda/probes/formats_fp8_overflow.cu) runs it through cuBLASLt and
// copies D back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "probes/probe.hpp"

namespace rigel {

// D and C take e4m3, e5m2, f16, bf16 or f32 here; the functions below refuse
// any other DType with std::invalid_argument.
// Bytes of one element of D or C.
int gemm_out_bytes(DType t);

struct GemmOverflowCase {
    std::string label;          // "e4m3 x e4m3 -> e4m3"
    bool b_e5m2 = false;        // B's type: e5m2, else e4m3 (A is always e4m3)
    DType d_type = DType::e4m3;
    DType c_type = DType::bf16;  // what cuBLASLt requires beside D
    float alpha = 1;            // a power of two: alpha * sum stays exact
    int m = 16, n = 16, k = 128;
    std::vector<std::uint8_t> a;  // M x K row-major (cuBLASLt: K x M column-major, op T)
    std::vector<std::uint8_t> b;  // N x K row-major (cuBLASLt: K x N column-major, op N)
    std::vector<double> sums;     // per output, index i + j*M (D is column-major): the exact sum of its terms
    std::vector<int> target_outputs;  // outputs carrying the crafted boundary sums, in report order

    double exact(int idx) const { return static_cast<double>(alpha) * sums[static_cast<std::size_t>(idx)]; }
};

// Terms per output (K = kTerms * M).
inline constexpr int kGemmTerms = 8;

// The five cases: D in e4m3, e5m2 (with B in e5m2), f16, bf16 and f32; the
// outputs that carry no boundary value hold seeded random sums.
std::vector<GemmOverflowCase> make_gemm_overflow_cases(std::uint64_t seed);

// The fp8 terms whose sum is `target` (at most kGemmTerms of them, from the
// largest down, backtracking), or an empty vector when none are found.
std::vector<std::uint8_t> decompose_sum(double target, bool e5m2);

struct GemmOverflowDevice {
    bool ran = false;
    std::string unsupported;          // non-empty: cuBLASLt refused the combination (its status)
    std::vector<std::uint8_t> d;      // raw D, column-major M x N
    bool amax_requested = false;
    bool amax_supported = false;
    float amax = 0;                   // CUBLASLT_MATMUL_DESC_AMAX_D_POINTER's result
    std::string amax_status;          // why not, when requested and refused
    std::string detail;               // algorithm, workspace, fast accumulation
};

// The raw bits and the value of output `idx` of D as written by the device
// (little-endian bytes, as cudaMemcpy returns them on x86).
std::uint32_t device_code(const GemmOverflowCase& c, const GemmOverflowDevice& d, int idx);
double device_value(const GemmOverflowCase& c, const GemmOverflowDevice& d, int idx);
// The exact value rounded to D by the documented conversion (round to nearest
// even; overflow to inf, or NaN for e4m3), and with saturation to MAX_NORM.
double rounded_nonsaturating(DType t, double exact);
double rounded_saturating(DType t, double exact);

std::vector<Finding> analyze_gemm_overflow(const std::vector<GemmOverflowCase>& cases,
                                           const std::vector<GemmOverflowDevice>& device);

}  // namespace rigel
