// Probe tma_box_rate: does a TMA load of the 128B-swizzled boxes a GEMM's producer issues slow down
// when the boxes start between the 128-byte lines of the contiguous dimension?
//
// One CTA an SM. Its first thread walks K in 64 steps of 64, `passes` times, each step the B of a
// 128-wide tile (probes/throughput/tma_box_rate.hpp): two 64-column boxes of an MN-major matrix,
// starting on the lines or 16 or 80 bytes past them, or one 128-row box of a K-major one, into a ring of
// 8 stages of 16 KB on the library's maps (make_map_128b: 128B swizzle, L2 promotion 256 bytes), each
// stage reloaded as soon as its last load has landed. Nothing is computed; the matrix (35.7 MB) stays in
// L2 after the first pass. After the walk every thread checks its share of the last step's stage against
// the matrix's values at their swizzled places, so a rate is reported only for boxes that arrived whole
// and where they belong.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/hopper/sm90.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "probes/probe.hpp"
#include "probes/throughput/pingpong_timeline.hpp"
#include "probes/throughput/tma_box_rate.hpp"

namespace rigel::probes {
namespace {

using namespace tmarate;
constexpr const char* probe_name = "tma_box_rate";
constexpr int kSmemBytes = kStages * kStepBytes + 1024;
constexpr int kReps = 5;
constexpr long long kPasses = 150;  // 157 MB a CTA: about 2 ms a launch at 10 TB/s

// cycles: grid (each CTA's walk, its first thread's SM clock); mismatches: one counter.
__global__ void __launch_bounds__(kThreads, 1)
    tma_rate_kernel(const __grid_constant__ CUtensorMap map, bool mn_major, int offset, long long passes,
                    long long* cycles, int* mismatches) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ alignas(8) std::uint64_t full[kStages];
    unsigned char* const ring = cuda::sm90::align_to_atom(smem_raw);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) cuda::sm90::mbar_init(&full[s], 1);
        cuda::sm90::fence_mbarrier_init();
    }
    __syncthreads();
    const int col0 = first_col(static_cast<int>(blockIdx.x), offset);
    const long long steps = passes * kKSteps;
    if (threadIdx.x == 0) {
        const long long t0 = clock64();
        for (long long i = 0; i < steps + kStages; ++i) {
            if (i >= kStages) {  // the stage's previous step has landed: it may be loaded again
                const long long j = i - kStages;
                cuda::sm90::mbar_wait(&full[j % kStages], static_cast<std::uint32_t>((j / kStages) & 1));
            }
            if (i < steps) {
                const int s = static_cast<int>(i % kStages);
                const int k0 = static_cast<int>(i % kKSteps) * 64;
                unsigned char* const stage = ring + s * kStepBytes;
                cuda::sm90::mbar_arrive_expect_tx(&full[s], kStepBytes);
                if (mn_major) {
                    cuda::sm90::tma_load_2d(stage, &map, &full[s], col0, k0);
                    cuda::sm90::tma_load_2d(stage + kBoxBytes, &map, &full[s], col0 + 64, k0);
                } else {
                    cuda::sm90::tma_load_2d(stage, &map, &full[s], k0, col0);
                }
            }
        }
        cycles[blockIdx.x] = clock64() - t0;
    }
    __syncthreads();
    // The last step's stage, every element against the matrix. Each thread waits on the stage's
    // barrier itself (its phase has completed, so the wait returns at once): what makes the TMA's writes
    // visible to it.
    const long long last = steps - 1;
    cuda::sm90::mbar_wait(&full[last % kStages], static_cast<std::uint32_t>((last / kStages) & 1));
    const unsigned char* const stage = ring + (last % kStages) * kStepBytes;
    const int k0 = static_cast<int>(last % kKSteps) * 64;
    int bad = 0;
    for (int i = static_cast<int>(threadIdx.x); i < kStepBytes / 2; i += kThreads) {
        const Element e = step_element(mn_major, i, col0, k0);
        const float got = __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(stage + e.offset));
        if (got != static_cast<float>(value(e.row, e.col))) ++bad;
    }
    if (bad) atomicAdd(mismatches, bad);
#else
    if (threadIdx.x == 0 && blockIdx.x == 0) *mismatches = -1;
#endif
}

struct Launched {
    double bytes_per_cycle = 0;  // a CTA's bytes over its cycles, median over CTAs
    double tbps = 0;             // all CTAs' bytes over the launch's time
    int mismatches = 0;
};

Launched launch(EventTimer& timer, const CUtensorMap& map, const Case& c, int grid, long long passes,
                DeviceArray<long long>& cycles, DeviceArray<int>& mismatches) {
    RIGEL_CUDA_CHECK(cudaFuncSetAttribute(tma_rate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    mismatches.fill_bytes(0);
    const double seconds = timer.seconds([&] {
        tma_rate_kernel<<<grid, kThreads, kSmemBytes>>>(map, c.mn_major, c.offset, passes, cycles.get(),
                                                         mismatches.get());
        RIGEL_CUDA_CHECK_LAUNCH();
    });
    Launched l;
    l.mismatches = mismatches.download()[0];
    std::vector<double> per_cta;
    for (const long long cyc : cycles.download()) per_cta.push_back(cta_bytes(passes) / static_cast<double>(cyc));
    l.bytes_per_cycle = timeline::quantile(per_cta, 0.5);
    l.tbps = static_cast<double>(grid) * cta_bytes(passes) / seconds * 1e-12;
    return l;
}

}  // namespace

std::vector<Finding> run_tma_box_rate(const ProbeContext& ctx) {
    std::vector<Finding> out;
    const std::string path =
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile (128B swizzle, bf16; MN-major 64 x 64 boxes, K-major 64 x "
        "128)";
    if (ctx.compute_capability < 90 || !kernel_has_image(tma_rate_kernel)) {
        out.push_back(not_available(probe_name, path, "bf16", "TMA box load rate by alignment",
                                    "TMA exists from compute capability 9.0; device has " +
                                        std::to_string(ctx.compute_capability)));
        return out;
    }
    const DeviceFacts dev = device_facts();
    const int grid = dev.sms;
    std::vector<std::uint16_t> host(std::size_t(kDim) * kDim);
    for (int r = 0; r < kDim; ++r)
        for (int c = 0; c < kDim; ++c) {
            const __nv_bfloat16 b = __float2bfloat16_rn(static_cast<float>(value(r, c)));
            host[std::size_t(r) * kDim + c] = *reinterpret_cast<const std::uint16_t*>(&b);
        }
    const DeviceArray<std::uint16_t> matrix(host);
    // MN-major: rows of K, boxes of 64 columns x 64 rows; K-major: rows of N, boxes of 64 of K x 128 rows.
    const CUtensorMap map_mn = cuda::sm90::make_map_128b(matrix.get(), DType::bf16, kDim, kDim, kDim, 64);
    const CUtensorMap map_k = cuda::sm90::make_map_128b(matrix.get(), DType::bf16, kDim, kDim, kDim, kTileCols);
    DeviceArray<long long> cycles(static_cast<std::size_t>(grid));
    DeviceArray<int> mismatches(1);
    EventTimer timer;
    const long long passes = ctx.quick ? 5 : kPasses;

    struct Result {
        double bytes_per_cycle = 0, tbps = 0;
        bool ok = false;
    };
    std::vector<Result> results;
    for (const Case& c : kCases) {
        report(ctx, std::string("tma_box_rate: ") + c.name);
        const CUtensorMap& map = c.mn_major ? map_mn : map_k;
        bool ok = launch(timer, map, c, grid, 1, cycles, mismatches).mismatches == 0;
        ok = launch(timer, map, c, grid, passes, cycles, mismatches).mismatches == 0 && ok;  // warm
        std::vector<double> bpc, tb;
        for (int r = 0; r < kReps; ++r) {
            const Launched l = launch(timer, map, c, grid, passes, cycles, mismatches);
            ok = ok && l.mismatches == 0;
            bpc.push_back(l.bytes_per_cycle);
            tb.push_back(l.tbps);
        }
        results.push_back({timeline::quantile(bpc, 0.5), timeline::quantile(tb, 0.5), ok});
    }

    const std::string doc = "a tiled load's box may start at any coordinate inside the tensor (the tensor's base "
                            "16-byte aligned, its strides multiples of 16 bytes); silent on whether a box that "
                            "starts between 128-byte lines loads slower";
    const double aligned = results[1].bytes_per_cycle;  // MN-major on the lines
    for (std::size_t i = 0; i < kCases.size(); ++i) {
        const Case& c = kCases[i];
        const Result& r = results[i];
        const std::string checks = std::string(r.ok ? "Every element of the last step's stage" : "CHECK FAILED: the "
                                                                                                  "last step's stage") +
                                   " checked against the matrix at its swizzled place, " +
                                   std::to_string(kReps + 2) + " launches.";
        const RowSource src{probe_name, path, "bf16", doc,
                            "CUDA driver API, cuTensorMapEncodeTiled; PTX ISA 9.0, cp.async.bulk.tensor",
                            kernel_symbol(reinterpret_cast<const void*>(tma_rate_kernel)), r.ok};
        const auto row = [&](const std::string& quantity, double value, int decimals, const std::string& unit,
                             const std::string& expected, const std::string& detail) {
            out.push_back(value_row(src, quantity, value, decimals, unit, expected, detail + " " + checks));
        };
        const bool unaligned = c.mn_major && c.offset != 0;
        row("TMA bytes a clock an SM: " + std::string(c.name), r.bytes_per_cycle, 1, "B/clk",
            unaligned ? fmt_fixed(aligned, 1) : "",
            "one CTA an SM (" + std::to_string(grid) + "), its producer thread's " + fmt_fixed(cta_bytes(passes) / 1e6, 1) +
                " MB over its SM clock cycles, the median over CTAs in each launch, then the median of " +
                std::to_string(kReps) + " launches" +
                (unaligned ? "; " + fmt_fixed(r.bytes_per_cycle / aligned, 3) + " of the same boxes on the lines" : "") +
                ".");
        row("TMA aggregate bandwidth: " + std::string(c.name), r.tbps, 2, "TB/s", "",
            "all CTAs' bytes over the launch's time (CUDA events, the launch's own start and the check of the last "
            "stage included), the median of " + std::to_string(kReps) + " launches; the " +
                fmt_fixed(footprint_bytes(c.offset) / 1e6, 1) + " MB the walks read stay in L2 after the first of " +
                std::to_string(passes) + " passes." +
                (ctx.quick ? " A quick run's launches are short, so the start's share lowers this rate." : ""));
    }
    return out;
}

}  // namespace rigel::probes
