// The release list of device_cache.hpp.
#include "cuda/device_cache.hpp"

#include <algorithm>
#include <vector>

namespace rigel::cuda {
namespace {

std::vector<ReleaseFn>& releases() {
    static std::vector<ReleaseFn> fns;  // host memory only: freeing it at exit is harmless
    return fns;
}

}  // namespace

void register_release(ReleaseFn release) {
    auto& fns = releases();
    if (std::find(fns.begin(), fns.end(), release) == fns.end()) fns.push_back(release);
}

void release_device_caches() noexcept {
    std::vector<ReleaseFn> fns;
    fns.swap(releases());
    for (ReleaseFn f : fns) f();
}

}  // namespace rigel::cuda
