// The SIMT (CUDA-core) rungs: their entry points, the shape check they share,
// and the few device helpers more than one of them uses. The registry table is
// in simt_registry.cu; each rung's kernel is in its own kNN_*.cu file.
#pragma once
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ladder/rung.hpp"

namespace rigel::cuda {

void k10_naive(const GemmProblem& p);
void k11_coalesced(const GemmProblem& p);
void k12_smem_tiled(const GemmProblem& p);
void k13_regblock_1d(const GemmProblem& p);
void k14_regblock_2d(const GemmProblem& p);
void k15_vectorized(const GemmProblem& p);
void k16_warptiled(const GemmProblem& p);
void k17_tiled_half(const GemmProblem& p);

// Shape checks: empty when the rung takes the problem (all of them take any
// M, N, K >= 1; they refuse only a grid larger than CUDA allows).
std::string k10_naive_check(const GemmProblem& p);
std::string k11_coalesced_check(const GemmProblem& p);
std::string k12_smem_tiled_check(const GemmProblem& p);
std::string k13_regblock_1d_check(const GemmProblem& p);
std::string k14_regblock_2d_check(const GemmProblem& p);
std::string k15_vectorized_check(const GemmProblem& p);
std::string k16_warptiled_check(const GemmProblem& p);
std::string k17_tiled_half_check(const GemmProblem& p);

namespace simt {

// ceil(a / b) for a >= 1 without forming a + b - 1, which overflows int when a
// is near 2^31 (the runner allows dimensions up to 2^31 - 1).
__host__ __device__ constexpr int ceil_div(int a, int b) { return (a - 1) / b + 1; }

// Every SIMT rung launches a one-dimensional grid of output tiles and recovers
// (tile row, tile column) from blockIdx.x: gridDim.y and gridDim.z stop at
// 65535, gridDim.x at 2^31 - 1. This refuses only shapes whose tile count
// passes that, which no output that fits in device memory reaches.
inline std::string check_tile_grid(const GemmProblem& p, int tile_m, int tile_n) {
    const std::int64_t tiles = ((p.m - 1) / tile_m + 1) * ((p.n - 1) / tile_n + 1);
    if (tiles > INT_MAX)
        return "ceil(M/" + std::to_string(tile_m) + ") * ceil(N/" + std::to_string(tile_n) +
               ") output tiles exceed the 2^31 - 1 blocks of a one-dimensional grid";
    return {};
}

// The grid size for those tiles; throws the check's reason if it is too large.
inline unsigned tile_grid(const GemmProblem& p, int tile_m, int tile_n) {
    if (const std::string why = check_tile_grid(p, tile_m, tile_n); !why.empty()) throw std::invalid_argument(why);
    return static_cast<unsigned>(ceil_div(static_cast<int>(p.m), tile_m)) *
           static_cast<unsigned>(ceil_div(static_cast<int>(p.n), tile_n));
}

inline cudaStream_t stream_of(const GemmProblem& p) { return static_cast<cudaStream_t>(p.stream); }

inline bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

}  // namespace simt
}  // namespace rigel::cuda
