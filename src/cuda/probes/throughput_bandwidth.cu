// The bandwidth probe: the device-memory bandwidth the card sustains, the
// roofline's slanted roof, measured two ways with the clock and power beside it:
//   (a) cudaMemcpyAsync device to device: each copy reads and writes its bytes,
//       so 2 x bytes move; verified by the read kernel's checksum of the copy;
//   (b) a streaming read kernel: every 16-byte word loaded once (uint4 loads,
//       grid-stride), summed into a checksum the host knows in closed form
//       (word i holds i, so the sum of n words is n(n-1)/2).
// Buffers are 4 GiB (256 MiB with --quick), many times the 60 MB L2, so the
// samples come from HBM; each sample is one operation between CUDA events.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "harness/nvml_sampler.hpp"
#include "harness/timing.hpp"
#include "probes/finding_text.hpp"
#include "probes/probe.hpp"

namespace rigel::probes {
namespace {

constexpr const char* probe_name = "bandwidth";
constexpr int kThreads = 512;

__global__ void fill_index_kernel(std::uint32_t* p, std::uint64_t n) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
         i += std::uint64_t{gridDim.x} * blockDim.x)
        p[i] = static_cast<std::uint32_t>(i);
}

// Sums every 32-bit word of `words` (a multiple of 4) into *sum.
__global__ void __launch_bounds__(kThreads) read_sum_kernel(const uint4* __restrict__ p, std::uint64_t vecs,
                                                            unsigned long long* sum) {
    unsigned long long s = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < vecs;
         i += std::uint64_t{gridDim.x} * blockDim.x) {
        const uint4 v = p[i];
        s += std::uint64_t{v.x} + v.y + v.z + v.w;
    }
    for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, s);
}

struct Measured {
    TimingStats stats;
    DeviceSample sample;
};

template <class Op>
Measured measure_op(EventTimer& timer, const Op& op, bool quick, NvmlSampler* sampler) {
    TimingConfig warm{.warmup_s = quick ? 0.02 : 1.0, .min_time_s = 0, .min_reps = 1, .max_reps = 1};
    (void)measure([&] { return timer.seconds(op); }, warm);  // clocks and power settle
    Measured m;
    if (sampler) sampler->start();
    const int reps = quick ? 3 : 20;
    m.stats = measure([&] { return timer.seconds(op); },
                      TimingConfig{.warmup_s = 0, .min_time_s = 0, .min_reps = reps, .max_reps = reps});
    if (sampler) m.sample = sampler->stop();
    return m;
}

Finding bandwidth_finding(const std::string& path, double bytes, const Measured& m, bool verified,
                          const std::string& how, const std::string& kernel, bool datasheet) {
    Finding f = make_finding(probe_name, path, "", "sustained memory bandwidth");
    const double tbs = bytes / m.stats.median_s * 1e-12;
    f.measured = fmt_fixed(tbs, 2);
    f.value = tbs;
    f.unit = "TB/s";
    f.verified = verified;
    f.relation = DocRelation::fills_in;
    if (datasheet) {
        f.expected = "4.8 (datasheet peak, H200 SXM HBM3e)";
        f.doc_statement = "memory bandwidth 4.8 TB/s (H200 SXM), a peak figure";
        f.doc_source = "NVIDIA H200 datasheet";
    } else {
        f.doc_statement = "no sustained bandwidth is documented";
    }
    f.detail = how + "; median of " + std::to_string(m.stats.reps) + " samples of " +
               fmt_fixed(m.stats.median_s * 1e3, 3) + " ms, noise " + fmt_fixed(m.stats.noise_rel * 100, 1) + "%.";
    f.kernel = kernel;
    if (m.sample.valid) {
        f.sm_clock_mhz = m.sample.sm_clock_mhz;
        f.power_w = m.sample.power_w;
        f.power_max_w = m.sample.power_max_w;
        f.temp_c = m.sample.temp_c;
        f.clock_event_mask = m.sample.clock_event_mask;
    }
    return f;
}

}  // namespace

std::vector<Finding> run_bandwidth(const ProbeContext& ctx) {
    const std::uint64_t bytes = ctx.quick ? (std::uint64_t{256} << 20) : (std::uint64_t{4} << 30);
    const std::uint64_t words = bytes / 4, vecs = bytes / 16;
    const DeviceFacts facts = device_facts();
    const bool datasheet = facts.name.find("H200") != std::string::npos;
    const unsigned blocks = static_cast<unsigned>(facts.sms) * 4;

    const auto sampler = current_device_sampler();

    DeviceArray<std::uint32_t> src(words), dst(words);
    DeviceArray<unsigned long long> sum(1);
    fill_index_kernel<<<blocks, kThreads>>>(src.get(), words);
    RIGEL_CUDA_CHECK(cudaGetLastError());
    dst.fill_bytes(0xA5);  // poisoned: the copy must overwrite all of it
    const unsigned long long want = static_cast<unsigned long long>(words) * (words - 1) / 2;
    const auto checksum_of = [&](const std::uint32_t* p) {
        sum.fill_bytes(0);
        read_sum_kernel<<<blocks, kThreads>>>(reinterpret_cast<const uint4*>(p), vecs, sum.get());
        RIGEL_CUDA_CHECK(cudaGetLastError());
        return sum.download()[0];
    };

    report(ctx, "bandwidth: " + std::to_string(bytes >> 20) + " MiB buffers");
    EventTimer timer;
    std::vector<Finding> out;

    const Measured copy = measure_op(
        timer, [&] { RIGEL_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice)); },
        ctx.quick, sampler.get());
    const unsigned long long copied = checksum_of(dst.get());
    out.push_back(bandwidth_finding("cudaMemcpyAsync device to device", 2.0 * double(bytes), copy, copied == want,
                                    std::to_string(bytes >> 20) + " MiB copied per sample, read and written (2 x " +
                                        "bytes counted); the copy's checksum " + std::to_string(copied) +
                                        " vs the source's " + std::to_string(want),
                                    "", datasheet));

    const Measured read = measure_op(
        timer,
        [&] {
            read_sum_kernel<<<blocks, kThreads>>>(reinterpret_cast<const uint4*>(src.get()), vecs, sum.get());
            RIGEL_CUDA_CHECK(cudaGetLastError());
        },
        ctx.quick, sampler.get());
    const unsigned long long got = checksum_of(src.get());
    out.push_back(bandwidth_finding("streaming read kernel (ld.global 16-byte words)", double(bytes), read, got == want,
                                    std::to_string(bytes >> 20) + " MiB read per sample, " + std::to_string(blocks) +
                                        " blocks of " + std::to_string(kThreads) + "; checksum " +
                                        std::to_string(got) + " vs exact " + std::to_string(want),
                                    kernel_symbol(reinterpret_cast<const void*>(read_sum_kernel)), datasheet));
    return out;
}

}  // namespace rigel::probes
