// RIGEL_HOST_DEVICE marks the constexpr helpers that kernels and host tests
// share: __host__ __device__ under nvcc, nothing in a plain C++ build.
#pragma once

#if defined(__CUDACC__)
#define RIGEL_HOST_DEVICE __host__ __device__
#else
#define RIGEL_HOST_DEVICE
#endif
