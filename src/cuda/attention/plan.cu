// rigel::attention::Plan on the GPU: the arguments checked on the host, then
// one launch of the plan's kernel.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda/attention/attention_kernels.cuh"
#include "rigel/attention.hpp"

namespace rigel::attention {

struct Plan::State {
    cuda::attention::Fa3Maps fa3;
};

void Plan::forward(const ForwardArgs& a, Stream stream) const {
    if (const std::string why = check_forward_args(desc_, a); !why.empty()) throw std::invalid_argument(why);
    if (!state_) state_ = std::make_shared<State>();
    switch (kernel_) {
        case Kernel::fa2: cuda::attention::fa2_forward(desc_, a, static_cast<cudaStream_t>(stream)); return;
        case Kernel::fa3:
            cuda::attention::fa3_forward(desc_, a, static_cast<cudaStream_t>(stream), state_->fa3);
            return;
    }
    throw std::logic_error("rigel::attention::Plan: unknown kernel");
}

}  // namespace rigel::attention
