// rigel::attention::Plan on the GPU: the arguments checked on the host, then
// the plan's kernel launched; the state the kernels keep between calls (tensor
// maps, the backward pass's workspace).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda/attention/attention_kernels.cuh"
#include "cuda/check.cuh"
#include "rigel/attention.hpp"

namespace rigel::attention {

struct Plan::State {
    cuda::attention::Fa3Maps fa3;
    cuda::attention::Fa3BackwardMaps fa3_backward;
    std::shared_ptr<cuda::attention::DecomposedState> decomposed;  // made on the first call
    float* workspace = nullptr;  // the backward pass's dQ accumulator, then Dl

    ~State() {
        if (workspace) cudaFree(workspace);  // an error here (context already gone) changes nothing
    }
};

void Plan::forward(const ForwardArgs& a, Stream stream) const {
    if (const std::string why = check_forward_args(desc_, a); !why.empty()) throw std::invalid_argument(why);
    if (!state_) state_ = std::make_shared<State>();
    switch (kernel_) {
        case Kernel::decomposed:
            if (!state_->decomposed) state_->decomposed = cuda::attention::make_decomposed_state(desc_);
            cuda::attention::decomposed_forward(desc_, a, static_cast<cudaStream_t>(stream), *state_->decomposed);
            return;
        case Kernel::fa2: cuda::attention::fa2_forward(desc_, a, static_cast<cudaStream_t>(stream)); return;
        case Kernel::fa3:
            cuda::attention::fa3_forward(desc_, a, static_cast<cudaStream_t>(stream), state_->fa3);
            return;
    }
    throw std::logic_error("rigel::attention::Plan: unknown kernel");
}

void Plan::backward(const BackwardArgs& a, Stream stream) const {
    if (const std::string why = check_backward_args(desc_, a); !why.empty()) throw std::invalid_argument(why);
    if (!state_) state_ = std::make_shared<State>();
    const std::size_t rows = static_cast<std::size_t>(desc_.batch * desc_.seq * desc_.heads);
    const std::size_t dq_floats = rows * static_cast<std::size_t>(desc_.head_dim);
    if (!state_->workspace)
        state_->workspace = static_cast<float*>(cuda::alloc_or_refuse(
            (dq_floats + rows) * sizeof(float), "the attention backward pass's fp32 dQ accumulator and Dl"));
    // The fa3 plan's backward pass runs on wgmma; the deterministic mode (a
    // dQ pass of its own) and the other plans' on mma.sync (fa2_backward.cu).
    if (kernel_ == Kernel::fa3 && !desc_.deterministic)
        cuda::attention::fa3_backward(desc_, a, state_->workspace, state_->workspace + dq_floats,
                                      static_cast<cudaStream_t>(stream), state_->fa3_backward);
    else
        cuda::attention::fa2_backward(desc_, a, state_->workspace, state_->workspace + dq_floats,
                                      static_cast<cudaStream_t>(stream));
}

}  // namespace rigel::attention
