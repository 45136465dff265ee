// Clocks, power, temperature and clock-event (throttle) reasons of one GPU,
// read through NVML while a measurement runs. NVML is loaded at run time
// (dlopen "libnvidia-ml.so.1"), so rigel builds without it and runs where it is
// absent: the sampler then says why and every sample comes back invalid.
// Read-only: rigel never sets clocks, power limits or modes.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/executor.hpp"

namespace rigel {

// NVML's clock-event reason bits (nvmlClocksEventReason*, formerly
// nvmlClocksThrottleReason*; the values are the same in both namings).
namespace clock_event {
constexpr std::uint64_t gpu_idle = 0x1;
constexpr std::uint64_t applications_clocks_setting = 0x2;
constexpr std::uint64_t sw_power_cap = 0x4;
constexpr std::uint64_t hw_slowdown = 0x8;
constexpr std::uint64_t sync_boost = 0x10;
constexpr std::uint64_t sw_thermal_slowdown = 0x20;
constexpr std::uint64_t hw_thermal_slowdown = 0x40;
constexpr std::uint64_t hw_power_brake_slowdown = 0x80;
constexpr std::uint64_t display_clock_setting = 0x100;
// The reasons that mean the card ran slower than it could have: power or
// thermal limits and hardware slowdown. Idle, application clocks, sync boost
// and display settings are not.
constexpr std::uint64_t throttling =
    sw_power_cap | hw_slowdown | sw_thermal_slowdown | hw_thermal_slowdown | hw_power_brake_slowdown;
}  // namespace clock_event

// "none", or the set reasons joined by '+' in bit order ("sw_power_cap+hw_slowdown");
// bits NVML has not named are appended as one hex number ("+0x200").
std::string describe_clock_event_mask(std::uint64_t mask);

// One reading. A quantity NVML could not give is NaN.
struct RawNvmlSample {
    static constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
    double sm_clock_mhz = kMissing;
    double mem_clock_mhz = kMissing;
    double power_w = kMissing;
    double temp_c = kMissing;
    std::uint64_t clock_event_mask = 0;
    bool have_clock_events = false;
};

// Median clocks, mean and max power, max temperature, OR of the reasons, each
// over the samples that have that quantity. Quantities no sample had are NaN;
// valid is false when there are no samples at all.
DeviceSample aggregate(const std::vector<RawNvmlSample>& samples);

// One side's reading over its blocks of blocked timing (harness/paired.hpp):
// the median over the valid blocks of their median clocks and mean power, the
// max of their max power and temperature, the OR of their reasons; invalid
// when no block was.
DeviceSample median_over_blocks(const std::vector<DeviceSample>& blocks);

class NvmlSampler {
public:
    // Finds the device whose PCI bus id is pci_bus_id (as cudaDeviceGetPCIBusId
    // writes it); falls back to NVML index 0 when that id is empty or unknown.
    // NVML is opened on first use, not here.
    explicit NvmlSampler(std::string pci_bus_id);
    ~NvmlSampler();
    NvmlSampler(const NvmlSampler&) = delete;
    NvmlSampler& operator=(const NvmlSampler&) = delete;

    // Empty when NVML and the device were found; otherwise why not.
    std::string unavailable_reason();

    // Sample every kIntervalMs on a background thread between start() and
    // stop(); stop() also takes one last reading, so even a measurement shorter
    // than the interval has two. Without NVML: stop() returns {valid = false}.
    static constexpr int kIntervalMs = 10;
    void start();
    DeviceSample stop();

    // key/value facts for the provenance sidecar: driver, power limit, clocks,
    // persistence and ECC modes. Empty without NVML.
    std::vector<std::pair<std::string, std::string>> describe();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rigel
