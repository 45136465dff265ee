// Probe wgmma_corun: does other warps' work on the same SM slow a running wgmma chain?
//
// One CTA an SM (a large dynamic shared-memory request keeps a second one away), two warpgroups. The
// first runs a chain of m64n128k16 bf16 wgmma from shared memory, eight a commit group with one group
// waited for while the next runs (a main loop's rhythm), and times it with the SM clock. The second
// warpgroup, one warp on each of the four sub-partitions beside one of the chain's warps, issues one
// kind of instruction (probes/throughput/wgmma_corun.hpp lists them) until the chain's warpgroup
// raises a flag in shared memory. The chain's operands are small integers, B and then B negated, so
// its accumulators return to A B exactly: every launch's checksum is compared with that, and the
// counting co-runners' chains with their step counts. Each co-runner also runs alone (the first
// warpgroup asleep for as long as the chain took), beside the chain on two accumulators (as the
// ping-pong consumer issues its tile's two halves), and beside the chain issued from the second
// warpgroup. The host half (the kinds, the arithmetic) is probes/throughput/wgmma_corun.hpp; what it
// found, and what it did not explain in the library's kernel, is in docs/gemm.md ("The epilogue's code
// and the other consumer's main loop").
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/gelu.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/sm90_cluster.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "cuda/probes/wgmma_ptx.cuh"
#include "probes/layouts/fragment_maps.hpp"
#include "probes/probe.hpp"
#include "probes/throughput/pingpong_timeline.hpp"
#include "probes/throughput/throughput_arith.hpp"
#include "probes/throughput/wgmma_corun.hpp"

namespace rigel::probes {
namespace {

constexpr const char* probe_name = "wgmma_corun";
constexpr int kN = 128;
constexpr int kRowBytes = 32;                    // one instruction's K of bf16
constexpr int kPadBytes = 150 * 1024;            // dynamic shared memory no second CTA fits beside
constexpr int kThreads = 256;
constexpr int kReps = 5;

struct CoParams {
    float a, b, alpha, bias;
    const float* ones;  // kOnes floats of 1.0 (the ldg co-runner's, 12 KB)
    float* window;      // the stg co-runners': corun::kStgWarpFloats a warp
};
constexpr int kOnes = 3072;

// One co-runner thread's chains until the flag rises; its chain sum, loop iterations and cycles out.
template <corun::Kind K>
__device__ void co_run(const volatile int* done, const CoParams& p, double* chain_sum, long long* iterations,
                       long long* cycles, std::uint32_t stage) {
    using corun::Kind;
    float r[corun::kChains];
#pragma unroll
    for (int j = 0; j < corun::kChains; ++j) r[j] = static_cast<float>(j);
    long long n = 0;
    const long long t0 = clock64();
    while (*done == 0) {
#pragma unroll
        for (int u = 0; u < corun::unroll(K); ++u) {
#pragma unroll
            for (int j = 0; j < corun::kChains; ++j) {
                if constexpr (corun::is_ffma(K)) {
                    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(r[j]) : "f"(p.a), "f"(p.b));
                } else if constexpr (K == Kind::fadd) {
                    asm volatile("add.f32 %0, %0, %1;" : "+f"(r[j]) : "f"(p.a));
                } else if constexpr (K == Kind::ex2) {
                    asm volatile("{\n.reg .f32 t;\nneg.f32 t, %0;\nex2.approx.ftz.f32 %0, t;\n}" : "+f"(r[j]));
                } else if constexpr (K == Kind::f2fp) {
                    std::uint32_t v;
                    asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;"
                                 : "=r"(v)
                                 : "f"(r[j]), "f"(r[(j + 1) % corun::kChains]));
                    r[j] = __uint_as_float(v);
                } else if constexpr (K == Kind::gelu) {
                    const float x = fmaf(p.alpha, r[j], p.bias);
                    r[j] = x * cuda::gelu_tanh_gate(x).s;
                } else if constexpr (K == Kind::ldg) {
                    const int lane = static_cast<int>(threadIdx.x) % 32;
                    // Every step its own word, in an 8 KB window that moves with the iteration (so that the
                    // loads can neither merge nor leave the loop).
                    r[j] += __ldg(p.ones + (32 * (n % 32) + lane + 32 * (u * corun::kChains + j)));
                } else if constexpr (K == Kind::stmatrix) {
                    // Chain j's 512 bytes of this warp: row lane of matrix (lane / 8), 16 bytes a lane.
                    asm volatile("add.f32 %0, %0, %1;" : "+f"(r[j]) : "f"(p.a));
                    const std::uint32_t v = __float_as_uint(r[j]);
                    const std::uint32_t regs[4] = {v, v, v, v};
                    cuda::sm90::stmatrix_x4(stage + static_cast<std::uint32_t>(j * 512), regs);
                } else if constexpr (K == Kind::stg || K == Kind::stg128) {
                    // Slot (u kChains + j) of the warp's window: lane l's 8 or 16 bytes in row l / 4, as
                    // store_accumulators (sm90.cuh) places an accumulator pair. The values stored are the
                    // parameters' (in adjacent registers once, before the loop: no copies precede a store,
                    // as none precede k39's, whose pairs are adjacent accumulators); the FADD counts the step.
                    asm volatile("add.f32 %0, %0, %1;" : "+f"(r[j]) : "f"(p.a));
                    const int t = static_cast<int>(threadIdx.x) % 128, l = t % 32;
                    const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * 4 + t / 32;
                    const int slot = (u * corun::kChains + j) % corun::kStgSlots;
                    float* const row = p.window + warp * corun::kStgWarpFloats + (l / 4) * corun::kStgRowFloats;
                    if constexpr (K == Kind::stg)
                        asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(row + slot * 8 + 2 * (l % 4)), "f"(p.a),
                                     "f"(p.b)
                                     : "memory");
                    else
                        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(row + slot * 16 + 4 * (l % 4)),
                                     "f"(p.a), "f"(p.b), "f"(p.alpha), "f"(p.bias)
                                     : "memory");
                } else if constexpr (K == Kind::sleep) {
                    if (u == 0 && j == 0) __nanosleep(256);
                }
            }
        }
        ++n;
    }
    *cycles = clock64() - t0;
    double s = 0;
#pragma unroll
    for (int j = 0; j < corun::kChains; ++j) s += double(r[j]);
    *chain_sum = s;
    *iterations = n;
}

// sums: grid x 256 (the chain's 128 accumulator sums, then the co-runners' chain sums); iterations and
// co_cycles: grid x 128 (the co-runners'); cycles: grid (the chain's, start to its last wait). Chain: 1,
// the chain on one accumulator; 2, on two, each k-step's pair of instructions one on each as the
// library's ping-pong consumer issues its tile's two 64-row halves (each accumulator then takes B and
// B negated twice a group); 3, on one accumulator in the second warpgroup (warps 4-7), the co-runner in
// the first (warps 0-3: which warps a sub-partition's scheduler prefers is not documented); 0, no
// chain: the first warpgroup sleeps for spin_cycles instead, so that the co-runners' rate alone can be
// read beside their rate next to the chain.
template <corun::Kind K, int Chain>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_corun_kernel(const std::uint8_t* a, const std::uint8_t* bp, const std::uint8_t* bm, long long chain_iters,
                       long long spin_cycles, CoParams p, double* sums, long long* iterations, long long* co_cycles,
                       long long* cycles, int* built) {
    __shared__ alignas(128) std::uint8_t sa[64 * kRowBytes];
    __shared__ alignas(128) std::uint8_t sbp[kN * kRowBytes];
    __shared__ alignas(128) std::uint8_t sbm[kN * kRowBytes];
    __shared__ int done;
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = wgmma_compiled() ? 1 : 0;
    if constexpr (wgmma_compiled()) {
        const int tid = static_cast<int>(threadIdx.x);
        stage_kmajor_rows(sa, a, 64, 2, tid, kThreads);
        stage_kmajor_rows(sbp, bp, kN, 2, tid, kThreads);
        stage_kmajor_rows(sbm, bm, kN, 2, tid, kThreads);
        if (tid == 0) done = 0;
        fence_proxy_async_smem();
        __syncthreads();
        const std::size_t block = blockIdx.x;
        const bool chain_side = Chain == 3 ? tid >= 128 : tid < 128;  // the chain's (or the sleeper's) warpgroup
        const int lt = tid % 128;
        if (chain_side && Chain == 0) {
            const long long t0 = clock64();
            while (clock64() - t0 < spin_cycles) __nanosleep(500);
            if (lt == 0) {
                *reinterpret_cast<volatile int*>(&done) = 1;
                cycles[block] = clock64() - t0;
            }
            sums[block * kThreads + lt] = 0;
        } else if (chain_side) {
            const std::uint64_t da = smem_desc(sa, 64 * 16, 128);
            const std::uint64_t dbp = smem_desc(sbp, kN * 16, 128);
            const std::uint64_t dbm = smem_desc(sbm, kN * 16, 128);
            float acc[kN / 2], acc2[Chain == 2 ? kN / 2 : 1];
#pragma unroll
            for (int i = 0; i < kN / 2; ++i) acc[i] = 0;
#pragma unroll
            for (int i = 0; i < (Chain == 2 ? kN / 2 : 1); ++i) acc2[i] = 0;
            const long long t0 = clock64();
            for (long long it = 0; it < chain_iters; ++it) {
                wgmma_fence();
                if constexpr (Chain == 2) {
#pragma unroll
                    for (int w = 0; w < corun::kGroupWgmmas / 4; ++w) {
                        wgmma<DType::bf16, kN>(acc, da, dbp, 1u);
                        wgmma<DType::bf16, kN>(acc2, da, dbp, 1u);
                        wgmma<DType::bf16, kN>(acc, da, dbm, 1u);
                        wgmma<DType::bf16, kN>(acc2, da, dbm, 1u);
                    }
                } else {
#pragma unroll
                    for (int w = 0; w < corun::kGroupWgmmas / 2; ++w) {
                        wgmma<DType::bf16, kN>(acc, da, dbp, 1u);
                        wgmma<DType::bf16, kN>(acc, da, dbm, 1u);
                    }
                }
                wgmma_commit();
                cuda::sm90::wgmma_wait<1>();
            }
            wgmma_fence();
            wgmma<DType::bf16, kN>(acc, da, dbp, 1u);
            wgmma_commit();
            wgmma_wait_all();
            const long long t1 = clock64();
            if (lt == 0) {
                *reinterpret_cast<volatile int*>(&done) = 1;
                cycles[block] = t1 - t0;
            }
            double s = 0;
#pragma unroll
            for (int i = 0; i < kN / 2; ++i) {
                fence_operand(acc[i]);
                s += double(acc[i]);
            }
            if constexpr (Chain == 2) {
#pragma unroll
                for (int i = 0; i < kN / 2; ++i) {
                    fence_operand(acc2[i]);
                    s += double(acc2[i]);  // B and B negated cancel here too (timed launches only)
                }
            }
            sums[block * kThreads + lt] = s;
        } else {
            const int c = lt;
            double* const chain_sum = &sums[block * kThreads + 128 + c];
            long long* const n = &iterations[block * 128 + c];
            long long* const co = &co_cycles[block * 128 + c];
            if constexpr (K == corun::Kind::none) {
                *chain_sum = 0;
                *n = 0;
                *co = 0;
            } else {
                // stmatrix's area: 4 KB a warp in the dynamic shared memory, 16 bytes a lane a chain.
                extern __shared__ __align__(128) std::uint8_t pad[];
                const std::uint32_t stage = cuda::sm90::smem_u32(pad) +
                                            static_cast<std::uint32_t>((c / 32) * 4096 + (c % 32) * 16);
                co_run<K>(&done, p, chain_sum, n, co, stage);
            }
        }
    }
}

struct Launched {
    double cycles_per_wgmma = 0;  // median over CTAs
    double co_iterations = 0;     // median over co-runner threads
    double co_rate = 0;           // co-runner steps a cycle, median over co-runner threads
    bool chain_ok = false, co_ok = false;
};

struct Buffers {
    DeviceArray<std::uint8_t> a, bp, bm;
    DeviceArray<double> sums;
    DeviceArray<long long> iterations, co_cycles, cycles;
    DeviceArray<int> built;
    DeviceArray<float> ones;
    DeviceArray<float> window;  // the stg co-runners' rows
};

template <corun::Kind K, int Chain>
Launched launch_kind(Buffers& b, int grid, long long iters, long long spin_cycles, bool verify, double chain_want) {
    const auto kernel = wgmma_corun_kernel<K, Chain>;
    RIGEL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kPadBytes));
    const CoParams p{1.0f, 1.0f, 1.0f, 0.5f, b.ones.get(), b.window.get()};
    kernel<<<grid, kThreads, kPadBytes>>>(b.a.get(), b.bp.get(), verify ? b.bp.get() : b.bm.get(), iters,
                                          spin_cycles, p, b.sums.get(), b.iterations.get(), b.co_cycles.get(),
                                          b.cycles.get(), b.built.get());
    RIGEL_CUDA_CHECK_LAUNCH();
    RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
    if (b.built.download()[0] != 1) throw std::runtime_error("wgmma_corun: kernel built without wgmma");
    const std::vector<double> sums = b.sums.download();
    const std::vector<long long> its = b.iterations.download(), cyc = b.cycles.download();
    const std::vector<long long> co_cyc = b.co_cycles.download();
    Launched l;
    double chain = 0;
    bool co_ok = true;
    std::vector<double> per_wgmma, co, rate;
    for (int c = 0; c < grid; ++c) {
        for (int t = 0; t < 128; ++t) chain += sums[std::size_t(c) * kThreads + t];
        for (int t = 0; t < 128; ++t) {
            const long long n = its[std::size_t(c) * 128 + t];
            co.push_back(double(n));
            if (co_cyc[std::size_t(c) * 128 + t] > 0)
                rate.push_back(double(n) * corun::steps_per_iteration(K) / double(co_cyc[std::size_t(c) * 128 + t]));
            if (corun::kKinds[static_cast<int>(K)].counts)
                co_ok = co_ok && sums[std::size_t(c) * kThreads + 128 + t] == corun::counted_sum(K, n);
            if (K != corun::Kind::none) co_ok = co_ok && n > 0;
        }
        per_wgmma.push_back(double(cyc[c]) / double(corun::wgmmas(iters)));
    }
    l.chain_ok = Chain == 0 || chain == chain_want;
    l.co_ok = co_ok;
    l.cycles_per_wgmma = timeline::quantile(per_wgmma, 0.5);
    l.co_iterations = timeline::quantile(co, 0.5);
    l.co_rate = timeline::quantile(rate, 0.5);
    return l;
}

using Launcher = Launched (*)(Buffers&, int, long long, long long, bool, double);
struct Launchers {
    // beside the chain, without it, beside the two-accumulator chain, beside the chain in the second warpgroup
    Launcher beside, alone, beside_two, beside_second;
};
template <corun::Kind K>
constexpr Launchers launchers() {
    return {&launch_kind<K, 1>, &launch_kind<K, 0>, &launch_kind<K, 2>, &launch_kind<K, 3>};
}
constexpr Launchers kLaunchers[] = {
    launchers<corun::Kind::none>(), launchers<corun::Kind::ffma>(),  launchers<corun::Kind::fadd>(),
    launchers<corun::Kind::ex2>(),  launchers<corun::Kind::f2fp>(),  launchers<corun::Kind::gelu>(),
    launchers<corun::Kind::sleep>(), launchers<corun::Kind::stmatrix>(), launchers<corun::Kind::ldg>(),
    launchers<corun::Kind::ffma_16k>(),
    launchers<corun::Kind::ffma_32k>(), launchers<corun::Kind::ffma_48k>(), launchers<corun::Kind::ffma_64k>(),
    launchers<corun::Kind::stg>(), launchers<corun::Kind::stg128>()};
static_assert(std::size(kLaunchers) == corun::kKinds.size());

}  // namespace

std::vector<Finding> run_wgmma_corun(const ProbeContext& ctx) {
    std::vector<Finding> out;
    const std::string path = "wgmma.mma_async m64n128k16 bf16 (one warpgroup, 2 commit groups in flight)";
    if (ctx.compute_capability != 90 || !kernel_has_image(wgmma_corun_kernel<corun::Kind::none, 1>)) {
        out.push_back(not_available(probe_name, path, "bf16", "wgmma cycles beside other warps' work",
                                    "wgmma exists on compute capability 9.0 (sm_90a) only; device has " +
                                        std::to_string(ctx.compute_capability)));
        return out;
    }
    const DeviceFacts dev = device_facts();
    SplitMix rng(wgmma_operand_seed(ctx.seed, DType::bf16, kN) + 7);
    std::vector<double> am(64 * 16), bmat(std::size_t(kN) * 16);
    for (auto& x : am) x = small_int(rng);
    for (auto& x : bmat) x = small_int(rng);
    const double ab_sum = product_sum(am, 64, bmat, kN, 16);
    const auto bytes = [](const std::vector<double>& v, double sign) {
        std::vector<std::uint8_t> o(v.size() * 2);
        for (std::size_t i = 0; i < v.size(); ++i) {
            const auto bits = *encode(DType::bf16, sign * v[i]);
            o[2 * i] = static_cast<std::uint8_t>(bits);
            o[2 * i + 1] = static_cast<std::uint8_t>(bits >> 8);
        }
        return o;
    };
    const int grid = dev.sms;
    const std::size_t co_threads = std::size_t(grid) * 128;
    Buffers b{DeviceArray<std::uint8_t>(bytes(am, 1.0)), DeviceArray<std::uint8_t>(bytes(bmat, 1.0)),
              DeviceArray<std::uint8_t>(bytes(bmat, -1.0)),  DeviceArray<double>(std::size_t(grid) * kThreads),
              DeviceArray<long long>(co_threads),           DeviceArray<long long>(co_threads),
              DeviceArray<long long>(std::size_t(grid)),    DeviceArray<int>(1),
              DeviceArray<float>(std::vector<float>(kOnes, 1.0f)),
              DeviceArray<float>(std::size_t(grid) * 4 * corun::kStgWarpFloats)};
    const long long iters = ctx.quick ? 200 : corun::kIterations;
    const double n_wgmma = double(corun::wgmmas(iters));
    // A short run whose every step adds (B twice): its checksum is (2 x 4 x 2 + 1) A B a CTA.
    const Launched check = kLaunchers[0].beside(b, grid, 2, 0, true, matrix_checksum(grid, ab_sum, 4, 2, true));
    const double want = matrix_checksum(grid, ab_sum, 4, iters, false);

    // Each kind beside the chain, then alone for as long as the chain alone ran (its first warpgroup asleep).
    struct Result {
        double cycles = 0, co_iterations = 0, rate = 0, rate_alone = 0;
        double cycles_two = 0, co_iterations_two = 0;        // beside the two-accumulator chain
        double cycles_second = 0, co_iterations_second = 0;  // beside the chain in the second warpgroup
        bool ok = false;
    };
    std::vector<Result> results;
    long long spin = 0;
    for (std::size_t k = 0; k < corun::kKinds.size(); ++k) {
        report(ctx, std::string("wgmma_corun: beside ") + std::string(corun::kKinds[k].name));
        (void)kLaunchers[k].beside(b, grid, iters, 0, false, want);  // warm
        std::vector<double> cyc, co, rate, rate_alone;
        bool ok = check.chain_ok;
        for (int r = 0; r < kReps; ++r) {
            const Launched l = kLaunchers[k].beside(b, grid, iters, 0, false, want);
            cyc.push_back(l.cycles_per_wgmma);
            co.push_back(l.co_iterations);
            rate.push_back(l.co_rate);
            ok = ok && l.chain_ok && l.co_ok;
        }
        Result res{.cycles = timeline::quantile(cyc, 0.5),
                   .co_iterations = timeline::quantile(co, 0.5),
                   .rate = timeline::quantile(rate, 0.5),
                   .ok = ok};
        if (k == 0) spin = static_cast<long long>(res.cycles * n_wgmma);
        if (corun::kKinds[k].kind != corun::Kind::none) {
            for (int r = 0; r < kReps; ++r) {
                const Launched l = kLaunchers[k].alone(b, grid, iters, spin, false, want);
                rate_alone.push_back(l.co_rate);
                res.ok = res.ok && l.co_ok;
            }
            res.rate_alone = timeline::quantile(rate_alone, 0.5);
        }
        // The chain's variants: its cycles a wgmma and the co-runner's iterations, medians of kReps launches.
        const auto variant = [&](Launcher launch, double& cycles, double& co_iterations) {
            std::vector<double> cyc_v, co_v;
            (void)launch(b, grid, iters, 0, false, want);  // warm
            for (int r = 0; r < kReps; ++r) {
                const Launched l = launch(b, grid, iters, 0, false, want);
                cyc_v.push_back(l.cycles_per_wgmma);
                co_v.push_back(l.co_iterations);
                res.ok = res.ok && l.chain_ok && l.co_ok;
            }
            cycles = timeline::quantile(cyc_v, 0.5);
            co_iterations = timeline::quantile(co_v, 0.5);
        };
        variant(kLaunchers[k].beside_two, res.cycles_two, res.co_iterations_two);
        variant(kLaunchers[k].beside_second, res.cycles_second, res.co_iterations_second);
        results.push_back(res);
    }

    const double alone = results[0].cycles, alone_two = results[0].cycles_two,
                 alone_second = results[0].cycles_second;
    const std::string doc = "wgmma.mma_async is asynchronous: the warpgroup goes on while the tensor cores work; "
                            "silent on what other warps' instructions and a running chain take from each other";
    const std::string kernel_name =
        kernel_symbol(reinterpret_cast<const void*>(wgmma_corun_kernel<corun::Kind::none, 1>));
    for (std::size_t k = 0; k < corun::kKinds.size(); ++k) {
        const corun::KindInfo& kind = corun::kKinds[k];
        const Result& r = results[k];
        const double steps = r.co_iterations * corun::steps_per_iteration(kind.kind);  // one warp's, over the chain
        const std::string checks =
            std::string(r.ok ? "Checksums exact: the chain's " : "CHECK FAILED: the chain's ") +
            "accumulators (" + std::to_string(kReps) + " launches and a short run of B twice)" +
            (kind.counts ? " and every co-runner thread's chain sum against its step count." : ".");
        const RowSource src{probe_name, path, "bf16", doc, "PTX ISA 9.0, wgmma.mma_async", kernel_name, r.ok};
        const auto row = [&](const std::string& quantity, double value, int decimals, const std::string& unit,
                             const std::string& expected, const std::string& detail) {
            out.push_back(value_row(src, quantity, value, decimals, unit, expected, detail + " " + checks));
        };
        const std::string beside = "beside it on every sub-partition one warp issuing " + std::string(kind.what);
        row("wgmma cycles beside " + std::string(kind.name), r.cycles, 2, "cycles",
            fmt_fixed(corun::kIdealCyclesPerWgmma, 0),
            "cycles a wgmma (m64n128k16), the median over " + std::to_string(grid) +
                " CTAs (one an SM) of a chain of " + fmt_fixed(n_wgmma, 0) + ", median of " + std::to_string(kReps) +
                " launches; " + beside + ".");
        // A variant of the chain: its cycles a wgmma beside this co-runner, and what a step cost it.
        const auto variant_rows = [&](const std::string& label, const std::string& what, double cycles,
                                      double cycles_alone, double co_iterations) {
            row("wgmma cycles beside " + std::string(kind.name) + ", " + label, cycles, 2, "cycles",
                kind.kind == corun::Kind::none ? fmt_fixed(corun::kIdealCyclesPerWgmma, 0)
                                               : fmt_fixed(cycles_alone, 2),
                "cycles a wgmma of " + what + ", the median over " + std::to_string(grid) + " CTAs and " +
                    std::to_string(kReps) + " launches; " + beside + ".");
            if (kind.kind == corun::Kind::none || kind.kind == corun::Kind::sleep) return;
            const double steps_v = co_iterations * corun::steps_per_iteration(kind.kind);
            row("tensor cycles lost per co-runner step, " + label + ": " + std::string(kind.name),
                corun::cycles_lost_per_step(cycles_alone * n_wgmma, cycles * n_wgmma, steps_v), 3, "cycles", "",
                "as the first chain's row, for " + what + ": " + fmt_fixed(cycles, 2) + " cycles a wgmma beside " +
                    std::string(kind.name) + " against " + fmt_fixed(cycles_alone, 2) + " alone, over one warp's " +
                    fmt_fixed(steps_v, 0) + " steps.");
        };
        variant_rows("two accumulators",
                     "the same chain on two accumulators (each k-step's pair of instructions one on each, as the "
                     "ping-pong consumer issues its tile's two 64-row halves)",
                     r.cycles_two, alone_two, r.co_iterations_two);
        variant_rows("chain in the second warpgroup",
                     "the chain on one accumulator in the second warpgroup (warps 4-7), the co-runner in the first "
                     "(warps 0-3)",
                     r.cycles_second, alone_second, r.co_iterations_second);
        if (kind.kind == corun::Kind::none) continue;
        row("co-runner steps per 100 cycles beside the chain: " + std::string(kind.name), 100 * r.rate, 2, "steps",
            fmt_fixed(100 * r.rate_alone, 2),
            "one co-runner warp's steps (" + std::string(kind.what) + ") per 100 of its cycles while the chain ran, "
            "the median over its threads and " + std::to_string(kReps) + " launches; expected: the same warp's rate "
            "with the chain's warpgroup asleep instead (" + fmt_fixed(100 * r.rate_alone, 2) + "), so beside the "
            "chain it ran at " + fmt_fixed(r.rate_alone > 0 ? r.rate / r.rate_alone : 0.0, 3) + " of that.");
        if (kind.kind == corun::Kind::sleep) continue;
        const double lost = corun::cycles_lost_per_step(alone * n_wgmma, r.cycles * n_wgmma, steps);
        row("tensor cycles lost per co-runner step: " + std::string(kind.name), lost, 3, "cycles", "",
            "the chain's cycles beside " + std::string(kind.name) + " (" + fmt_fixed(r.cycles, 2) +
                " a wgmma) less its cycles alone (" + fmt_fixed(alone, 2) + "), over one warp's " + fmt_fixed(steps, 0) +
                " steps meanwhile (one warp a sub-partition)" +
                (kind.kind == corun::Kind::gelu
                     ? "; a 128 x 128 tile's GELU epilogue takes 128 steps a thread: " + fmt_fixed(128 * lost, 0) +
                           " tensor cycles a tile at this rate"
                     : "") +
                ".");
    }
    return out;
}

}  // namespace rigel::probes
