// train::GradientSync over NCCL (src/dist/nccl_sync.hpp): an fp32 sum in
// place on the training backend's stream, so the gradient norm that follows
// on the same stream reads the sum.
#include <cuda_runtime.h>

#include <memory>
#include <span>
#include <stdexcept>

#include "cuda/dist/nccl_comm.cuh"
#include "dist/nccl_sync.hpp"

namespace rigel::dist {

#if RIGEL_HAVE_NCCL
namespace {

class NcclSync final : public train::GradientSync {
public:
    explicit NcclSync(const RankInfo& r) : rank_(r), comm_(make_nccl_comm(r)) {
        RIGEL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        RIGEL_CUDA_CHECK(cudaMalloc(&flag_, sizeof(float)));
    }
    ~NcclSync() override {
        (void)cudaFree(flag_);
        (void)cudaStreamDestroy(stream_);
        (void)ncclCommDestroy(comm_);
    }
    NcclSync(const NcclSync&) = delete;
    NcclSync& operator=(const NcclSync&) = delete;
    int world() const override { return rank_.world; }
    int rank() const override { return rank_.rank; }
    void sum(float* data, std::size_t n, void* stream) override {
        nccl_check(ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm_, static_cast<cudaStream_t>(stream)),
                   "ncclAllReduce (the gradients)");
    }
    // A layer's gradients in one NCCL group: one launch for its 12 tensors
    // (LayerNorm's and the biases' are a few kilobytes each).
    void sum_bucket(std::span<const Tensor> tensors, void* stream) override {
        nccl_check(ncclGroupStart(), "ncclGroupStart (a gradient bucket)");
        for (const Tensor& t : tensors)
            nccl_check(ncclAllReduce(t.data, t.data, t.n, ncclFloat, ncclSum, comm_, static_cast<cudaStream_t>(stream)),
                       "ncclAllReduce (the gradients)");
        nccl_check(ncclGroupEnd(), "ncclGroupEnd (a gradient bucket)");
    }
    void gather(void* data, std::size_t bytes_per_rank, void* stream) override {
        auto* bytes = static_cast<unsigned char*>(data);
        nccl_check(ncclAllGather(bytes + static_cast<std::size_t>(rank_.rank) * bytes_per_rank, bytes, bytes_per_rank,
                                 ncclUint8, comm_, static_cast<cudaStream_t>(stream)),
                   "ncclAllGather (the shards)");
    }
    bool any(bool local) override {
        float f = local ? 1.0f : 0.0f;
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(flag_, &f, sizeof f, cudaMemcpyHostToDevice, stream_));
        nccl_check(ncclAllReduce(flag_, flag_, 1, ncclFloat, ncclMax, comm_, stream_), "ncclAllReduce (a decision)");
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(&f, flag_, sizeof f, cudaMemcpyDeviceToHost, stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        return f > 0;
    }

private:
    RankInfo rank_;
    ncclComm_t comm_;
    cudaStream_t stream_ = nullptr;
    float* flag_ = nullptr;
};

}  // namespace

std::unique_ptr<train::GradientSync> make_nccl_sync(const RankInfo& r) { return std::make_unique<NcclSync>(r); }

#else

std::unique_ptr<train::GradientSync> make_nccl_sync(const RankInfo&) {
    throw std::runtime_error("rigel was built without NCCL (CMake found no nccl.h and libnccl): one GPU only");
}

#endif

}  // namespace rigel::dist
