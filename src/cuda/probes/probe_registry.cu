// All probes, end to end; each part keeps its own table beside its kernels.
#include <vector>

#include "cuda/probes/probe_parts.hpp"

namespace rigel {

std::span<const Probe> cuda_probes() {
    static const std::vector<Probe> all = [] {
        std::vector<Probe> v;
        // The alignment probe runs last: a case that faults the device ends
        // the context for everything after it.
        for (auto part : {cuda::format_probes(), cuda::layout_probes(), cuda::numerics_probes(),
                          cuda::throughput_probes(), cuda::alignment_probes()})
            v.insert(v.end(), part.begin(), part.end());
        return v;
    }();
    return all;
}

}  // namespace rigel
