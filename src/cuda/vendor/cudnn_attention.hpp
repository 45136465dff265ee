// cuDNN's fused scaled-dot-product attention, the baseline of rigel's
// attention kernels: the cudnn-frontend graph API (an SDPA node, bf16 in and
// out, fp32 softmax statistics), one graph per problem, built on first use and
// kept, executed on the caller's stream. cuDNN reads the same strided Q, K, V
// as rigel (dims B, H, S, D with strides S ld, D, ld, 1) and writes O and its
// statistics, the logsumexp of the scaled scores, [B, H, S] fp32, the same
// quantity as rigel's lse.
//
// Compiled against the frontend's headers when the build finds them
// (RIGEL_HAVE_CUDNN_FRONTEND, scripts/stage_deps.sh stages them); without
// them every call says so.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "rigel/attention.hpp"

namespace rigel::cuda::vendor {

// Empty when cuDNN computes `d` (its graph built and supported on this GPU),
// else one sentence saying why not. Builds and caches the graph.
std::string cudnn_sdpa_support(const rigel::attention::Desc& d);
// O and lse of `d` on `stream`; throws std::runtime_error when unsupported or failing.
void cudnn_sdpa_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a,
                        cudaStream_t stream);
// The backward pass (an SDPA backward node: dQ, dK, dV from Q, K, V, O, dO and
// the statistics, which rigel's lse is); the support check builds its graph.
std::string cudnn_sdpa_backward_support(const rigel::attention::Desc& d);
void cudnn_sdpa_backward(const rigel::attention::Desc& d, const rigel::attention::BackwardArgs& a,
                         cudaStream_t stream);
// "cuDNN 9.x.y, frontend 1.z": the versions that computed it.
std::string cudnn_sdpa_version();

}  // namespace rigel::cuda::vendor
