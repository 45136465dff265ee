// The Hopper (sm_90a) rungs: their entry points and shape checks. The registry
// table is in hopper_registry.cu; each rung's kernel is in its own kNN_*.cu
// file, and the pieces they share are in sm90.cuh, wgmma.cuh and
// warp_specialized.cuh.
#pragma once
#include <string>

#include "ladder/rung.hpp"

namespace rigel::cuda {

void k30_wgmma_tma(const GemmProblem& p);
void k31_wgmma_ws(const GemmProblem& p);
void k32_wgmma_persistent(const GemmProblem& p);
void k33_wgmma_fp8(const GemmProblem& p);
void k34_wgmma_fp8_promoted(const GemmProblem& p);
void k35_wgmma_cluster_multicast(const GemmProblem& p);
void k36_wgmma_fp8_promoted_cluster(const GemmProblem& p);
void k37_wgmma_splitk(const GemmProblem& p);
void k38_wgmma_fp8_block_scaled(const GemmProblem& p);
void k39_wgmma_pingpong(const GemmProblem& p);
void k40_wgmma_narrow_tail(const GemmProblem& p);
void k41_wgmma_wave_fit(const GemmProblem& p);
void k42_wgmma_tail_fit(const GemmProblem& p);
void k43_wgmma_tma_store(const GemmProblem& p);
void k44_wgmma_wave_fit_tma(const GemmProblem& p);

// The TMA rule every Hopper rung shares: each row of A and of B (both K-major)
// must start on a 16-byte boundary, so K x element size must be a multiple of
// 16 (K % 8 for f16/bf16, K % 16 for fp8). M, N and K tails are otherwise free.
std::string hopper_tma_check(const GemmProblem& p);

}  // namespace rigel::cuda
