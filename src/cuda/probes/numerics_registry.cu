// The numerics probes' table.
#include "cuda/probes/probe_parts.hpp"

namespace rigel::probes {
std::vector<Finding> run_accumulation(const ProbeContext& ctx);  // numerics_accumulation.cu
}

namespace rigel::cuda {

std::span<const Probe> numerics_probes() {
    static const Probe table[] = {
        {"accumulation",
         "how mma.sync and wgmma add: exact products, subnormals, fused block size, bits kept in alignment, "
         "rounding, C pass-through, monotonicity",
         &probes::run_accumulation},
    };
    return table;
}

}  // namespace rigel::cuda
