// The tensor rungs' registry table (filled as the rungs land).
#include "cuda/registry_parts.hpp"

namespace rigel::cuda {

std::span<const Rung> tensor_rungs() { return {}; }

}  // namespace rigel::cuda
