// Built instead of the CUDA backend when nvcc is absent: the CUDA registry is
// empty and the executor says why.
#include <stdexcept>

#include "attention/driver.hpp"
#include "cuda/hopper/block_scaled.hpp"
#include "dist/allreduce.hpp"
#include "dist/nccl_sync.hpp"
#include "gemm/driver.hpp"
#include "harness/executor.hpp"
#include "ladder/rung.hpp"
#include "probes/probe.hpp"
#include "rigel/attention.hpp"
#include "rigel/gemm.hpp"
#include "train/layer_check.hpp"
#include "train/trainer.hpp"

namespace rigel {
namespace {

class NoCudaExecutor final : public Executor {
public:
    Backend backend() const override { return Backend::cuda; }
    std::string unavailable_reason() const override { return "rigel was built without CUDA"; }
    int compute_capability() const override { return 0; }
    std::size_t free_memory_bytes() const override { return 0; }
    std::string device_name() const override { return {}; }
    void* alloc(std::size_t) override { throw std::logic_error("no CUDA"); }
    void release(void*) override {}
    void upload(void*, const void*, std::size_t) override {}
    void download(void*, const void*, std::size_t) override {}
    void poison(void*, std::size_t) override {}
    void* stream() override { return nullptr; }
    double time_once(const std::function<void()>&) override { return 0; }
    void synchronize() override {}
    std::vector<std::pair<std::string, std::string>> describe() const override {
        return {{"cuda", "not built"}};
    }
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor() { return std::make_unique<NoCudaExecutor>(); }
std::span<const Rung> cuda_rungs() { return {}; }
std::span<const Probe> cuda_probes() { return {}; }

}  // namespace rigel

// The library's plans check and dispatch on any machine (for 132 SMs, the
// H200's count); running one needs the CUDA build.
namespace rigel::gemm {

struct Plan::State {};

Plan::Plan(const Desc& d) : Plan(d, choose(d, 132)) {}
Plan::Plan(const Desc& d, const Choice& forced) : desc_(with_packed_leading_dimensions(d)), choice_(forced) {
    if (const std::string why = check(d); !why.empty()) throw std::invalid_argument(why);
}
Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;
const Choice& Plan::choice_for(const Args&) const { return choice_; }
void Plan::run(const Args&, Stream) { throw std::runtime_error("rigel::gemm::Plan::run: rigel was built without CUDA"); }
void Plan::run_decomposed(const Args&, Stream) {
    throw std::runtime_error("rigel::gemm::Plan::run_decomposed: rigel was built without CUDA");
}
std::size_t Plan::workspace_bytes() const { return 0; }

// `rigel gemm` says "skipped" before it reaches the driver; a call here is a defect.
std::vector<VerifyRow> verify_case(Executor&, const GemmCase&, std::uint64_t, int) {
    throw std::logic_error("rigel::gemm::verify_case: rigel was built without CUDA");
}
VerifyRow check_refusal(Executor&, const RefusalCase&) {
    throw std::logic_error("rigel::gemm::check_refusal: rigel was built without CUDA");
}
BenchOutcome bench_case(Executor&, const GemmCase&, std::span<const Contender>, const PairedConfig&, std::uint64_t,
                        int) {
    throw std::logic_error("rigel::gemm::bench_case: rigel was built without CUDA");
}
std::string baseline_support(Contender, const Desc&) {
    throw std::logic_error("rigel::gemm::baseline_support: rigel was built without CUDA");
}
std::string run_baseline(Contender, const Desc&, const Args&, Stream) {
    throw std::logic_error("rigel::gemm::run_baseline: rigel was built without CUDA");
}

}  // namespace rigel::gemm

// `rigel train check` says "skipped" before it gets here.
namespace rigel::train {
std::vector<LayerCheck> check_layers(std::uint64_t) {
    throw std::logic_error("rigel::train::check_layers: rigel was built without CUDA");
}
std::unique_ptr<TrainBackend> make_cuda_backend(const Gpt2Config&, int, int, const CudaBackendOptions&) {
    throw std::runtime_error("the cuda backend needs rigel built with CUDA");
}
}  // namespace rigel::train

// Attention plans check on any machine; running one needs the CUDA build.
namespace rigel::attention {

void Plan::forward(const ForwardArgs&, Stream) const {
    throw std::runtime_error("rigel::attention::Plan::forward: rigel was built without CUDA");
}
void Plan::backward(const BackwardArgs&, Stream) const {
    throw std::runtime_error("rigel::attention::Plan::backward: rigel was built without CUDA");
}

// `rigel attention` says "skipped" before it reaches the driver; a call here is a defect.
std::vector<VerifyRow> verify_case(Executor&, const AttentionCase&, Kernel, bool, std::uint64_t, int) {
    throw std::logic_error("rigel::attention::verify_case: rigel was built without CUDA");
}
BenchOutcome bench_case(Executor&, const AttentionCase&, Kernel, const PairedConfig&, std::uint64_t, int) {
    throw std::logic_error("rigel::attention::bench_case: rigel was built without CUDA");
}

}  // namespace rigel::attention

// `rigel gemm blockscaled` says "skipped" before it gets here.
namespace rigel::cuda {
void fp8_block_scaled_gemm(const BlockScaledProblem&) {
    throw std::logic_error("rigel::cuda::fp8_block_scaled_gemm: rigel was built without CUDA");
}
}  // namespace rigel::cuda

namespace rigel::dist {
std::vector<AllreduceRow> nccl_allreduce_sweep(const RankInfo&, const std::vector<std::uint64_t>&) {
    throw std::runtime_error("rigel was built without CUDA, so without NCCL");
}
std::unique_ptr<train::GradientSync> make_nccl_sync(const RankInfo&) {
    throw std::runtime_error("rigel was built without CUDA, so without NCCL: one process only");
}
}  // namespace rigel::dist
