// The vendor rungs' registry table (filled as the rungs land).
#include "cuda/registry_parts.hpp"

namespace rigel::cuda {

std::span<const Rung> vendor_rungs() { return {}; }

}  // namespace rigel::cuda
