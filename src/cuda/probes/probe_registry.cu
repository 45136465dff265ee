// All probes, end to end; each part keeps its own table beside its kernels.
#include <vector>

#include "cuda/probes/probe_parts.hpp"

namespace rigel {

std::span<const Probe> cuda_probes() {
    static const std::vector<Probe> all = [] {
        std::vector<Probe> v;
        for (auto part : {cuda::format_probes(), cuda::layout_probes(), cuda::numerics_probes(),
                          cuda::throughput_probes()})
            v.insert(v.end(), part.begin(), part.end());
        return v;
    }();
    return all;
}

}  // namespace rigel
