// train::GradientSync over NCCL (src/dist/nccl_sync.hpp): an fp32 sum in
// place on the training backend's stream, so the gradient norm that follows
// on the same stream reads the sum.
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>

#include "cuda/dist/nccl_comm.cuh"
#include "dist/nccl_sync.hpp"

namespace rigel::dist {

#if RIGEL_HAVE_NCCL
namespace {

class NcclSync final : public train::GradientSync {
public:
    explicit NcclSync(const RankInfo& r) : rank_(r), comm_(make_nccl_comm(r)) {}
    ~NcclSync() override { (void)ncclCommDestroy(comm_); }
    NcclSync(const NcclSync&) = delete;
    NcclSync& operator=(const NcclSync&) = delete;
    int world() const override { return rank_.world; }
    int rank() const override { return rank_.rank; }
    void sum(float* data, std::size_t n, void* stream) override {
        nccl_check(ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm_, static_cast<cudaStream_t>(stream)),
                   "ncclAllReduce (the gradients)");
    }

private:
    RankInfo rank_;
    ncclComm_t comm_;
};

}  // namespace

std::unique_ptr<train::GradientSync> make_nccl_sync(const RankInfo& r) { return std::make_unique<NcclSync>(r); }

#else

std::unique_ptr<train::GradientSync> make_nccl_sync(const RankInfo&) {
    throw std::runtime_error("rigel was built without NCCL (CMake found no nccl.h and libnccl): one GPU only");
}

#endif

}  // namespace rigel::dist
