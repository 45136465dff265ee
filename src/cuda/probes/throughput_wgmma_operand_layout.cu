// Probe wgmma_operand_layout: does the way the operands sit in shared memory (K-major or MN-major, in
// the 128-byte swizzle the library's TMA loads write), or an N that ends inside a 64-column slab of an
// MN-major B, change the cycles of a wgmma m64nNk16 bf16?
//
// One CTA an SM (its dynamic shared memory keeps a second away), two warpgroups, as the library's
// ping-pong kernel has two consumers. Each warpgroup runs a chain on one accumulator: commit groups of
// the four k16 steps of a 64-deep operand with B, then with B negated, one group waited for while the
// next runs (a main loop's rhythm), and times it with the SM clock. A and B are staged once, from
// images the host lays out (probes/throughput/wgmma_operand_layout.hpp), and read through the
// descriptors the library's kernels build (LBO, SBO and the k-step advance of operand_desc and
// operand_k_step). The operands are small integers, so the accumulators return to A B exactly; every
// thread adds its accumulators times a weight of each element's (row, column), so an element computed
// in the wrong place changes the checksum: each launch's is compared with the host's, and a short
// launch that adds B every step shows that the loop does its work.
#include <cuda_bf16.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/formats.hpp"
#include "cuda/hopper/sm90.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "cuda/probes/wgmma_ptx.cuh"
#include "probes/layouts/fragment_maps.hpp"
#include "probes/numerics/numerics_model.hpp"
#include "probes/probe.hpp"
#include "probes/throughput/pingpong_timeline.hpp"
#include "probes/throughput/throughput_arith.hpp"
#include "probes/throughput/wgmma_operand_layout.hpp"

namespace rigel::probes {
namespace {

using oplayout::Major;
constexpr const char* probe_name = "wgmma_operand_layout";
constexpr int kThreads = 128 * oplayout::kChains;
constexpr int kSmemBytes = 150 * 1024;  // no second CTA fits beside; the operands take at most 73 KB of it
constexpr int kReps = 5;
constexpr long long kIterations = 4000;  // 32,004 wgmma a chain: about 2-5 ms a launch at N = 128-256

template <Major M>
__device__ __forceinline__ std::uint64_t layout_desc(const void* tile) {
    constexpr oplayout::DescFields f = oplayout::desc_fields(M);
    return cuda::sm90::SmemDescriptor{.start_address = cuda::sm90::smem_u32(tile),
                                      .leading_byte_offset = f.lbo,
                                      .stride_byte_offset = f.sbo,
                                      .swizzle = cuda::sm90::Swizzle::b128}
        .encode();
}

template <Major M>
__device__ __forceinline__ std::uint64_t layout_step(std::uint64_t desc, int j) {
    return cuda::sm90::desc_advance(desc, j * static_cast<int>(oplayout::desc_fields(M).k_step_bytes));
}

// sums: grid x kThreads (each thread's weighted accumulators plus its iterations); cycles: grid x
// kChains (each chain's, from the CTA's common start to its last wait).
template <int N, Major MA, Major MB>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_layout_kernel(const uint4* a, const uint4* bp, const uint4* bm, long long iters, double* sums,
                        long long* cycles, int* built) {
    extern __shared__ __align__(1024) std::uint8_t smem_raw[];
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = wgmma_compiled() ? 1 : 0;
    if constexpr (wgmma_compiled()) {
        constexpr int a_bytes = oplayout::operand_bytes(MA, oplayout::kM);
        constexpr int b_bytes = oplayout::operand_bytes(MB, N);
        static_assert(a_bytes % 1024 == 0 && b_bytes % 1024 == 0, "every operand starts on a swizzle atom");
        static_assert(1024 + a_bytes + 2 * b_bytes <= kSmemBytes, "the operands fit the request");
        __shared__ long long start;  // the CTA's common start: both chains' cycles count from it
        const int tid = static_cast<int>(threadIdx.x);
        // The swizzle is applied to shared-memory address bits, so each operand starts 1024-aligned.
        const std::uint32_t raw = cuda::sm90::smem_u32(smem_raw);
        std::uint8_t* const sa = smem_raw + ((1024 - raw % 1024) % 1024);
        std::uint8_t* const sbp = sa + a_bytes;
        std::uint8_t* const sbm = sbp + b_bytes;
        for (int i = tid; i < a_bytes / 16; i += kThreads) reinterpret_cast<uint4*>(sa)[i] = a[i];
        for (int i = tid; i < b_bytes / 16; i += kThreads) {
            reinterpret_cast<uint4*>(sbp)[i] = bp[i];
            reinterpret_cast<uint4*>(sbm)[i] = bm[i];
        }
        fence_proxy_async_smem();
        if (tid == 0) start = clock64();
        __syncthreads();
        constexpr int ta = MA == Major::mn ? 1 : 0, tb = MB == Major::mn ? 1 : 0;
        using W = cuda::sm90::Wgmma<DType::bf16, N>;
        const std::uint64_t da = layout_desc<MA>(sa), dbp = layout_desc<MB>(sbp), dbm = layout_desc<MB>(sbm);
        float acc[N / 2];
#pragma unroll
        for (int i = 0; i < N / 2; ++i) acc[i] = 0;
        for (long long it = 0; it < iters; ++it) {
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < oplayout::kKSteps; ++j)
                W::template mma<ta, tb>(acc, layout_step<MA>(da, j), layout_step<MB>(dbp, j), 1u);
#pragma unroll
            for (int j = 0; j < oplayout::kKSteps; ++j)
                W::template mma<ta, tb>(acc, layout_step<MA>(da, j), layout_step<MB>(dbm, j), 1u);
            wgmma_commit();
            cuda::sm90::wgmma_wait<1>();
        }
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < oplayout::kKSteps; ++j)
            W::template mma<ta, tb>(acc, layout_step<MA>(da, j), layout_step<MB>(dbp, j), 1u);
        wgmma_commit();
        wgmma_wait_all();
        const long long t1 = clock64();
        const int chain = tid / 128, lt = tid % 128;
        if (lt == 0) cycles[blockIdx.x * oplayout::kChains + chain] = t1 - start;
        double s = static_cast<double>(iters);
#pragma unroll
        for (int i = 0; i < N / 2; ++i) {
            fence_operand(acc[i]);
            const Coord p = wgmma_d_coord(lt, i);
            s += static_cast<double>(acc[i]) * oplayout::weight(p.row, p.col);
        }
        sums[static_cast<std::size_t>(blockIdx.x) * kThreads + tid] = s;
    }
}

struct Buffers {
    const DeviceArray<std::uint8_t>&a, &bp, &bm;
    DeviceArray<double>& sums;
    DeviceArray<long long>& cycles;
    DeviceArray<int>& built;
};

struct Launched {
    double checksum = 0;
    double sm_cycles = 0;  // the SM's cycles a wgmma, median over CTAs
};

template <int N, Major MA, Major MB>
Launched launch_layout(const Buffers& b, int grid, long long iters, bool verify) {
    const auto kernel = wgmma_layout_kernel<N, MA, MB>;
    RIGEL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    kernel<<<grid, kThreads, kSmemBytes>>>(reinterpret_cast<const uint4*>(b.a.get()),
                                           reinterpret_cast<const uint4*>(b.bp.get()),
                                           reinterpret_cast<const uint4*>(verify ? b.bp.get() : b.bm.get()), iters,
                                           b.sums.get(), b.cycles.get(), b.built.get());
    RIGEL_CUDA_CHECK_LAUNCH();
    RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
    if (b.built.download()[0] != 1) throw std::runtime_error("wgmma_operand_layout: kernel built without wgmma");
    Launched l;
    for (const double s : b.sums.download()) l.checksum += s;
    const std::vector<long long> cyc = b.cycles.download();
    std::vector<double> per_sm;
    for (int c = 0; c < grid; ++c) {
        const long long slower = std::max(cyc[std::size_t(c) * oplayout::kChains], cyc[std::size_t(c) * oplayout::kChains + 1]);
        per_sm.push_back(oplayout::sm_cycles_per_wgmma(static_cast<double>(slower), iters));
    }
    l.sm_cycles = timeline::quantile(per_sm, 0.5);
    return l;
}

using LaunchFn = Launched (*)(const Buffers&, int, long long, bool);
struct Variant {
    int n;
    Major a, b;
    LaunchFn launch;
    const void* kernel;
};
template <int N, Major MA, Major MB>
Variant variant() {
    return {N, MA, MB, &launch_layout<N, MA, MB>, reinterpret_cast<const void*>(wgmma_layout_kernel<N, MA, MB>)};
}
template <int N>
std::array<Variant, 4> variants_of() {
    return {variant<N, Major::k, Major::k>(), variant<N, Major::k, Major::mn>(), variant<N, Major::mn, Major::k>(),
            variant<N, Major::mn, Major::mn>()};
}
std::vector<Variant> all_variants() {
    std::vector<Variant> v;
    for (const auto& four : {variants_of<40>(), variants_of<64>(), variants_of<104>(), variants_of<128>(),
                             variants_of<168>(), variants_of<176>(), variants_of<192>(), variants_of<256>()})
        v.insert(v.end(), four.begin(), four.end());
    if (v.size() != 4 * oplayout::kNs.size()) throw std::logic_error("wgmma_operand_layout: a kernel for every N");
    return v;
}

std::vector<std::uint16_t> bf16_bits(const std::vector<double>& v, double sign) {
    std::vector<std::uint16_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<std::uint16_t>(*encode(DType::bf16, sign * v[i]));
    return out;
}

std::string path_of(int n) {
    return "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
           "k16.f32.bf16.bf16 (operands in shared memory, 128B swizzle)";
}

}  // namespace

std::vector<Finding> run_wgmma_operand_layout(const ProbeContext& ctx) {
    std::vector<Finding> out;
    const std::vector<Variant> variants = all_variants();
    if (ctx.compute_capability != 90 || !kernel_has_image(wgmma_layout_kernel<128, Major::k, Major::k>)) {
        out.push_back(not_available(probe_name, path_of(128), "bf16", "wgmma cycles by operand layout",
                                    "wgmma exists on compute capability 9.0 (sm_90a) only; device has " +
                                        std::to_string(ctx.compute_capability)));
        return out;
    }
    const DeviceFacts dev = device_facts();
    const int grid = dev.sms;
    constexpr int max_n = oplayout::kNs.back();
    SplitMix rng(wgmma_operand_seed(ctx.seed, DType::bf16, max_n) + 11);
    std::vector<double> am(std::size_t(oplayout::kM) * oplayout::kDepth), bmat(std::size_t(max_n) * oplayout::kDepth);
    for (auto& x : am) x = small_int(rng);
    for (auto& x : bmat) x = small_int(rng);
    const long long iters = ctx.quick ? 200 : kIterations;
    DeviceArray<double> sums(std::size_t(grid) * kThreads);
    DeviceArray<long long> cycles(std::size_t(grid) * oplayout::kChains);
    DeviceArray<int> built(1);

    struct Result {
        double cycles = 0;
        bool ok = false;
    };
    std::vector<Result> results;
    for (const Variant& v : variants) {
        report(ctx, "wgmma_operand_layout: m64n" + std::to_string(v.n) + "k16, " + oplayout::layout_name(v.a, v.b));
        const std::vector<double> bn(bmat.begin(), bmat.begin() + std::ptrdiff_t(v.n) * oplayout::kDepth);
        const DeviceArray<std::uint8_t> da(oplayout::operand_image(v.a, oplayout::kM, bf16_bits(am, 1.0)));
        const DeviceArray<std::uint8_t> dbp(oplayout::operand_image(v.b, v.n, bf16_bits(bn, 1.0)));
        const DeviceArray<std::uint8_t> dbm(oplayout::operand_image(v.b, v.n, bf16_bits(bn, -1.0)));
        const Buffers b{da, dbp, dbm, sums, cycles, built};
        const double weighted = oplayout::weighted_product(am, bn, v.n);
        const Launched check = v.launch(b, grid, 2, true);
        bool ok = check.checksum == oplayout::launch_checksum(grid, weighted, 2, true);
        const double want = oplayout::launch_checksum(grid, weighted, iters, false);
        ok = v.launch(b, grid, iters, false).checksum == want && ok;  // warm
        std::vector<double> cyc;
        for (int r = 0; r < kReps; ++r) {
            const Launched l = v.launch(b, grid, iters, false);
            ok = ok && l.checksum == want;
            cyc.push_back(l.sm_cycles);
        }
        results.push_back({timeline::quantile(cyc, 0.5), ok});
    }

    const std::string doc =
        "the matrix descriptor's layouts (K-major and MN-major, each in every swizzle mode) are equally valid "
        "operands of wgmma.mma_async; silent on whether a layout, or an N that is no multiple of the swizzle "
        "atom's width, costs cycles";
    for (std::size_t i = 0; i < variants.size(); ++i) {
        const Variant& v = variants[i];
        const Result& r = results[i];
        const Result& both_k = results[i - i % 4];  // the same N with A and B K-major
        const RowSource src{probe_name, path_of(v.n), "bf16", doc,
                            "PTX ISA 9.0, wgmma.mma_async, \"Shared Memory Matrix Layout\" and \"Matrix Descriptor "
                            "Format\"",
                            kernel_symbol(v.kernel), r.ok};
        Finding f = value_row(
            src,
            "SM cycles a wgmma, A " + oplayout::major_name(v.a) + ", B " + oplayout::major_name(v.b) + " (layout " +
                oplayout::layout_name(v.a, v.b) + ")",
            r.cycles, 2, "cycles", fmt_fixed(oplayout::ideal_cycles(v.n), 0),
            "the slower of two warpgroups' chains (one CTA an SM, " + std::to_string(grid) + " CTAs) over both chains' " +
                fmt_fixed(2.0 * oplayout::wgmmas_per_chain(iters), 0) + " instructions, the median over CTAs and " +
                std::to_string(kReps) + " launches; " + fmt_fixed(r.cycles / oplayout::ideal_cycles(v.n), 3) +
                " of N / 2 (2,048 multiply-adds a clock)" +
                (i % 4 == 0 ? "" : ", " + fmt_fixed(r.cycles / both_k.cycles, 3) + " of both operands K-major at this N") +
                ". " + (r.ok ? "Checksums exact" : "CHECK FAILED") + ": every element of D weighted by its (row, column), " +
                std::to_string(kReps + 1) + " launches and a short run of B twice.");
        f.swept = v.n;  // the N of the sweep, typed (reproduce/operand_layout_report.py reads it)
        out.push_back(std::move(f));
    }
    return out;
}

}  // namespace rigel::probes
