// Probe throughput: the sustained ceiling of each arithmetic path, measured
// with kernels that do nothing but that instruction. Scalar FMA (fp32, f16x2,
// bf16x2, fp64), mma.sync per type (f16, bf16, tf32, e4m3, s8, f64), and
// wgmma per type and N (bf16 and e4m3 at N = 8..256; f16, tf32, s8 at 256)
// with both operands in shared memory (sm_90a).
//
// Every kernel keeps many independent accumulator chains so that latency is
// hidden, and stores a checksum of all of them so the work cannot be dropped.
// The inputs are small integers, so the checksum is exact: a short run whose
// every step adds (multiplier 1, addends +1 +1, or B then B again) is compared
// with its float64 expectation, and so is every timed run, whose steps
// cancel (addends +1 -1, or B then -B); every thread also adds the trips its
// loop made, so a timed run that skipped iterations fails. Each ceiling is the median of several
// launches of about 0.1 s after a warm-up of 0.5 s, with the SM clock, power
// and clock-event reasons NVML saw during the timed launches.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/probes/mma_sync_ptx.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "cuda/probes/wgmma_ptx.cuh"
#include "harness/nvml_sampler.hpp"
#include "harness/timing.hpp"
#include "probes/layouts/fragment_maps.hpp"
#include "probes/numerics/numerics_model.hpp"
#include "probes/throughput/throughput_arith.hpp"

namespace rigel::probes {
namespace {

constexpr const char* probe_name = "throughput";

// ---- scalar FMA ---------------------------------------------------------------------------

constexpr int fma_chains = 8;  // independent accumulators per thread
constexpr int fma_unroll = 4;  // (+ce, +co) pairs per chain per loop iteration
constexpr int fma_block = 256;

template <typename T>
struct Scalar;
template <>
struct Scalar<float> {
    static constexpr int lanes = 1;
    __device__ static float fma(float a, float m, float c) { return __fmaf_rn(a, m, c); }
    __device__ static float make(float v) { return v; }
    __device__ static double sum(float v) { return v; }
};
template <>
struct Scalar<double> {
    static constexpr int lanes = 1;
    __device__ static double fma(double a, double m, double c) { return __fma_rn(a, m, c); }
    __device__ static double make(float v) { return v; }
    __device__ static double sum(double v) { return v; }
};
template <>
struct Scalar<__half2> {
    static constexpr int lanes = 2;
    __device__ static __half2 fma(__half2 a, __half2 m, __half2 c) { return __hfma2(a, m, c); }
    __device__ static __half2 make(float v) { return __float2half2_rn(v); }
    __device__ static double sum(__half2 v) { return double(__low2float(v)) + double(__high2float(v)); }
};
template <>
struct Scalar<__nv_bfloat162> {
    static constexpr int lanes = 2;
    __device__ static __nv_bfloat162 fma(__nv_bfloat162 a, __nv_bfloat162 m, __nv_bfloat162 c) {
        return __hfma2(a, m, c);
    }
    __device__ static __nv_bfloat162 make(float v) { return __float2bfloat162_rn(v); }
    __device__ static double sum(__nv_bfloat162 v) { return double(__low2float(v)) + double(__high2float(v)); }
};

// acc_j starts at (thread + j) & 7; every iteration applies acc = acc*m + ce
// and acc = acc*m + co, fma_unroll times, to each chain.
template <typename T>
__global__ void __launch_bounds__(fma_block) fma_kernel(float m, float ce, float co, long long iters, double* sums) {
    using S = Scalar<T>;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const T mv = S::make(m), cev = S::make(ce), cov = S::make(co);
    T acc[fma_chains];
#pragma unroll
    for (int j = 0; j < fma_chains; ++j) acc[j] = S::make(float((tid + j) & 7));
    long long trips = 0;  // added to the result: the timed run's steps cancel (loop_trips_sum)
    for (long long it = 0; it < iters; ++it, ++trips) {
#pragma unroll
        for (int u = 0; u < fma_unroll; ++u) {
#pragma unroll
            for (int j = 0; j < fma_chains; ++j) acc[j] = S::fma(acc[j], mv, cev);
#pragma unroll
            for (int j = 0; j < fma_chains; ++j) acc[j] = S::fma(acc[j], mv, cov);
        }
    }
    double s = double(trips);
#pragma unroll
    for (int j = 0; j < fma_chains; ++j) s += S::sum(acc[j]);
    sums[tid] = s;
}

// ---- mma.sync -------------------------------------------------------------------------------

constexpr int mma_chains = 4;
constexpr int mma_block = 128;

// Whether the kernel must make the operands vary per chain and iteration
// (for the compiler): only where the instruction is emulated by several,
// which the compiler can then share and hoist (mma.sync e4m3 on sm_90).
constexpr bool operands_vary(MmaKind k) { return k == MmaKind::e4m3_m16n8k32; }

// Fragments of A, B and B- ([lane][word]) in registers; every iteration does
// d = A*B + d then d = A*B- + d on each chain; one last A*B at the end.
// Every element of chain c starts at c.
template <MmaKind K>
__global__ void __launch_bounds__(mma_block)
    mma_tput_kernel(const std::uint32_t* a, const std::uint32_t* bp, const std::uint32_t* bm, long long iters,
                    std::uint32_t zero, double* sums, int* built) {
    (void)zero;  // used where operands_vary(K)
    constexpr MmaShape s = shape_of(K);
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = mma_compiled(K) ? 1 : 0;
    if constexpr (mma_compiled(K)) {
        const int lane = threadIdx.x & 31;
        std::uint32_t ar[a_words(K)], bpr[b_words(K)], bmr[b_words(K)];
#pragma unroll
        for (int i = 0; i < a_words(K); ++i) ar[i] = a[lane * a_words(K) + i];
#pragma unroll
        for (int i = 0; i < b_words(K); ++i) {
            bpr[i] = bp[lane * b_words(K) + i];
            bmr[i] = bm[lane * b_words(K) + i];
        }
        // Chain c starts at c everywhere: chains that started equal could be
        // merged by the compiler (ptxas does so for the emulated e4m3 path),
        // and the kernel would do a quarter of the work it is credited with.
        mma_acc_t<K> acc[mma_chains][s.d_elems];
#pragma unroll
        for (int c = 0; c < mma_chains; ++c)
#pragma unroll
            for (int i = 0; i < s.d_elems; ++i) acc[c][i] = mma_acc_t<K>(c);
        long long trips = 0;  // added to the result: the timed run's steps cancel (loop_trips_sum)
        for (long long it = 0; it < iters; ++it, ++trips) {
            if constexpr (operands_vary(K)) {
                // B ^ ((it + c) & zero) is B (zero is 0 at every launch), but
                // the compiler cannot know it: B differs per chain and per
                // iteration as far as it can tell. ptxas lowers mma.sync e4m3
                // on sm_90 to an f16 HMMA product plus fp32 additions into C,
                // so with shared, loop-invariant operands it computed the
                // product once and the loop held additions only; with B the
                // same for every chain, one product served four chains.
#pragma unroll
                for (int c = 0; c < mma_chains; ++c) {
                    const std::uint32_t flip = (static_cast<std::uint32_t>(it) + c) & zero;
                    std::uint32_t bi[b_words(K)];
#pragma unroll
                    for (int i = 0; i < b_words(K); ++i) bi[i] = bpr[i] ^ flip;
                    mma<K>(acc[c], ar, bi);
                }
#pragma unroll
                for (int c = 0; c < mma_chains; ++c) {
                    const std::uint32_t flip = (static_cast<std::uint32_t>(it) + c) & zero;
                    std::uint32_t bi[b_words(K)];
#pragma unroll
                    for (int i = 0; i < b_words(K); ++i) bi[i] = bmr[i] ^ flip;
                    mma<K>(acc[c], ar, bi);
                }
            } else {
                // A native instruction cannot be split: d = A*B + d on each
                // chain, operands in registers.
#pragma unroll
                for (int c = 0; c < mma_chains; ++c) mma<K>(acc[c], ar, bpr);
#pragma unroll
                for (int c = 0; c < mma_chains; ++c) mma<K>(acc[c], ar, bmr);
            }
        }
        double sum = double(trips);
#pragma unroll
        for (int c = 0; c < mma_chains; ++c) {
            mma<K>(acc[c], ar, bpr);
#pragma unroll
            for (int i = 0; i < s.d_elems; ++i) sum += double(acc[c][i]);
        }
        sums[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    }
}

// ---- mma.sync f64 m16n8k16 (sm_90) -----------------------------------------------------------

// The fp64 shape Hopper added beside Ampere's m8n8k4: 8 times the work per
// instruction. Its fragment layout is not needed here: A is one constant
// everywhere, so the sum of all of D is 16 * a * (the sum of B), whatever
// lane holds which element of B (every element is held exactly once).
constexpr double dmma_a_value = 2.0;

__device__ inline void dmma_m16n8k16(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
        "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
          "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
    (void)d, (void)a, (void)b;
#endif
}

constexpr bool dmma16816_compiled() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return true;
#else
    return false;
#endif
}

// The same scheme as mma_tput_kernel: chains start at their index, B and B-
// alternate, B changes (for the compiler) every iteration.
__global__ void __launch_bounds__(mma_block)
    dmma16816_tput_kernel(const double* bp, const double* bm, long long iters, std::uint64_t zero, double* sums,
                          int* built) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = dmma16816_compiled() ? 1 : 0;
    if constexpr (dmma16816_compiled()) {
        const int lane = threadIdx.x & 31;
        double ar[8], bpr[4], bmr[4];
#pragma unroll
        for (int i = 0; i < 8; ++i) ar[i] = dmma_a_value;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            bpr[i] = bp[lane * 4 + i];
            bmr[i] = bm[lane * 4 + i];
        }
        double acc[mma_chains][4];
#pragma unroll
        for (int c = 0; c < mma_chains; ++c)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[c][i] = c;
        long long trips = 0;  // added to the result: the timed run's steps cancel (loop_trips_sum)
        for (long long it = 0; it < iters; ++it, ++trips) {
            const std::uint64_t flip = static_cast<std::uint64_t>(it) & zero;
            double bpi[4], bmi[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                bpi[i] = __longlong_as_double(__double_as_longlong(bpr[i]) ^ static_cast<long long>(flip));
                bmi[i] = __longlong_as_double(__double_as_longlong(bmr[i]) ^ static_cast<long long>(flip));
            }
#pragma unroll
            for (int c = 0; c < mma_chains; ++c) dmma_m16n8k16(acc[c], ar, bpi);
#pragma unroll
            for (int c = 0; c < mma_chains; ++c) dmma_m16n8k16(acc[c], ar, bmi);
        }
        double sum = double(trips);
#pragma unroll
        for (int c = 0; c < mma_chains; ++c) {
            dmma_m16n8k16(acc[c], ar, bpr);
#pragma unroll
            for (int i = 0; i < 4; ++i) sum += acc[c][i];
        }
        sums[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    }
}

// ---- wgmma ------------------------------------------------------------------------------------

constexpr int wg_pairs = 4;  // (B, B-) pairs per commit group

// One warpgroup per CTA; A (64 x K), B and B- (N x K) as raw rows of 32 bytes
// (one instruction's K), staged into shared memory in the no-swizzle K-major
// layout. Every iteration issues wg_pairs x (B, B-) on one accumulator, then
// waits for them; other CTAs on the SM keep the tensor cores fed meanwhile.
template <DType T, int N>
__global__ void __launch_bounds__(128)
    wgmma_tput_kernel(const std::uint8_t* a, const std::uint8_t* bp, const std::uint8_t* bm, long long iters,
                      double* sums, int* built) {
    using Acc = typename WgTraits<T>::acc;
    constexpr int eb = WgTraits<T>::elem_bytes;
    constexpr int row_bytes = WgTraits<T>::k * eb;  // 32 for every type
    static_assert(row_bytes == 32, "one instruction's K is two 16-byte chunks");
    __shared__ alignas(128) std::uint8_t sa[64 * row_bytes];
    __shared__ alignas(128) std::uint8_t sbp[N * row_bytes];
    __shared__ alignas(128) std::uint8_t sbm[N * row_bytes];
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = wgmma_compiled() ? 1 : 0;
    if constexpr (wgmma_compiled()) {
        const int tid = threadIdx.x;
        stage_kmajor_rows(sa, a, 64, eb, tid, 128);
        stage_kmajor_rows(sbp, bp, N, eb, tid, 128);
        stage_kmajor_rows(sbm, bm, N, eb, tid, 128);
        fence_proxy_async_smem();
        __syncthreads();
        const std::uint64_t da = smem_desc(sa, 64 * 16, 128);
        const std::uint64_t dbp = smem_desc(sbp, N * 16, 128);
        const std::uint64_t dbm = smem_desc(sbm, N * 16, 128);
        Acc acc[N / 2];
#pragma unroll
        for (int i = 0; i < N / 2; ++i) acc[i] = 0;
        long long trips = 0;  // added to the result: the timed run's steps cancel (loop_trips_sum)
        for (long long it = 0; it < iters; ++it, ++trips) {
            wgmma_fence();
#pragma unroll
            for (int p = 0; p < wg_pairs; ++p) {
                wgmma<T, N>(acc, da, dbp, 1u);
                wgmma<T, N>(acc, da, dbm, 1u);
            }
            wgmma_commit();
            wgmma_wait_all();
        }
        wgmma_fence();
        wgmma<T, N>(acc, da, dbp, 1u);
        wgmma_commit();
        wgmma_wait_all();
        double sum = double(trips);
#pragma unroll
        for (int i = 0; i < N / 2; ++i) {
            fence_operand(acc[i]);
            sum += double(acc[i]);
        }
        sums[blockIdx.x * 128 + tid] = sum;
    }
}

// ---- measurement ----------------------------------------------------------------------------

struct Settings {
    double launch_s;  // target duration of one timed launch
    double warmup_s;
    int reps;
};

// One kernel under test, as the measurement loop sees it: launch with a
// given iteration count in the verifying or the timed mode, read the
// checksum, and know its expectation and its work.
struct Workload {
    std::string path, dtype, unit = "Tflop/s";
    std::function<void(long long iters, bool verify)> launch;  // asynchronous
    std::function<double()> checksum;                          // synchronizes
    std::function<double(long long iters, bool verify)> expected;
    double ops_per_iter = 0;  // flops (or int ops) of one iteration, whole grid
    double ops_fixed = 0;     // ... of the work outside the loop
    long long verify_iters = 16;
    std::optional<double> datasheet;  // NVIDIA's dense peak for H100/H200 SXM, where it names this path
    std::string datasheet_name;
    std::string note;
    std::string kernel;  // the kernel's symbol, as cuobjdump names it, so its own SASS can be found
};

// The checksum of a matrix-instruction kernel: the sum of every thread's
// result, refused when the kernel was built without its instruction.
std::function<double()> checked_sum(std::shared_ptr<DeviceArray<double>> sums,
                                    std::shared_ptr<DeviceArray<int>> built) {
    return [sums, built] {
        if (built->download()[0] != 1) throw std::runtime_error("throughput: kernel built without the instruction");
        double total = 0;
        for (double x : sums->download()) total += x;
        return total;
    };
}

double time_launch(const Workload& w, long long iters) {
    static EventTimer timer;
    return timer.seconds([&] { w.launch(iters, false); });
}

struct Ceiling {
    double ops_per_s = 0;
    TimingStats stats;
    long long iters = 0;
    DeviceSample sample;
    bool verified_small = false, verified_timed = false;
    double small_got = 0, small_want = 0, timed_got = 0, timed_want = 0;
};

Ceiling measure_ceiling(const Workload& w, const Settings& st, NvmlSampler* sampler) {
    Ceiling c;
    // Exact check of a short run whose every step adds.
    w.launch(w.verify_iters, true);
    c.small_got = w.checksum();
    c.small_want = w.expected(w.verify_iters, true);
    c.verified_small = c.small_got == c.small_want;
    // Iterations for a launch of about st.launch_s.
    long long iters = 64;
    double t = time_launch(w, iters);
    while (t < 0.005 && iters < (1LL << 40)) {
        iters *= 16;
        t = time_launch(w, iters);
    }
    c.iters = std::max<long long>(1, static_cast<long long>(double(iters) * st.launch_s / t));
    // Warm-up by time: clocks and power settle.
    for (double spent = 0; spent < st.warmup_s;) spent += time_launch(w, c.iters);
    if (sampler) sampler->start();
    TimingConfig cfg;
    cfg.warmup_s = 0;
    cfg.min_time_s = 0;
    cfg.min_reps = st.reps;
    cfg.max_reps = st.reps;
    c.stats = measure([&] { return time_launch(w, c.iters); }, cfg);
    if (sampler) c.sample = sampler->stop();
    c.timed_got = w.checksum();
    c.timed_want = w.expected(c.iters, false);
    c.verified_timed = c.timed_got == c.timed_want;
    c.ops_per_s = (w.ops_per_iter * double(c.iters) + w.ops_fixed) / c.stats.median_s;
    return c;
}

int blocks_per_sm(const void* kernel, int block, std::size_t smem = 0) {
    int n = 0;
    RIGEL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, block, smem));
    return std::max(n, 1);
}

// The device buffers a workload keeps alive for its launches.
struct Buffers {
    std::vector<std::shared_ptr<void>> keep;
    template <typename T>
    T* hold(std::shared_ptr<DeviceArray<T>> p) {
        keep.push_back(p);
        return p->get();
    }
};

template <typename T>
Workload scalar_workload(const char* path, const char* dtype, const DeviceFacts& dev, Buffers& buf,
                         std::optional<double> datasheet, const char* datasheet_name) {
    const int grid = dev.sms * blocks_per_sm(reinterpret_cast<const void*>(fma_kernel<T>), fma_block);
    const long long threads = static_cast<long long>(grid) * fma_block;
    auto sums = std::make_shared<DeviceArray<double>>(std::size_t(threads));
    double* s = buf.hold(sums);
    Workload w;
    w.path = path;
    w.dtype = dtype;
    w.kernel = kernel_symbol(reinterpret_cast<const void*>(fma_kernel<T>));
    w.launch = [=](long long iters, bool verify) {
        fma_kernel<T><<<grid, fma_block>>>(1.0f, 1.0f, verify ? 1.0f : -1.0f, iters, s);
        RIGEL_CUDA_CHECK_LAUNCH();
    };
    w.checksum = [=] {
        double total = 0;
        for (double x : sums->download()) total += x;
        return total;
    };
    w.expected = [=](long long iters, bool verify) {
        return fma_checksum(threads, fma_chains, Scalar<T>::lanes, fma_unroll, iters, verify);
    };
    w.ops_per_iter = double(threads) * fma_chains * fma_unroll * 2 /* fma */ * 2 /* flop */ * Scalar<T>::lanes;
    w.verify_iters = 16;  // bf16 holds integers exactly only up to 256
    w.datasheet = datasheet;
    w.datasheet_name = datasheet_name;
    w.note = std::to_string(fma_chains) + " independent chains per thread, " + std::to_string(grid) + " blocks of " +
             std::to_string(fma_block);
    return w;
}

template <MmaKind K>
std::optional<Workload> mma_workload(const DeviceFacts& dev, Buffers& buf, std::uint64_t seed,
                                     std::optional<double> datasheet, const char* datasheet_name) {
    if (dev.cc < min_cc(K) || !kernel_has_image(mma_tput_kernel<K>)) return std::nullopt;
    constexpr MmaShape s = shape_of(K);
    SplitMix rng(seed * 0x10000 + static_cast<std::uint64_t>(K) + 99);
    std::vector<double> am(std::size_t(s.m) * s.k), bnk(std::size_t(s.n) * s.k);  // B kept as N x K
    for (auto& x : am) x = small_int(rng);
    for (auto& x : bnk) x = small_int(rng);
    const auto A = [&](int r, int c) { return am[std::size_t(r) * s.k + c]; };
    const auto B = [&](int kk, int n) { return bnk[std::size_t(n) * s.k + kk]; };
    const auto Bneg = [&](int kk, int n) { return -bnk[std::size_t(n) * s.k + kk]; };
    const double ab_sum = product_sum(am, s.m, bnk, s.n, s.k);
    auto da = std::make_shared<DeviceArray<std::uint32_t>>(pack_fragments(K, Operand::a, A));
    auto dbp = std::make_shared<DeviceArray<std::uint32_t>>(pack_fragments(K, Operand::b, B));
    auto dbm_pos = std::make_shared<DeviceArray<std::uint32_t>>(pack_fragments(K, Operand::b, B));
    auto dbm_neg = std::make_shared<DeviceArray<std::uint32_t>>(pack_fragments(K, Operand::b, Bneg));
    const int grid = dev.sms * blocks_per_sm(reinterpret_cast<const void*>(mma_tput_kernel<K>), mma_block);
    const long long threads = static_cast<long long>(grid) * mma_block;
    const long long warps = threads / 32;
    auto sums = std::make_shared<DeviceArray<double>>(std::size_t(threads));
    auto built = std::make_shared<DeviceArray<int>>(1);
    const std::uint32_t *pa = buf.hold(da), *pbp = buf.hold(dbp), *ppos = buf.hold(dbm_pos), *pneg = buf.hold(dbm_neg);
    double* ps = buf.hold(sums);
    int* pb = buf.hold(built);
    Workload w;
    w.path = ptx_name(K);
    w.dtype = name(operand_type(K));
    w.unit = K == MmaKind::s8_m16n8k32 ? "Tops" : "Tflop/s";
    w.kernel = kernel_symbol(reinterpret_cast<const void*>(mma_tput_kernel<K>));
    w.launch = [=](long long iters, bool verify) {
        mma_tput_kernel<K><<<grid, mma_block>>>(pa, pbp, verify ? ppos : pneg, iters, 0u, ps, pb);
        RIGEL_CUDA_CHECK_LAUNCH();
    };
    w.checksum = checked_sum(sums, built);
    w.expected = [=](long long iters, bool verify) {
        return matrix_checksum(double(warps) * mma_chains, ab_sum, 1, iters, verify) +
               chain_start_sum(threads, mma_chains, s.d_elems) + loop_trips_sum(threads, iters);
    };
    const double mma_ops = 2.0 * s.m * s.n * s.k;
    w.ops_per_iter = double(warps) * mma_chains * 2 * mma_ops;
    w.ops_fixed = double(warps) * mma_chains * mma_ops;
    w.verify_iters = 8;
    w.datasheet = datasheet;
    w.datasheet_name = datasheet_name;
    w.note = std::to_string(mma_chains) + " independent accumulators per warp, " + std::to_string(grid) +
             " blocks of " + std::to_string(mma_block);
    return w;
}

constexpr const char* dmma16816_path = "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64";

std::optional<Workload> dmma16816_workload(const DeviceFacts& dev, Buffers& buf, std::uint64_t seed,
                                           std::optional<double> datasheet, const char* datasheet_name) {
    if (dev.cc < 90 || !kernel_has_image(dmma16816_tput_kernel)) return std::nullopt;
    SplitMix rng(seed * 0x10000 + 1616);
    std::vector<double> b(32 * 4), bneg(32 * 4);
    double b_sum = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        b[i] = small_int(rng);
        bneg[i] = -b[i];
        b_sum += b[i];
    }
    const double ab_sum = 16.0 * dmma_a_value * b_sum;  // every element of B meets 16 rows of A
    auto dbp = std::make_shared<DeviceArray<double>>(b);
    auto dbpos = std::make_shared<DeviceArray<double>>(b);
    auto dbneg = std::make_shared<DeviceArray<double>>(bneg);
    const int grid = dev.sms * blocks_per_sm(reinterpret_cast<const void*>(dmma16816_tput_kernel), mma_block);
    const long long threads = static_cast<long long>(grid) * mma_block;
    const long long warps = threads / 32;
    auto sums = std::make_shared<DeviceArray<double>>(std::size_t(threads));
    auto built = std::make_shared<DeviceArray<int>>(1);
    const double *pbp = buf.hold(dbp), *ppos = buf.hold(dbpos), *pneg = buf.hold(dbneg);
    double* ps = buf.hold(sums);
    int* pb = buf.hold(built);
    Workload w;
    w.path = dmma16816_path;
    w.dtype = "f64";
    w.kernel = kernel_symbol(reinterpret_cast<const void*>(dmma16816_tput_kernel));
    w.launch = [=](long long iters, bool verify) {
        dmma16816_tput_kernel<<<grid, mma_block>>>(pbp, verify ? ppos : pneg, iters, 0u, ps, pb);
        RIGEL_CUDA_CHECK_LAUNCH();
    };
    w.checksum = checked_sum(sums, built);
    w.expected = [=](long long iters, bool verify) {
        return matrix_checksum(double(warps) * mma_chains, ab_sum, 1, iters, verify) +
               chain_start_sum(threads, mma_chains, 4) + loop_trips_sum(threads, iters);
    };
    const double mma_ops = 2.0 * 16 * 8 * 16;
    w.ops_per_iter = double(warps) * mma_chains * 2 * mma_ops;
    w.ops_fixed = double(warps) * mma_chains * mma_ops;
    w.verify_iters = 8;
    w.datasheet = datasheet;
    w.datasheet_name = datasheet_name;
    w.note = std::to_string(mma_chains) + " independent accumulators per warp, A constant (" +
             fmt_fixed(dmma_a_value, 0) + "), " + std::to_string(grid) + " blocks of " + std::to_string(mma_block);
    return w;
}

const char* wg_ptx_types(DType t) {
    switch (t) {
        case DType::bf16: return "f32.bf16.bf16";
        case DType::f16: return "f32.f16.f16";
        case DType::tf32: return "f32.tf32.tf32";
        case DType::e4m3: return "f32.e4m3.e4m3";
        case DType::i8: return "s32.s8.s8";
        default: break;
    }
    throw std::invalid_argument("throughput: no wgmma for " + std::string(name(t)));
}

std::string wg_path(DType t, int n) {
    return "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" +
           std::to_string(t == DType::tf32                       ? 8
                          : t == DType::bf16 || t == DType::f16 ? 16
                                                                  : 32) +
           "." + wg_ptx_types(t);
}

// Raw bytes of one element of a wgmma operand.
std::uint32_t wg_bits(DType t, double v) {
    if (t == DType::i8) return static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
    const auto b = encode(t, v);
    if (!b) throw std::logic_error("throughput: operand not exact");
    return *b;
}

template <DType T, int N>
std::optional<Workload> wgmma_workload(const DeviceFacts& dev, Buffers& buf, std::uint64_t seed,
                                       std::optional<double> datasheet, const char* datasheet_name) {
    if (dev.cc != 90 || !kernel_has_image(wgmma_tput_kernel<T, N>)) return std::nullopt;
    constexpr int eb = WgTraits<T>::elem_bytes;
    constexpr int k = WgTraits<T>::k;
    SplitMix rng(wgmma_operand_seed(seed, T, N));
    std::vector<double> am(64 * k), bm(std::size_t(N) * k);  // A: 64 x K; B stored N x K (K-major)
    for (auto& x : am) x = small_int(rng);
    for (auto& x : bm) x = small_int(rng);
    const double ab_sum = product_sum(am, 64, bm, N, k);
    const auto bytes = [&](const std::vector<double>& v, double sign) {
        std::vector<std::uint8_t> out(v.size() * eb);
        for (std::size_t i = 0; i < v.size(); ++i) {
            const std::uint32_t bits = wg_bits(T, sign * v[i]);
            for (int j = 0; j < eb; ++j) out[i * eb + j] = static_cast<std::uint8_t>(bits >> (8 * j));
        }
        return out;
    };
    auto da = std::make_shared<DeviceArray<std::uint8_t>>(bytes(am, 1.0));
    auto dbp = std::make_shared<DeviceArray<std::uint8_t>>(bytes(bm, 1.0));
    auto dbneg = std::make_shared<DeviceArray<std::uint8_t>>(bytes(bm, -1.0));
    const int grid = dev.sms * blocks_per_sm(reinterpret_cast<const void*>(wgmma_tput_kernel<T, N>), 128);
    auto sums = std::make_shared<DeviceArray<double>>(std::size_t(grid) * 128);
    auto built = std::make_shared<DeviceArray<int>>(1);
    const std::uint8_t *pa = buf.hold(da), *pbp = buf.hold(dbp), *pneg = buf.hold(dbneg);
    double* ps = buf.hold(sums);
    int* pb = buf.hold(built);
    Workload w;
    w.path = wg_path(T, N);
    w.dtype = name(T);
    w.unit = T == DType::i8 ? "Tops" : "Tflop/s";
    w.kernel = kernel_symbol(reinterpret_cast<const void*>(wgmma_tput_kernel<T, N>));
    w.launch = [=](long long iters, bool verify) {
        wgmma_tput_kernel<T, N><<<grid, 128>>>(pa, pbp, verify ? pbp : pneg, iters, ps, pb);
        RIGEL_CUDA_CHECK_LAUNCH();
    };
    w.checksum = checked_sum(sums, built);
    w.expected = [=](long long iters, bool verify) {
        return matrix_checksum(double(grid), ab_sum, wg_pairs, iters, verify) +
               loop_trips_sum(static_cast<long long>(grid) * 128, iters);
    };
    const double op = 2.0 * 64 * N * k;
    w.ops_per_iter = double(grid) * 2 * wg_pairs * op;
    w.ops_fixed = double(grid) * op;
    w.verify_iters = 2;
    w.datasheet = datasheet;
    w.datasheet_name = datasheet_name;
    w.note = "operands in shared memory (no swizzle), " + std::to_string(2 * wg_pairs) +
             " instructions per commit group on one accumulator, " + std::to_string(grid / dev.sms) +
             " CTAs (warpgroups) per SM";
    return w;
}

std::string fmt_sig(double v, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*g", digits, v);
    return b;
}

Finding ceiling_finding(const Workload& w, const Ceiling& c, const DeviceFacts& dev, const std::string& nvml_why) {
    Finding f = make_finding(probe_name, w.path, w.dtype, "sustained throughput ceiling");
    const double t = c.ops_per_s * 1e-12;
    f.measured = fmt_fixed(t, t < 10 ? 2 : 1);
    f.value = t;
    f.unit = w.unit;
    f.kernel = w.kernel;
    f.verified = c.verified_small && c.verified_timed;
    f.relation = DocRelation::fills_in;
    if (w.datasheet) {
        f.expected = fmt_sig(*w.datasheet, 4) + " (datasheet peak, " + w.datasheet_name + ")";
        f.doc_statement = "dense peak " + fmt_sig(*w.datasheet, 4) + " " + w.unit + " (" + w.datasheet_name +
                          "), a chip-level figure at boost clock, not a per-instruction ceiling";
        f.doc_source = "NVIDIA H100/H200 SXM datasheet";
    } else {
        f.doc_statement = "no per-instruction throughput is documented";
    }
    std::string d = "median of " + std::to_string(c.stats.reps) + " launches of " +
                    fmt_fixed(c.stats.median_s * 1e3, 1) + " ms (" + std::to_string(c.iters) + " iterations), noise " +
                    fmt_fixed(c.stats.noise_rel * 100, 1) + "%; " + w.note + ". ";
    if (c.sample.valid && std::isfinite(c.sample.sm_clock_mhz) && c.sample.sm_clock_mhz > 0) {
        f.sm_clock_mhz = c.sample.sm_clock_mhz;
        f.power_w = c.sample.power_w;
        f.power_max_w = c.sample.power_max_w;
        f.temp_c = c.sample.temp_c;
        f.clock_event_mask = c.sample.clock_event_mask;
        const auto num = [](double v, const char* unit) {
            return std::isfinite(v) ? fmt_fixed(v, 0) + " " + unit : std::string("n/a");
        };
        d += "SM clock " + num(c.sample.sm_clock_mhz, "MHz") + " (median), power " + num(c.sample.power_w, "W") +
             " mean / " + num(c.sample.power_max_w, "W") + " max, " + num(c.sample.temp_c, "C") +
             ", clock events: " + describe_clock_event_mask(c.sample.clock_event_mask) + "; that is " +
             fmt_sig(c.ops_per_s / (double(dev.sms) * c.sample.sm_clock_mhz * 1e6), 4) + " ops per clock per SM. ";
    } else {
        d += "clocks and power not sampled (" + (nvml_why.empty() ? std::string("no valid NVML sample") : nvml_why) +
             "). ";
    }
    if (!w.kernel.empty()) d += "Kernel " + w.kernel + ". ";
    d += "Checksums: short run " + fmt_f64(c.small_got) + " vs exact " + fmt_f64(c.small_want) + ", timed run " +
         fmt_f64(c.timed_got) + " vs exact " + fmt_f64(c.timed_want) + ".";
    f.detail = d;
    return f;
}

// NVIDIA's dense peaks for H100/H200 SXM (datasheet): only quoted for those
// products, and only for the paths they name.
bool datasheet_applies(const DeviceFacts& dev) {
    return dev.cc == 90 && (dev.name.find("H100") != std::string::npos || dev.name.find("H200") != std::string::npos);
}

}  // namespace

std::vector<Finding> run_throughput(const ProbeContext& ctx) {
    const DeviceFacts dev = device_facts();
    const Settings st = ctx.quick ? Settings{0.008, 0.02, 3} : Settings{0.1, 0.5, 5};
    std::unique_ptr<NvmlSampler> sampler = std::make_unique<NvmlSampler>(current_pci_bus_id());
    const std::string nvml_why = sampler->unavailable_reason();
    if (!nvml_why.empty()) sampler.reset();
    const bool ds = datasheet_applies(dev);
    const auto sheet = [&](double v) { return ds ? std::optional<double>(v) : std::nullopt; };

    std::vector<Finding> out;
    std::vector<std::pair<std::string, double>> ceilings;  // path key -> ops/s, for the ratios
    Buffers buf;
    const auto run = [&](std::optional<Workload> w, const std::string& key, const std::string& path_if_missing,
                         const std::string& dtype_if_missing, const std::string& why) {
        if (!w) {
            out.push_back(
                not_available(probe_name, path_if_missing, dtype_if_missing, "sustained throughput ceiling", why));
            return;
        }
        report(ctx, "throughput: " + w->path);
        const Ceiling c = measure_ceiling(*w, st, sampler.get());
        out.push_back(ceiling_finding(*w, c, dev, nvml_why));
        if (c.verified_small && c.verified_timed) ceilings.emplace_back(key, c.ops_per_s);
    };

    run(scalar_workload<float>("ffma (fp32 FMA)", "f32", dev, buf, sheet(67), "FP32"), "ffma", "", "", "");
    run(scalar_workload<__half2>("hfma2 (f16x2 FMA)", "f16", dev, buf, std::nullopt, ""), "hfma2", "", "", "");
    run(scalar_workload<__nv_bfloat162>("hfma2.bf16 (bf16x2 FMA)", "bf16", dev, buf, std::nullopt, ""), "hfma2_bf16",
        "", "", "");
    run(scalar_workload<double>("dfma (fp64 FMA)", "f64", dev, buf, sheet(34), "FP64"), "dfma", "", "", "");

    const auto mma_missing = [&](MmaKind k) {
        return dev.cc < min_cc(k)
                   ? "needs compute capability " + std::to_string(min_cc(k)) + ", device has " + std::to_string(dev.cc)
                   : std::string("this binary has no code for the instruction on this device");
    };
    const std::uint64_t seed = ctx.seed;
    run(mma_workload<MmaKind::f16_m16n8k16>(dev, buf, seed, sheet(989), "FP16 Tensor Core"), "mma_f16",
        ptx_name(MmaKind::f16_m16n8k16), "f16", mma_missing(MmaKind::f16_m16n8k16));
    run(mma_workload<MmaKind::bf16_m16n8k16>(dev, buf, seed, sheet(989), "BF16 Tensor Core"), "mma_bf16",
        ptx_name(MmaKind::bf16_m16n8k16), "bf16", mma_missing(MmaKind::bf16_m16n8k16));
    run(mma_workload<MmaKind::tf32_m16n8k8>(dev, buf, seed, sheet(495), "TF32 Tensor Core"), "mma_tf32",
        ptx_name(MmaKind::tf32_m16n8k8), "tf32", mma_missing(MmaKind::tf32_m16n8k8));
    run(mma_workload<MmaKind::e4m3_m16n8k32>(dev, buf, seed, sheet(1979), "FP8 Tensor Core"), "mma_e4m3",
        ptx_name(MmaKind::e4m3_m16n8k32), "e4m3", mma_missing(MmaKind::e4m3_m16n8k32));
    run(mma_workload<MmaKind::s8_m16n8k32>(dev, buf, seed, sheet(1979), "INT8 Tensor Core"), "mma_s8",
        ptx_name(MmaKind::s8_m16n8k32), "i8", mma_missing(MmaKind::s8_m16n8k32));
    run(mma_workload<MmaKind::f64_m8n8k4>(dev, buf, seed, sheet(67), "FP64 Tensor Core"), "mma_f64",
        ptx_name(MmaKind::f64_m8n8k4), "f64", mma_missing(MmaKind::f64_m8n8k4));
    run(dmma16816_workload(dev, buf, seed, sheet(67), "FP64 Tensor Core"), "mma_f64_m16n8k16", dmma16816_path, "f64",
        dev.cc < 90 ? "needs compute capability 90 (the m16n8k16 fp64 shape is sm_90's), device has " +
                          std::to_string(dev.cc)
                    : std::string("this binary has no code for the instruction on this device"));

    const std::string wg_why =
        dev.cc != 90 ? "wgmma exists on compute capability 9.0 (sm_90a) only; device has " + std::to_string(dev.cc)
                     : "this binary has no sm_90a code";
    const auto wg = [&](auto workload, DType t, int n, double peak, const char* peak_name) {
        run(workload(dev, buf, seed, sheet(peak), peak_name),
            "wgmma_" + std::string(name(t)) + "_n" + std::to_string(n), wg_path(t, n), std::string(name(t)), wg_why);
    };
    wg(wgmma_workload<DType::bf16, 8>, DType::bf16, 8, 989, "BF16 Tensor Core");
    wg(wgmma_workload<DType::bf16, 16>, DType::bf16, 16, 989, "BF16 Tensor Core");
    wg(wgmma_workload<DType::bf16, 32>, DType::bf16, 32, 989, "BF16 Tensor Core");
    wg(wgmma_workload<DType::bf16, 64>, DType::bf16, 64, 989, "BF16 Tensor Core");
    // N = 104: the narrow tail's tiles (k40, the library's fixed_tail), whose rate the tail's plan takes as
    // N's share of m64n128's.
    wg(wgmma_workload<DType::bf16, 104>, DType::bf16, 104, 989, "BF16 Tensor Core");
    wg(wgmma_workload<DType::bf16, 128>, DType::bf16, 128, 989, "BF16 Tensor Core");
    wg(wgmma_workload<DType::bf16, 256>, DType::bf16, 256, 989, "BF16 Tensor Core");
    wg(wgmma_workload<DType::e4m3, 8>, DType::e4m3, 8, 1979, "FP8 Tensor Core");
    wg(wgmma_workload<DType::e4m3, 16>, DType::e4m3, 16, 1979, "FP8 Tensor Core");
    wg(wgmma_workload<DType::e4m3, 32>, DType::e4m3, 32, 1979, "FP8 Tensor Core");
    wg(wgmma_workload<DType::e4m3, 64>, DType::e4m3, 64, 1979, "FP8 Tensor Core");
    wg(wgmma_workload<DType::e4m3, 128>, DType::e4m3, 128, 1979, "FP8 Tensor Core");
    wg(wgmma_workload<DType::e4m3, 256>, DType::e4m3, 256, 1979, "FP8 Tensor Core");
    wg(wgmma_workload<DType::f16, 256>, DType::f16, 256, 989, "FP16 Tensor Core");
    wg(wgmma_workload<DType::tf32, 256>, DType::tf32, 256, 495, "TF32 Tensor Core");
    wg(wgmma_workload<DType::i8, 256>, DType::i8, 256, 1979, "INT8 Tensor Core");

    // Ratios between verified ceilings, as plain numbers: the report applies
    // RIGEL's accelerated rule to the ceilings (reproduce/verdicts.py).
    const auto find = [&](const std::string& key) -> std::optional<double> {
        for (const auto& [k, v] : ceilings)
            if (k == key) return v;
        return std::nullopt;
    };
    const struct {
        const char* num;
        const char* den;
        const char* path;
        const char* dtype;
    } ratios[] = {{"mma_e4m3", "mma_f16", "mma.sync m16n8k32 e4m3 vs m16n8k16 f16", "e4m3"},
                  {"mma_s8", "mma_f16", "mma.sync m16n8k32 s8 vs m16n8k16 f16", "i8"},
                  {"wgmma_e4m3_n256", "wgmma_f16_n256", "wgmma m64n256 e4m3 vs f16", "e4m3"},
                  {"wgmma_i8_n256", "wgmma_f16_n256", "wgmma m64n256 s8 vs f16", "i8"},
                  {"wgmma_bf16_n256", "mma_bf16", "wgmma m64n256 bf16 vs mma.sync m16n8k16 bf16", "bf16"},
                  {"mma_f64_m16n8k16", "mma_f64", "mma.sync f64 m16n8k16 vs m8n8k4", "f64"},
                  {"mma_f64_m16n8k16", "dfma", "mma.sync f64 m16n8k16 vs DFMA", "f64"}};
    for (const auto& r : ratios) {
        const auto a = find(r.num), b = find(r.den);
        if (!a || !b) continue;
        Finding f = make_finding(probe_name, r.path, r.dtype, "ceiling ratio");
        f.measured = fmt_fixed(*a / *b, 2);
        f.value = *a / *b;
        f.unit = "x";
        f.verified = true;
        f.relation = DocRelation::fills_in;
        f.doc_statement = "no per-instruction throughput is documented";
        f.detail = "both ceilings verified above.";
        out.push_back(f);
    }
    return out;
}

}  // namespace rigel::probes
