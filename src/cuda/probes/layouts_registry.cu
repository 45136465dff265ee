// The layout probes' table.
#include "cuda/probes/probe_parts.hpp"

namespace rigel::probes {
std::vector<Finding> run_mma_fragment_layout(const ProbeContext& ctx);  // layouts_fragment_layout.cu
}

namespace rigel::cuda {

std::span<const Probe> layout_probes() {
    static const Probe table[] = {
        {"mma_fragment_layout",
         "Which lane and register of mma.sync (f16, bf16, tf32, e4m3, s8, f64) and of wgmma holds which matrix "
         "element?",
         &probes::run_mma_fragment_layout},
    };
    return table;
}

}  // namespace rigel::cuda
