// The format probes' table: conversions at the edges of each narrow format,
// and what an fp8 GEMM writes when its output overflows.
#include <vector>

#include "cuda/probes/probe_parts.hpp"

namespace rigel::cuda {

std::vector<Finding> run_cvt_saturation(const ProbeContext& ctx);     // formats_cvt.cu
std::vector<Finding> run_fp8_gemm_overflow(const ProbeContext& ctx);  // formats_fp8_overflow.cu

namespace {

constexpr Probe kFormatProbes[] = {
    {"cvt_saturation",
     "What do the conversion instructions do at the edges of each narrow format (overflow, ties, subnormals, NaN), "
     "bit for bit?",
     run_cvt_saturation},
    {"fp8_gemm_overflow",
     "What does an fp8 GEMM write when its result overflows the output type: the max finite value, inf or NaN?",
     run_fp8_gemm_overflow},
};

}  // namespace

std::span<const Probe> format_probes() { return kFormatProbes; }

}  // namespace rigel::cuda
