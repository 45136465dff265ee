// The CPU backend's executor: host memory, a steady clock around each call.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

#include "core/reference.hpp"
#include "cpu/cpu_rungs.hpp"
#include "harness/executor.hpp"

namespace rigel {
namespace {

std::size_t mem_available_bytes() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    std::size_t kb = 0;
    std::string unit;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}

// The "model name" line of /proc/cpuinfo; "unknown" where there is none.
std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);)
        if (line.starts_with("model name")) {
            const auto colon = line.find(": ");
            if (colon != std::string::npos) return line.substr(colon + 2);
        }
    return "unknown";
}

class HostExecutor final : public Executor {
public:
    Backend backend() const override { return Backend::cpu; }
    std::string unavailable_reason() const override { return {}; }
    int compute_capability() const override { return 0; }
    std::size_t free_memory_bytes() const override { return mem_available_bytes(); }
    std::string device_name() const override { return model_; }

    void* alloc(std::size_t bytes) override {
        // 64-byte alignment: one cache line, and what AVX-512 loads like.
        void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) throw std::bad_alloc();
        return p;
    }
    void release(void* p) override { std::free(p); }
    void upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void poison(void* p, std::size_t bytes) override {
        auto* w = static_cast<unsigned char*>(p);
        for (std::size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(w + i, &kPoisonWord, 4);
    }
    void* stream() override { return nullptr; }
    void synchronize() override {}

    double time_once(const std::function<void()>& launch) override {
        const auto t0 = std::chrono::steady_clock::now();
        launch();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

    std::vector<std::pair<std::string, std::string>> describe() const override {
        std::vector<std::pair<std::string, std::string>> facts{
            {"cpu_threads_available", std::to_string(std::thread::hardware_concurrency())}};
#if RIGEL_HAVE_OPENBLAS
        // The kernel OpenBLAS chose: an unknown CPU model falls back to an old one.
        facts.emplace_back("openblas_core", cpu::openblas_corename());
#endif
        return facts;
    }

private:
    std::string model_ = cpu_model_name();
};

}  // namespace

std::unique_ptr<Executor> make_host_executor() { return std::make_unique<HostExecutor>(); }

}  // namespace rigel
