// Built instead of the CUDA backend when nvcc is absent: the CUDA registry is
// empty and the executor says why.
#include <stdexcept>

#include "harness/executor.hpp"
#include "ladder/rung.hpp"
#include "probes/probe.hpp"

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
