// The attention kernels' entry points, one per rung (include/rigel/attention.hpp
// names them). Each takes a desc that passed check(), with defaults filled in,
// and arguments that passed check_forward_args().
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <memory>

#include "rigel/attention.hpp"

namespace rigel::cuda::attention {

// Rung 1, decomposed (decomposed.cu): two GEMM plans and a scratch buffer per desc.
struct DecomposedState;
std::shared_ptr<DecomposedState> make_decomposed_state(const rigel::attention::Desc& d);
void decomposed_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream,
                        DecomposedState& state);

// Rung 2, FlashAttention-2 on mma.sync (fa2_forward.cu).
void fa2_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream);
// The backward pass (fa2_backward.cu): dq_acc holds B S H D floats, dl B H S.
void fa2_backward(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
                  cudaStream_t stream);

// Rung 3's tensor maps of Q, K and V, kept by the plan: encoded again only
// when a pointer changes.
struct Fa3Maps {
    CUtensorMap q{}, k{}, v{};
    const void *qp = nullptr, *kp = nullptr, *vp = nullptr;
};

// Rung 3, wgmma and TMA, warp-specialized (fa3_forward.cu).
void fa3_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream,
                 Fa3Maps& maps);

}  // namespace rigel::cuda::attention
