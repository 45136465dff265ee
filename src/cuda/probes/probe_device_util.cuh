// Small CUDA host helpers shared by the layout, numerics and throughput
// probes: a device array that frees itself, the device's facts, and whether a
// kernel has code for this device. (Text helpers: probes/finding_text.hpp.)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "harness/nvml_sampler.hpp"
#include "probes/finding_text.hpp"

namespace rigel::probes {

// A cudaMalloc'ed array of n T; copies are explicit and checked.
template <typename T>
class DeviceArray {
public:
    explicit DeviceArray(std::size_t n) : n_(n) {
        RIGEL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)));
    }
    explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
    ~DeviceArray() { cudaFree(p_); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;

    T* get() const { return p_; }
    std::size_t size() const { return n_; }
    void upload(const std::vector<T>& host) {
        if (host.size() != n_) throw std::logic_error("DeviceArray::upload: size mismatch");
        RIGEL_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }
    std::vector<T> download() const {
        std::vector<T> host(n_);
        RIGEL_CUDA_CHECK(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
        return host;
    }
    void fill_bytes(int byte) { RIGEL_CUDA_CHECK(cudaMemset(p_, byte, n_ * sizeof(T))); }

private:
    T* p_ = nullptr;
    std::size_t n_ = 0;
};

struct DeviceFacts {
    int cc = 0;  // x10
    int sms = 0;
    std::string name;
};

inline DeviceFacts device_facts() {
    int dev = 0;
    RIGEL_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    RIGEL_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    return {prop.major * 10 + prop.minor, prop.multiProcessorCount, prop.name};
}

// False when the binary holds no code this device can run for `kernel`
// (built for another architecture); the error is consumed.
template <typename Kernel>
bool kernel_has_image(Kernel kernel) {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return true;
}

// Seconds that an operation on the default stream takes on the device, timed with two CUDA events
// recorded around it; the events are made once and kept, so a timing loop creates none.
class EventTimer {
public:
    EventTimer() {
        RIGEL_CUDA_CHECK(cudaEventCreate(&start_));
        RIGEL_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    ~EventTimer() {
        (void)cudaEventDestroy(start_);
        (void)cudaEventDestroy(stop_);
    }
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;
    template <class Op>
    double seconds(const Op& op) {
        RIGEL_CUDA_CHECK(cudaEventRecord(start_));
        op();
        RIGEL_CUDA_CHECK(cudaEventRecord(stop_));
        RIGEL_CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0;
        RIGEL_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms * 1e-3;
    }

private:
    cudaEvent_t start_{}, stop_{};
};

// The mangled symbol of a kernel, as cuobjdump names it, so its own SASS can be
// found (empty where the runtime cannot say).
// NVML's sampler of the current device (its clocks and power while a probe runs), or null where NVML or
// the device cannot be read.
inline std::string current_pci_bus_id() {
    int dev = 0;
    RIGEL_CUDA_CHECK(cudaGetDevice(&dev));
    char buf[64] = {};
    RIGEL_CUDA_CHECK(cudaDeviceGetPCIBusId(buf, sizeof buf, dev));
    return buf;
}
inline std::unique_ptr<NvmlSampler> current_device_sampler() {
    auto sampler = std::make_unique<NvmlSampler>(current_pci_bus_id());
    if (!sampler->unavailable_reason().empty()) sampler.reset();
    return sampler;
}

inline std::string kernel_symbol(const void* kernel) {
    const char* name = nullptr;
    if (cudaFuncGetName(&name, kernel) != cudaSuccess || !name) {
        (void)cudaGetLastError();
        return {};
    }
    return name;
}

}  // namespace rigel::probes
