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
// The backward pass on mma.sync (fa2_backward.cu): dq_acc holds B S H D floats, dl B H S.
void fa2_backward(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
                  cudaStream_t stream);
// The launches before and after either backward kernel (fa2_backward.cu):
// Dl = rowsum(dO * O) into dl, and the fp32 dQ accumulator zeroed (zero_dq);
// then dQ = scale x the accumulator, rounded to bf16.
void backward_prepare(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc,
                      float* dl, bool zero_dq, cudaStream_t stream);
void backward_store_dq(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a,
                       const float* dq_acc, cudaStream_t stream);

// Rung 3's tensor maps of Q, K and V, kept by the plan: encoded again only
// when a pointer changes.
struct Fa3Maps {
    CUtensorMap q{}, k{}, v{};
    const void *qp = nullptr, *kp = nullptr, *vp = nullptr;
};

// Rung 3, wgmma and TMA, warp-specialized (fa3_forward.cu).
void fa3_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream,
                 Fa3Maps& maps);

// The backward pass's tensor maps (Q and dO in boxes of the kernel's query
// tile, K and V in boxes of 128 keys), kept by the plan like Fa3Maps.
struct Fa3BackwardMaps {
    CUtensorMap q{}, k{}, v{}, dout{}, dq_acc{};
    const void *qp = nullptr, *kp = nullptr, *vp = nullptr, *dp = nullptr, *accp = nullptr;
};

// The backward pass on wgmma and TMA (fa3_backward.cu), the atomic mode only
// (a deterministic desc takes fa2_backward): same workspace as fa2_backward.
void fa3_backward(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a, float* dq_acc, float* dl,
                  cudaStream_t stream, Fa3BackwardMaps& maps);

}  // namespace rigel::cuda::attention
