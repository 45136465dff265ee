// The parts of the CUDA registry; each is defined beside its kernels.
#pragma once
#include <span>

#include "ladder/rung.hpp"

namespace rigel::cuda {

std::span<const Rung> simt_rungs();    // src/cuda/ladder/simt_registry.cu
std::span<const Rung> tensor_rungs();  // src/cuda/ladder/tensor_registry.cu
std::span<const Rung> hopper_rungs();  // src/cuda/hopper/hopper_registry.cu
std::span<const Rung> vendor_rungs();  // src/cuda/vendor/cublas_rungs.cu

}  // namespace rigel::cuda
