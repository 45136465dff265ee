// The simt rungs' registry table (filled as the rungs land).
#include "cuda/registry_parts.hpp"

namespace rigel::cuda {

std::span<const Rung> simt_rungs() { return {}; }

}  // namespace rigel::cuda
