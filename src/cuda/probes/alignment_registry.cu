// The alignment probe's table.
#include "cuda/probes/probe_parts.hpp"

namespace rigel::probes {
std::vector<Finding> run_alignment(const ProbeContext& ctx);  // alignment_rules.cu
}

namespace rigel::cuda {

std::span<const Probe> alignment_probes() {
    static const Probe table[] = {
        {"alignment",
         "Which base offsets, strides, box sizes, leading dimensions and shapes do TMA tensor maps, cuBLASLt's fp8 "
         "GEMM and rigel's Hopper rungs accept, and is a violation refused with an error or silently wrong?",
         &probes::run_alignment},
    };
    return table;
}

}  // namespace rigel::cuda
