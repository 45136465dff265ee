// Where a rung runs: memory, transfers, the output poison and the timing of one
// repetition. The ladder runner is written once against this interface; the
// host (CPU) and CUDA backends implement it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/backend.hpp"

namespace rigel {

// Clocks, power and throttle state sampled while a measurement ran (NVML).
struct DeviceSample {
    bool valid = false;
    double sm_clock_mhz = 0;   // median over the measurement
    double mem_clock_mhz = 0;
    double power_w = 0;        // mean
    double power_max_w = 0;
    double temp_c = 0;         // max
    std::uint64_t clock_event_mask = 0;  // OR of the clock-event (throttle) reasons seen
    bool throttled = false;    // power, thermal or hardware slowdown was among them
};

class Executor {
public:
    virtual ~Executor() = default;
    virtual Backend backend() const = 0;
    // Empty when usable; otherwise why not ("no CUDA device found", ...).
    virtual std::string unavailable_reason() const = 0;
    // Compute capability x10 (90 for sm_90); 0 for the CPU.
    virtual int compute_capability() const = 0;
    virtual std::size_t free_memory_bytes() const = 0;
    // What runs the rungs, for the CSV's device column: the GPU's name, the
    // CPU's model; empty when the device is unavailable.
    virtual std::string device_name() const = 0;

    virtual void* alloc(std::size_t bytes) = 0;
    virtual void release(void* p) = 0;
    virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
    virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
    // Fill with kPoisonWord (32-bit words).
    virtual void poison(void* p, std::size_t bytes) = 0;
    virtual void* stream() = 0;

    // Run `launch` once and return its duration in seconds. CUDA: events around
    // the launch, an L2 flush before it; errors are checked after it.
    virtual double time_once(const std::function<void()>& launch) = 0;
    virtual void synchronize() = 0;

    // Sampling of clocks and power around a measurement (no-op on the CPU).
    virtual void begin_sampling() {}
    virtual DeviceSample end_sampling() { return {}; }

    // key/value facts about the device for the provenance sidecar.
    virtual std::vector<std::pair<std::string, std::string>> describe() const = 0;
};

std::unique_ptr<Executor> make_host_executor();
// Returns an executor whose unavailable_reason() says why when rigel was built
// without CUDA or no device is present.
std::unique_ptr<Executor> make_cuda_executor();

// RAII buffer on an executor.
class DeviceBuffer {
public:
    DeviceBuffer(Executor& ex, std::size_t bytes) : ex_(&ex), p_(ex.alloc(bytes)), bytes_(bytes) {}
    ~DeviceBuffer() { if (p_) ex_->release(p_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* get() const { return p_; }
    std::size_t size() const { return bytes_; }
private:
    Executor* ex_;
    void* p_;
    std::size_t bytes_;
};

// NVML sampling (Executor::begin_sampling) around one measurement, stopped
// however the measurement ends.
class DeviceSampling {
public:
    explicit DeviceSampling(Executor& ex) : ex_(ex) { ex_.begin_sampling(); }
    ~DeviceSampling() {
        if (open_) (void)ex_.end_sampling();
    }
    DeviceSampling(const DeviceSampling&) = delete;
    DeviceSampling& operator=(const DeviceSampling&) = delete;
    DeviceSample stop() {
        open_ = false;
        return ex_.end_sampling();
    }
private:
    Executor& ex_;
    bool open_ = true;
};

}  // namespace rigel
