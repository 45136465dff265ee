// The CUDA backend's executor: device 0, memory from cudaMalloc (never managed
// memory), one non-blocking stream for everything (copies, poison, rungs,
// timing events), CUDA events around each timed launch after an untimed L2
// flush, and the NVML sampler for clocks and power.
//
// Only the runtime API is used here, never the driver API: a binary that
// references a cu* symbol needs libcuda.so.1 to start at all, and rigel must
// start (and say "no CUDA device") on a machine without a GPU driver.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/reference.hpp"
#include "cuda/check.cuh"
#include "cuda/device_cache.hpp"
#include "dist/rendezvous.hpp"
#include "harness/executor.hpp"
#include "harness/nvml_sampler.hpp"

namespace rigel {
namespace {

__global__ void fill_words_kernel(std::uint32_t* p, std::size_t n, std::uint32_t word) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = word;
}

// CUDA encodes versions as 1000*major + 10*minor.
std::string cuda_version_string(int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

class CudaExecutor final : public Executor {
public:
    CudaExecutor() {
        int count = 0;
        const cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess) {
            reason_ = std::string("no CUDA device found (cudaGetDeviceCount: ") + cudaGetErrorName(e) + ")";
            (void)cudaGetLastError();
            return;
        }
        if (count == 0) {
            reason_ = "no CUDA device found (cudaGetDeviceCount: 0 devices)";
            return;
        }
        // One process per GPU under `rigel launch`: the rank's GPU (its local
        // rank); device 0 otherwise.
        try {
            rank_ = dist::rank_from_env();
            device_ = rank_.local_rank;
        } catch (const std::invalid_argument& e) {
            reason_ = e.what();
            return;
        }
        if (device_ >= count) {
            reason_ = "local rank " + std::to_string(device_) + " has no GPU: this machine has " +
                      std::to_string(count);
            return;
        }
        if (const cudaError_t p = cudaGetDeviceProperties(&prop_, device_); p != cudaSuccess) {
            reason_ = "CUDA device " + std::to_string(device_) + " is not usable (cudaGetDeviceProperties: " +
                      cudaGetErrorName(p) + ")";
            (void)cudaGetLastError();
            return;
        }
        // Under `rigel launch`, every CUDA call this thread makes, the executor's or anyone else's (a probe's,
        // a library plan's, a training backend's), goes to the rank's GPU: made current here, once. Outside a
        // launch device 0 is current already, and no context is made before first use.
        if (!rank_.launch_id.empty() || device_ != 0) {
            if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
                reason_ = "CUDA device " + std::to_string(device_) + " cannot be made current (cudaSetDevice: " +
                          cudaGetErrorName(d) + ")";
                (void)cudaGetLastError();
                return;
            }
        }
        char pci[32] = {};
        if (cudaDeviceGetPCIBusId(pci, sizeof pci, device_) == cudaSuccess) pci_bus_id_ = pci;
        (void)cudaGetLastError();
        sampler_ = std::make_unique<NvmlSampler>(pci_bus_id_);
    }

    ~CudaExecutor() override {
        // Errors here have nowhere to go: a destructor must not throw. What rungs
        // keep across calls goes first, while the context and this stream live.
        cuda::release_device_caches();
        if (flush_) (void)cudaFree(flush_);
        if (start_) (void)cudaEventDestroy(start_);
        if (stop_) (void)cudaEventDestroy(stop_);
        if (stream_) (void)cudaStreamDestroy(stream_);
    }

    Backend backend() const override { return Backend::cuda; }
    std::string unavailable_reason() const override { return reason_; }
    int compute_capability() const override { return reason_.empty() ? prop_.major * 10 + prop_.minor : 0; }
    std::string device_name() const override { return reason_.empty() ? std::string(prop_.name) : std::string(); }

    std::size_t free_memory_bytes() const override {
        if (!reason_.empty()) return 0;
        ensure_ready();
        std::size_t free = 0, total = 0;
        RIGEL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        return free;
    }

    void* alloc(std::size_t bytes) override {
        ensure_ready();
        void* p = nullptr;
        RIGEL_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 4)));
        return p;
    }

    void release(void* p) override {
        // Called from DeviceBuffer's destructor: never throws. A failure here
        // follows an earlier error that has already been reported.
        if (p && reason_.empty()) (void)cudaFree(p);
    }

    // Copies go on the executor's stream (a non-blocking stream does not order
    // with the legacy default stream that plain cudaMemcpy uses) and the host
    // waits for them, so the host buffer may be reused at once.
    void upload(void* dst, const void* src, std::size_t bytes) override {
        ensure_ready();
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    void download(void* dst, const void* src, std::size_t bytes) override {
        ensure_ready();
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    // kPoisonWord in every 32-bit word (an f64 output gets the word twice per
    // element: 0x7FF8DEAD7FF8DEAD, still a NaN). Stream-ordered before the rung.
    void poison(void* p, std::size_t bytes) override {
        ensure_ready();
        const std::size_t words = bytes / 4;
        if (words) {
            constexpr int threads = 256;
            const auto blocks =
                static_cast<unsigned>(std::min<std::size_t>((words + threads - 1) / threads, 65535));
            fill_words_kernel<<<blocks, threads, 0, stream_>>>(static_cast<std::uint32_t*>(p), words, kPoisonWord);
            RIGEL_CUDA_CHECK_LAUNCH();
        }
        for (std::size_t i = words * 4; i < bytes; ++i)  // a ragged tail gets the word's bytes, little-endian
            RIGEL_CUDA_CHECK(cudaMemsetAsync(static_cast<unsigned char*>(p) + i,
                                             static_cast<int>((kPoisonWord >> (8 * (i % 4))) & 0xFF), 1, stream_));
    }

    void* stream() override {
        if (!reason_.empty()) return nullptr;
        ensure_ready();
        return stream_;
    }

    double time_once(const std::function<void()>& launch) override {
        ensure_ready();
        ensure_flush_buffer();
        // Cold L2, untimed: overwrite twice its size before the start event.
        RIGEL_CUDA_CHECK(cudaMemsetAsync(flush_, 0, flush_bytes_, stream_));
        RIGEL_CUDA_CHECK(cudaEventRecord(start_, stream_));
        launch();
        RIGEL_CUDA_CHECK(cudaEventRecord(stop_, stream_));
        RIGEL_CUDA_CHECK(cudaGetLastError());
        RIGEL_CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0;
        RIGEL_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return static_cast<double>(ms) * 1e-3;
    }

    void synchronize() override {
        ensure_ready();
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        RIGEL_CUDA_CHECK(cudaGetLastError());
    }

    void begin_sampling() override {
        if (sampler_) sampler_->start();
    }
    DeviceSample end_sampling() override { return sampler_ ? sampler_->stop() : DeviceSample{}; }

    std::vector<std::pair<std::string, std::string>> describe() const override {
        std::vector<std::pair<std::string, std::string>> f;
        int driver = 0, runtime = 0;
        (void)cudaDriverGetVersion(&driver);
        (void)cudaRuntimeGetVersion(&runtime);
        (void)cudaGetLastError();
        const std::size_t lt = cublasLtGetVersion();  // 10000*major + 100*minor + patch
        if (!reason_.empty()) {
            f.push_back({"cuda_device", reason_});
        } else {
            int sm_clock_khz = 0, mem_clock_khz = 0;
            (void)cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, device_);
            (void)cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device_);
            (void)cudaGetLastError();
            f.push_back({"gpu_name", prop_.name});
            f.push_back({"gpu_index", std::to_string(device_)});
            // Under `rigel launch`: which launch, and this process's rank in it.
            if (!rank_.launch_id.empty()) {
                f.push_back({"launch_id", rank_.launch_id});
                f.push_back({"rank", std::to_string(rank_.rank) + " of " + std::to_string(rank_.world)});
            }
            f.push_back({"gpu_compute_capability", std::to_string(prop_.major) + "." + std::to_string(prop_.minor)});
            f.push_back({"gpu_sm_count", std::to_string(prop_.multiProcessorCount)});
            f.push_back({"gpu_l2_bytes", std::to_string(prop_.l2CacheSize)});
            f.push_back({"gpu_memory_bytes", std::to_string(prop_.totalGlobalMem)});
            f.push_back({"gpu_smem_per_block_optin_bytes", std::to_string(prop_.sharedMemPerBlockOptin)});
            f.push_back({"gpu_sm_clock_peak_mhz", std::to_string(sm_clock_khz / 1000)});
            f.push_back({"gpu_mem_clock_peak_mhz", std::to_string(mem_clock_khz / 1000)});
            f.push_back({"gpu_pci_bus_id", pci_bus_id_});
        }
        f.push_back({"cuda_driver_version", driver ? cuda_version_string(driver) : "none"});
        f.push_back({"cuda_runtime_version", cuda_version_string(runtime)});
        f.push_back({"cuda_build_version", cuda_version_string(CUDART_VERSION)});
        f.push_back({"nvcc_version", std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) +
                                         "." + std::to_string(__CUDACC_VER_BUILD__)});
        f.push_back({"cublaslt_version", std::to_string(lt / 10000) + "." + std::to_string(lt / 100 % 100) + "." +
                                             std::to_string(lt % 100)});
        if (sampler_)
            for (auto& kv : sampler_->describe()) f.push_back(std::move(kv));
        return f;
    }

private:
    void require_device() const {
        if (!reason_.empty()) throw std::runtime_error("CUDA executor used without a device: " + reason_);
    }

    // The context, stream and events are made on first use, so `rigel env` and
    // CPU-only runs never create a CUDA context.
    void ensure_ready() const {
        require_device();
        if (stream_) return;
        RIGEL_CUDA_CHECK(cudaSetDevice(device_));
        RIGEL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        RIGEL_CUDA_CHECK(cudaEventCreate(&start_));
        RIGEL_CUDA_CHECK(cudaEventCreate(&stop_));
    }

    void ensure_flush_buffer() {
        if (flush_) return;
        flush_bytes_ = 2 * static_cast<std::size_t>(std::max(prop_.l2CacheSize, 1 << 20));
        RIGEL_CUDA_CHECK(cudaMalloc(&flush_, flush_bytes_));
    }

    std::string reason_;
    cudaDeviceProp prop_{};
    int device_ = 0;        // the GPU this process runs on
    dist::RankInfo rank_;   // read once from the environment `rigel launch` sets
    std::string pci_bus_id_;
    std::unique_ptr<NvmlSampler> sampler_;
    mutable cudaStream_t stream_ = nullptr;
    mutable cudaEvent_t start_ = nullptr;
    mutable cudaEvent_t stop_ = nullptr;
    void* flush_ = nullptr;
    std::size_t flush_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor() { return std::make_unique<CudaExecutor>(); }

}  // namespace rigel
