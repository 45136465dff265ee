// The numerics probes' table.
#include "cuda/probes/probe_parts.hpp"

namespace rigel::probes {
std::vector<Finding> run_accumulation(const ProbeContext& ctx);  // numerics_accumulation.cu
}

namespace rigel::cuda {

std::span<const Probe> numerics_probes() {
    static const Probe table[] = {
        {"accumulation",
         "How do mma.sync and wgmma add: are products exact and subnormals kept, how many products share one "
         "alignment step, how many bits survive it, how is the result rounded, is the sum monotone?",
         &probes::run_accumulation},
    };
    return table;
}

}  // namespace rigel::cuda
