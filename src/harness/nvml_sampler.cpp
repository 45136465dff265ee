// The NVML sampler. Only the few NVML entry points rigel reads are declared
// here, with the types of nvml.h (NVML's ABI is stable across drivers; the _v2
// names are the ones current drivers export), so the build needs no NVML.
#include "harness/nvml_sampler.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace rigel {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; NVML_SUCCESS is 0
using NvmlDevice = void*;  // nvmlDevice_t, an opaque pointer
constexpr NvmlReturn kNvmlSuccess = 0;

// nvmlClockType_t and nvmlTemperatureSensors_t values.
constexpr unsigned kClockSm = 1;
constexpr unsigned kClockMem = 2;
constexpr unsigned kTemperatureGpu = 0;

// nvmlDeviceGetPowerUsage averages over one second on Ampere and newer (NVML
// reference); the instantaneous reading is field NVML_FI_DEV_POWER_INSTANT.
constexpr unsigned kFieldPowerInstant = 186;

// nvmlFieldValue_t as nvml.h lays it out.
struct NvmlFieldValue {
    std::uint32_t field_id;
    std::uint32_t scope_id;
    std::int64_t timestamp_us;
    std::int64_t latency_us;
    std::uint32_t value_type;  // nvmlValueType_t
    NvmlReturn status;
    union {
        double d;
        unsigned int ui;
        unsigned long ul;
        unsigned long long ull;
        long long sll;
        int si;
        unsigned short us;
    } value;
};
static_assert(sizeof(NvmlFieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

double field_as_double(const NvmlFieldValue& f) {
    switch (f.value_type) {  // nvmlValueType_t
        case 0: return f.value.d;
        case 1: return f.value.ui;
        case 2: return static_cast<double>(f.value.ul);
        case 3: return static_cast<double>(f.value.ull);
        case 4: return static_cast<double>(f.value.sll);
        case 5: return f.value.si;
        case 6: return f.value.us;
        default: return RawNvmlSample::kMissing;
    }
}

double median(std::vector<double> v) {
    if (v.empty()) return RawNvmlSample::kMissing;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

std::string describe_clock_event_mask(std::uint64_t mask) {
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 9> names{{
        {clock_event::gpu_idle, "gpu_idle"},
        {clock_event::applications_clocks_setting, "applications_clocks_setting"},
        {clock_event::sw_power_cap, "sw_power_cap"},
        {clock_event::hw_slowdown, "hw_slowdown"},
        {clock_event::sync_boost, "sync_boost"},
        {clock_event::sw_thermal_slowdown, "sw_thermal_slowdown"},
        {clock_event::hw_thermal_slowdown, "hw_thermal_slowdown"},
        {clock_event::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
        {clock_event::display_clock_setting, "display_clock_setting"},
    }};
    if (mask == 0) return "none";
    std::string out;
    std::uint64_t rest = mask;
    for (const auto& [bit, label] : names)
        if (mask & bit) {
            out += (out.empty() ? "" : "+") + std::string(label);
            rest &= ~bit;
        }
    if (rest) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(rest));
        out += (out.empty() ? "" : "+") + std::string(buf);
    }
    return out;
}

DeviceSample aggregate(const std::vector<RawNvmlSample>& samples) {
    DeviceSample d;
    std::vector<double> sm, mem;
    double power_sum = 0, power_max = RawNvmlSample::kMissing, temp_max = RawNvmlSample::kMissing;
    int power_n = 0;
    bool any_events = false;
    for (const RawNvmlSample& s : samples) {
        if (std::isfinite(s.sm_clock_mhz)) sm.push_back(s.sm_clock_mhz);
        if (std::isfinite(s.mem_clock_mhz)) mem.push_back(s.mem_clock_mhz);
        if (std::isfinite(s.power_w)) {
            power_sum += s.power_w;
            ++power_n;
            power_max = std::isfinite(power_max) ? std::max(power_max, s.power_w) : s.power_w;
        }
        if (std::isfinite(s.temp_c)) temp_max = std::isfinite(temp_max) ? std::max(temp_max, s.temp_c) : s.temp_c;
        if (s.have_clock_events) {
            d.clock_event_mask |= s.clock_event_mask;
            any_events = true;
        }
    }
    d.sm_clock_mhz = median(sm);
    d.mem_clock_mhz = median(mem);
    d.power_w = power_n ? power_sum / power_n : RawNvmlSample::kMissing;
    d.power_max_w = power_max;
    d.temp_c = temp_max;
    d.throttled = (d.clock_event_mask & clock_event::throttling) != 0;
    d.valid = !sm.empty() || !mem.empty() || power_n > 0 || std::isfinite(temp_max) || any_events;
    return d;
}

DeviceSample median_over_blocks(const std::vector<DeviceSample>& blocks) {
    DeviceSample d;
    std::vector<double> sm, mem, power;
    d.power_max_w = d.temp_c = RawNvmlSample::kMissing;
    const auto keep_max = [](double& into, double v) {
        if (std::isfinite(v)) into = std::isfinite(into) ? std::max(into, v) : v;
    };
    for (const DeviceSample& b : blocks) {
        if (!b.valid) continue;
        d.valid = true;
        if (std::isfinite(b.sm_clock_mhz)) sm.push_back(b.sm_clock_mhz);
        if (std::isfinite(b.mem_clock_mhz)) mem.push_back(b.mem_clock_mhz);
        if (std::isfinite(b.power_w)) power.push_back(b.power_w);
        keep_max(d.power_max_w, b.power_max_w);
        keep_max(d.temp_c, b.temp_c);
        d.clock_event_mask |= b.clock_event_mask;
    }
    d.sm_clock_mhz = median(sm);
    d.mem_clock_mhz = median(mem);
    d.power_w = median(power);
    d.throttled = (d.clock_event_mask & clock_event::throttling) != 0;
    return d;
}

struct NvmlSampler::Impl {
    std::string pci_bus_id;

    // Opened once, on first use.
    bool tried = false;
    std::string reason;  // empty once the device is found
    void* lib = nullptr;
    NvmlDevice dev = nullptr;
    std::string matched_by;
    bool initialized = false;

    NvmlReturn (*init)() = nullptr;
    NvmlReturn (*shutdown)() = nullptr;
    const char* (*error_string)(NvmlReturn) = nullptr;
    NvmlReturn (*handle_by_index)(unsigned, NvmlDevice*) = nullptr;
    NvmlReturn (*handle_by_pci)(const char*, NvmlDevice*) = nullptr;
    NvmlReturn (*clock_info)(NvmlDevice, unsigned, unsigned*) = nullptr;
    NvmlReturn (*max_clock_info)(NvmlDevice, unsigned, unsigned*) = nullptr;
    NvmlReturn (*applications_clock)(NvmlDevice, unsigned, unsigned*) = nullptr;
    NvmlReturn (*power_usage)(NvmlDevice, unsigned*) = nullptr;
    NvmlReturn (*field_values)(NvmlDevice, int, NvmlFieldValue*) = nullptr;
    NvmlReturn (*temperature)(NvmlDevice, unsigned, unsigned*) = nullptr;
    NvmlReturn (*clock_events)(NvmlDevice, unsigned long long*) = nullptr;
    NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
    NvmlReturn (*device_name)(NvmlDevice, char*, unsigned) = nullptr;
    NvmlReturn (*power_limit)(NvmlDevice, unsigned*) = nullptr;
    NvmlReturn (*persistence_mode)(NvmlDevice, unsigned*) = nullptr;
    NvmlReturn (*ecc_mode)(NvmlDevice, unsigned*, unsigned*) = nullptr;
    // Set after the first reading: whether the instantaneous power field works.
    std::atomic<int> instant_power{-1};  // -1 unknown, 0 no, 1 yes

    std::mutex mu;
    std::condition_variable cv;
    std::thread thread;
    bool running = false;
    bool stopping = false;
    std::vector<RawNvmlSample> samples;

    template <typename F>
    void sym(F& f, const char* name) {
        f = reinterpret_cast<F>(::dlsym(lib, name));
    }

    std::string err(NvmlReturn r) const {
        const char* s = error_string ? error_string(r) : nullptr;
        return (s ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(r) + ")";
    }

    bool open() {
        if (tried) return reason.empty();
        tried = true;
        lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* e = ::dlerror();
            reason = std::string("NVML not loaded (dlopen libnvidia-ml.so.1: ") + (e ? e : "unknown error") + ")";
            return false;
        }
        sym(init, "nvmlInit_v2");
        sym(shutdown, "nvmlShutdown");
        sym(error_string, "nvmlErrorString");
        sym(handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
        sym(handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
        sym(clock_info, "nvmlDeviceGetClockInfo");
        sym(max_clock_info, "nvmlDeviceGetMaxClockInfo");
        sym(applications_clock, "nvmlDeviceGetApplicationsClock");
        sym(power_usage, "nvmlDeviceGetPowerUsage");
        sym(field_values, "nvmlDeviceGetFieldValues");
        sym(temperature, "nvmlDeviceGetTemperature");
        sym(clock_events, "nvmlDeviceGetCurrentClocksEventReasons");
        if (!clock_events) sym(clock_events, "nvmlDeviceGetCurrentClocksThrottleReasons");
        sym(driver_version, "nvmlSystemGetDriverVersion");
        sym(device_name, "nvmlDeviceGetName");
        sym(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
        sym(persistence_mode, "nvmlDeviceGetPersistenceMode");
        sym(ecc_mode, "nvmlDeviceGetEccMode");
        if (!init || !shutdown || !handle_by_index) {
            reason = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlShutdown or nvmlDeviceGetHandleByIndex_v2";
            return false;
        }
        if (const NvmlReturn r = init(); r != kNvmlSuccess) {
            reason = "nvmlInit_v2 failed: " + err(r);
            return false;
        }
        initialized = true;
        if (!pci_bus_id.empty() && handle_by_pci && handle_by_pci(pci_bus_id.c_str(), &dev) == kNvmlSuccess) {
            matched_by = "pci_bus_id " + pci_bus_id;
            return true;
        }
        if (const NvmlReturn r = handle_by_index(0, &dev); r != kNvmlSuccess) {
            reason = "no NVML device at index 0: " + err(r);
            return false;
        }
        matched_by = pci_bus_id.empty() ? "index 0" : "index 0 (PCI bus id " + pci_bus_id + " not found by NVML)";
        return true;
    }

    RawNvmlSample read() {
        RawNvmlSample s;
        unsigned v = 0;
        if (clock_info && clock_info(dev, kClockSm, &v) == kNvmlSuccess) s.sm_clock_mhz = v;
        if (clock_info && clock_info(dev, kClockMem, &v) == kNvmlSuccess) s.mem_clock_mhz = v;
        if (field_values && instant_power != 0) {
            NvmlFieldValue f{};
            f.field_id = kFieldPowerInstant;
            const bool ok = field_values(dev, 1, &f) == kNvmlSuccess && f.status == kNvmlSuccess;
            if (ok) s.power_w = field_as_double(f) / 1000.0;  // milliwatts
            if (instant_power < 0) instant_power = ok ? 1 : 0;
        }
        if (!std::isfinite(s.power_w) && instant_power != 1 && power_usage && power_usage(dev, &v) == kNvmlSuccess)
            s.power_w = v / 1000.0;
        if (temperature && temperature(dev, kTemperatureGpu, &v) == kNvmlSuccess) s.temp_c = v;
        unsigned long long reasons = 0;
        if (clock_events && clock_events(dev, &reasons) == kNvmlSuccess) {
            s.clock_event_mask = reasons;
            s.have_clock_events = true;
        }
        return s;
    }

    void loop() {
        std::unique_lock<std::mutex> lk(mu);
        while (!stopping) {
            lk.unlock();
            const RawNvmlSample s = read();
            lk.lock();
            samples.push_back(s);
            cv.wait_for(lk, std::chrono::milliseconds(kIntervalMs), [&] { return stopping; });
        }
    }

    void join() {
        {
            std::lock_guard<std::mutex> lk(mu);
            stopping = true;
        }
        cv.notify_all();
        if (thread.joinable()) thread.join();
        running = false;
    }
};

NvmlSampler::NvmlSampler(std::string pci_bus_id) : impl_(std::make_unique<Impl>()) {
    impl_->pci_bus_id = std::move(pci_bus_id);
}

NvmlSampler::~NvmlSampler() {
    impl_->join();
    // The library stays loaded: unloading NVML while the process runs buys nothing.
    if (impl_->initialized) impl_->shutdown();
}

std::string NvmlSampler::unavailable_reason() {
    impl_->open();
    return impl_->reason;
}

void NvmlSampler::start() {
    Impl& m = *impl_;
    if (m.running) m.join();
    if (!m.open()) return;
    m.samples.clear();
    m.samples.push_back(m.read());
    m.stopping = false;
    m.running = true;
    m.thread = std::thread([&m] { m.loop(); });
}

DeviceSample NvmlSampler::stop() {
    Impl& m = *impl_;
    if (!m.running) return {};
    m.join();
    m.samples.push_back(m.read());
    return aggregate(m.samples);
}

std::vector<std::pair<std::string, std::string>> NvmlSampler::describe() {
    Impl& m = *impl_;
    if (!m.open()) return {{"nvml", m.reason}};
    std::vector<std::pair<std::string, std::string>> f;
    char buf[96] = {};
    unsigned v = 0, pending = 0;
    if (m.driver_version && m.driver_version(buf, sizeof buf) == kNvmlSuccess)
        f.push_back({"nvml_driver_version", buf});
    if (m.device_name && m.device_name(m.dev, buf, sizeof buf) == kNvmlSuccess)
        f.push_back({"nvml_device_name", buf});
    f.push_back({"nvml_device_match", m.matched_by});
    if (m.power_limit && m.power_limit(m.dev, &v) == kNvmlSuccess) {
        std::snprintf(buf, sizeof buf, "%.1f", v / 1000.0);  // milliwatts
        f.push_back({"gpu_power_limit_w", buf});
    }
    if (m.max_clock_info && m.max_clock_info(m.dev, kClockSm, &v) == kNvmlSuccess)
        f.push_back({"gpu_sm_clock_max_mhz", std::to_string(v)});
    if (m.max_clock_info && m.max_clock_info(m.dev, kClockMem, &v) == kNvmlSuccess)
        f.push_back({"gpu_mem_clock_max_mhz", std::to_string(v)});
    if (m.applications_clock && m.applications_clock(m.dev, kClockSm, &v) == kNvmlSuccess)
        f.push_back({"gpu_sm_app_clock_mhz", std::to_string(v)});
    // A reading, not a setting: it changes from run to run (idle vs loaded).
    if (m.clock_info && m.clock_info(m.dev, kClockSm, &v) == kNvmlSuccess)
        f.push_back({"gpu_sm_clock_now_mhz", std::to_string(v)});
    if (m.persistence_mode && m.persistence_mode(m.dev, &v) == kNvmlSuccess)
        f.push_back({"gpu_persistence_mode", v ? "enabled" : "disabled"});
    if (m.ecc_mode && m.ecc_mode(m.dev, &v, &pending) == kNvmlSuccess)
        f.push_back({"gpu_ecc_mode", v ? "enabled" : "disabled"});
    if (m.instant_power < 0 && m.field_values) m.read();  // learn which power reading works
    f.push_back({"nvml_power_reading", m.instant_power == 1
                                           ? "instantaneous (NVML_FI_DEV_POWER_INSTANT)"
                                           : "nvmlDeviceGetPowerUsage (1 s average on Ampere and newer)"});
    return f;
}

}  // namespace rigel
