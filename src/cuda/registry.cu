// The CUDA half of the ladder: the tables of each part, in climbing order.
// Each part keeps its own table next to its kernels (simt, tensor, hopper,
// vendor); this file only puts them end to end.
#include <vector>

#include "cuda/registry_parts.hpp"

namespace rigel {

std::span<const Rung> cuda_rungs() {
    static const std::vector<Rung> all = [] {
        std::vector<Rung> v;
        for (auto part : {cuda::simt_rungs(), cuda::tensor_rungs(), cuda::hopper_rungs(), cuda::vendor_rungs()})
            v.insert(v.end(), part.begin(), part.end());
        return v;
    }();
    return all;
}

}  // namespace rigel
