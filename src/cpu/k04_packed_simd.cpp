// k04_cpu_packed_simd: the GotoBLAS/BLIS structure with an explicit SIMD
// microkernel, single-threaded.
// Run alone: rigel ladder --backend cpu --rungs k04_cpu_packed_simd --dtype f32 --sizes 2048
//
// Adds over k03: (1) a register-blocked microkernel. An MR x NR tile of C
// lives in vector registers for the whole K loop; each step loads NR/W vectors
// of B once and broadcasts MR values of A, so one loaded byte feeds many FMAs
// and C is loaded and stored once per KC, not once per k. AVX-512 f32: 14 x 32
// = 28 zmm accumulators; per step 2 vector loads of B and 14 broadcast loads
// of A feed 28 FMAs: 14 cycles on two FMA ports, with 28 independent chains to
// hide the 4-cycle FMA latency, and loads to spare. (2) Packing. A block of A
// (MC x KC) is copied into MR-tall panels and a block of B (KC x NC) into
// NR-wide panels, zero-padded at the edges, so the microkernel reads both
// strictly sequentially (no TLB or cache-set conflicts from the leading
// dimension) and its K loop has no edge case. Cache roles (BLIS): an MR x KC
// panel of A stays in the L1 while the panels of the KC x NC block of B,
// resident in the L2, stream past it; the MC x KC block of A sits in the L3.
// The AVX-512 and AVX2 microkernels are compiled with function-level target
// attributes and chosen at run time (__builtin_cpu_supports), so the binary
// runs on any x86-64; a portable C++ microkernel covers the rest.
// Bottleneck: the FMA ports, less the packing (about (M+N)K copies for 2MNK
// flops), the C tile's trips to memory once per KC, and the edge tiles.
// Prediction: about 80-85 % of the single-core FMA peak at N=2048, within
// 10 % of OpenBLAS (the same structure, in hand-written assembly there).
// Measured: README.md, "The climb" and "2048 x 2048 x 2048" (k04_cpu_packed_simd).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cpu/cpu_rungs.hpp"
#include "cpu/packed_gemm.hpp"

namespace rigel::cpu {
namespace packed {
namespace {

// Fetch the rows of a C tile into the L1 at the start of a microkernel call,
// so that they arrive while the K loop runs instead of stalling the stores at
// the end (C is far larger than the caches).
template <typename T, int MR, int NR>
[[gnu::always_inline]] inline void prefetch_c_tile(const T* c, std::int64_t ldc, int mr) {
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
        if (r >= mr) break;
        _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
}

// ---- AVX-512 -------------------------------------------------------------
template <typename T>
struct Avx512;

template <>
struct Avx512<float> {
    using V = __m512;
    using Mask = __mmask16;
    static constexpr int kWidth = 16;
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V zero() { return _mm512_setzero_ps(); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V load(const float* p) { return _mm512_load_ps(p); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V loadu(const float* p) { return _mm512_loadu_ps(p); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V add(V a, V b) { return _mm512_add_ps(a, b); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V mask_load(Mask m, const float* p) {
        return _mm512_maskz_loadu_ps(m, p);
    }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static void mask_store(float* p, Mask m, V v) {
        _mm512_mask_storeu_ps(p, m, v);
    }
};

template <>
struct Avx512<double> {
    using V = __m512d;
    using Mask = __mmask8;
    static constexpr int kWidth = 8;
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V zero() { return _mm512_setzero_pd(); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V load(const double* p) { return _mm512_load_pd(p); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V loadu(const double* p) { return _mm512_loadu_pd(p); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V broadcast(const double* p) { return _mm512_set1_pd(*p); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V add(V a, V b) { return _mm512_add_pd(a, b); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static void storeu(double* p, V v) { _mm512_storeu_pd(p, v); }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static V mask_load(Mask m, const double* p) {
        return _mm512_maskz_loadu_pd(m, p);
    }
    [[gnu::target("avx512f,fma"), gnu::always_inline]] static void mask_store(double* p, Mask m, V v) {
        _mm512_mask_storeu_pd(p, m, v);
    }
};

// MR x (NV * W) tile of C in MR * NV zmm registers. Edge tiles (mr < MR or
// nr < NR) are stored through write masks; the packed operands are
// zero-padded, so the K loop is the same for every tile.
template <typename T, int MR, int NV>
[[gnu::target("avx512f,fma")]] void microkernel_avx512(std::int64_t kc, const T* a, const T* b, T* c,
                                                         std::int64_t ldc, bool accumulate, int mr, int nr) {
    using O = Avx512<T>;
    constexpr int W = O::kWidth;
    static_assert(MR * NV + NV + 1 <= 32, "accumulators, B vectors and a broadcast fit the 32 zmm registers");
    // Fetch the C tile now; it arrives while the K loop runs instead of
    // stalling the stores at the end (C is far too large to stay cached).
    prefetch_c_tile<T, MR, NV * W>(c, ldc, mr);
    typename O::V acc[MR][NV];
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = O::zero();
#pragma GCC unroll 4
    for (std::int64_t p = 0; p < kc; ++p) {
        typename O::V bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = O::load(b + v * W);
#pragma GCC unroll 32
        for (int r = 0; r < MR; ++r) {
            const typename O::V ar = O::broadcast(a + r);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = O::fma(ar, bv[v], acc[r][v]);
        }
        a += MR;
        b += NV * W;
    }
    if (mr == MR && nr == NV * W) {
#pragma GCC unroll 32
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                T* cp = c + r * ldc + v * W;
                O::storeu(cp, accumulate ? O::add(acc[r][v], O::loadu(cp)) : acc[r][v]);
            }
        return;
    }
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
        if (r >= mr) break;
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            const int left = std::clamp(nr - v * W, 0, W);
            const auto mask = static_cast<typename O::Mask>((1u << left) - 1u);
            T* cp = c + r * ldc + v * W;
            O::mask_store(cp, mask, accumulate ? O::add(acc[r][v], O::mask_load(mask, cp)) : acc[r][v]);
        }
    }
}

// ---- AVX2 + FMA ----------------------------------------------------------
template <typename T>
struct Avx2;

template <>
struct Avx2<float> {
    using V = __m256;
    static constexpr int kWidth = 8;
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V zero() { return _mm256_setzero_ps(); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V load(const float* p) { return _mm256_load_ps(p); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V loadu(const float* p) { return _mm256_loadu_ps(p); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V add(V a, V b) { return _mm256_add_ps(a, b); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
};

template <>
struct Avx2<double> {
    using V = __m256d;
    static constexpr int kWidth = 4;
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V zero() { return _mm256_setzero_pd(); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V load(const double* p) { return _mm256_load_pd(p); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V loadu(const double* p) { return _mm256_loadu_pd(p); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V broadcast(const double* p) { return _mm256_broadcast_sd(p); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static V add(V a, V b) { return _mm256_add_pd(a, b); }
    [[gnu::target("avx2,fma"), gnu::always_inline]] static void storeu(double* p, V v) { _mm256_storeu_pd(p, v); }
};

// MR x (NV * W) tile of C in MR * NV ymm registers (16 of them in all). Edge
// tiles go through a small buffer: AVX2 has masked stores only through
// integer masks, and edges are a vanishing share of the work.
template <typename T, int MR, int NV>
[[gnu::target("avx2,fma")]] void microkernel_avx2(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc,
                                                  bool accumulate, int mr, int nr) {
    using O = Avx2<T>;
    constexpr int W = O::kWidth;
    static_assert(MR * NV + NV + 1 <= 16, "accumulators, B vectors and a broadcast fit the 16 ymm registers");
    prefetch_c_tile<T, MR, NV * W>(c, ldc, mr);
    typename O::V acc[MR][NV];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = O::zero();
#pragma GCC unroll 4
    for (std::int64_t p = 0; p < kc; ++p) {
        typename O::V bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = O::load(b + v * W);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const typename O::V ar = O::broadcast(a + r);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = O::fma(ar, bv[v], acc[r][v]);
        }
        a += MR;
        b += NV * W;
    }
    if (mr == MR && nr == NV * W) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                T* cp = c + r * ldc + v * W;
                O::storeu(cp, accumulate ? O::add(acc[r][v], O::loadu(cp)) : acc[r][v]);
            }
        return;
    }
    alignas(32) T tile[MR][NV * W];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) O::storeu(&tile[r][v * W], acc[r][v]);
    for (int r = 0; r < mr; ++r)
        for (int j = 0; j < nr; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + tile[r][j] : tile[r][j];
}

// ---- portable C++ ----------------------------------------------------------
// For CPUs without AVX2/FMA; the same packing, a small tile the compiler may
// vectorize with SSE2.
template <typename T, int MR, int NR>
void microkernel_portable(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc, bool accumulate, int mr,
                          int nr) {
    T acc[MR][NR] = {};
    for (std::int64_t p = 0; p < kc; ++p) {
        for (int r = 0; r < MR; ++r)
            for (int j = 0; j < NR; ++j) acc[r][j] += a[r] * b[j];
        a += MR;
        b += NR;
    }
    for (int r = 0; r < mr; ++r)
        for (int j = 0; j < nr; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

// ---- packing ---------------------------------------------------------------
// B[0:kc, 0:nc] (stride ldb) into ceil(nc/NR) panels, each kc rows of NR
// contiguous values; columns past nc are zero. Each row of B is read once,
// front to back (one stream the prefetchers follow), and scattered into the
// panels, which sit in the L2.
template <typename T, int NR>
void pack_b(const T* b, std::int64_t ldb, std::int64_t kc, std::int64_t nc, T* out) {
    const std::int64_t full = nc / NR * NR;
    for (std::int64_t p = 0; p < kc; ++p) {
        const T* src = b + p * ldb;
        T* dst = out + p * NR;
        for (std::int64_t j0 = 0; j0 < full; j0 += NR, dst += kc * NR)
            for (int j = 0; j < NR; ++j) dst[j] = src[j0 + j];
        if (full < nc)
            for (int j = 0; j < NR; ++j) dst[j] = full + j < nc ? src[full + j] : T(0);
    }
}

// A[0:mc, 0:kc] (stride lda) into ceil(mc/MR) panels, each kc columns of MR
// contiguous values; rows past mc are zero. The MR rows are read side by side
// (MR streams in flight, not one row after another, each a fresh page at a
// large stride) and the panel is written sequentially.
template <typename T, int MR>
void pack_a(const T* a, std::int64_t lda, std::int64_t mc, std::int64_t kc, T* out) {
    for (std::int64_t i0 = 0; i0 < mc; i0 += MR, out += kc * MR) {
        const std::int64_t h = std::min<std::int64_t>(MR, mc - i0);
        const T* rows = a + i0 * lda;
        if (h == MR) {
            for (std::int64_t p = 0; p < kc; ++p)
                for (int r = 0; r < MR; ++r) out[p * MR + r] = rows[r * lda + p];
        } else {
            for (std::int64_t p = 0; p < kc; ++p)
                for (int r = 0; r < MR; ++r) out[p * MR + r] = r < h ? rows[r * lda + p] : T(0);
        }
    }
}

// The microkernel, its packers and the cache blocking of each path, in the
// BLIS order (loops from the outside: MC rows of A, KC, NC columns of B, MR,
// NR). The MR x KC panel of A stays in the L1 while the NC/NR panels of the
// KC x NC block of B stream past it from the L2; the MC x KC block of A lives
// in the L3 and is packed once per KC step.
// AVX-512 (Sapphire Rapids: L1d 48 KB, L2 2 MB): the A panel is 14 KB (f32)
// or 16 KB (f64); the B block is 1 MB. f64 uses 8 x 24 (24 zmm accumulators,
// 3 loads of B and 8 broadcasts per 24 FMAs): it ran about 5 % faster than
// 14 x 16 on a Sapphire Rapids core; in f32, 14 x 32 and 8 x 48 tie.
// AVX2: the B block is 192 KB, within a 256 KB L2.
template <typename T, int MR, int NR, std::int64_t KC, std::int64_t MC, std::int64_t NC>
Kernel<T> make_kernel(Microkernel<T> run) {
    static_assert(MR > 0 && NR > 0 && KC > 0);
    static_assert(MC % MR == 0 && NC % NR == 0, "blocks are whole register tiles");
    static_assert(MR * KC * sizeof(T) <= 32 * 1024, "the A panel fits the L1 beside a few lines of B");
    return {run, pack_a<T, MR>, pack_b<T, NR>, MR, NR, KC, MC, NC};
}

template <typename T>
Kernel<T> kernel_for(SimdPath path) {
    constexpr bool f32 = sizeof(T) == 4;
    switch (path) {
    case SimdPath::avx512:
        if constexpr (f32)
            return make_kernel<float, 14, 32, 256, 2016, 1024>(microkernel_avx512<float, 14, 2>);
        else
            return make_kernel<double, 8, 24, 256, 1008, 504>(microkernel_avx512<double, 8, 3>);
    case SimdPath::avx2:
        if constexpr (f32)
            return make_kernel<float, 6, 16, 256, 1020, 192>(microkernel_avx2<float, 6, 2>);
        else
            return make_kernel<double, 6, 8, 256, 510, 96>(microkernel_avx2<double, 6, 2>);
    default:
        return make_kernel<T, 4, 8, 256, 512, 128>(microkernel_portable<T, 4, 8>);
    }
}

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

template <typename T>
void gemm(const GemmProblem& p) {
    // The runner calls rungs from one thread; thread_local keeps the buffers
    // correct if anyone calls from several.
    thread_local PackBuffers ws;
    const auto* a = static_cast<const T*>(p.a);
    const auto* b = static_cast<const T*>(p.b);
    auto* c = static_cast<T*>(p.c);
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const Kernel<T> ker = active_kernel<T>();
    const std::int64_t mc_step = even_block(m, ker.mc, ker.mr);
    const std::int64_t nc_step = even_block(n, ker.nc, ker.nr);
    const std::int64_t kc_step = even_block(k, ker.kc, 1);
    T* ap = static_cast<T*>(ws.a(sizeof(T) * static_cast<std::size_t>(kc_step * mc_step)));
    T* bp = static_cast<T*>(ws.b(sizeof(T) * static_cast<std::size_t>(kc_step * nc_step)));
    for (std::int64_t ic = 0; ic < m; ic += mc_step) {
        const std::int64_t mc = std::min(mc_step, m - ic);
        for (std::int64_t pc = 0; pc < k; pc += kc_step) {
            const std::int64_t kc = std::min(kc_step, k - pc);
            // The first KC block overwrites C (which may hold anything, e.g.
            // the verifier's poison); later ones accumulate.
            const bool accumulate = pc > 0;
            ker.pack_a(a + ic * k + pc, k, mc, kc, ap);
            for (std::int64_t jc = 0; jc < n; jc += nc_step) {
                const std::int64_t nc = std::min(nc_step, n - jc);
                ker.pack_b(b + pc * n + jc, n, kc, nc, bp);
                for (std::int64_t ir = 0; ir < mc; ir += ker.mr) {
                    const int mr = static_cast<int>(std::min<std::int64_t>(ker.mr, mc - ir));
                    const T* apanel = ap + ir * kc;
                    T* crow = c + (ic + ir) * n + jc;
                    for (std::int64_t jr = 0; jr < nc; jr += ker.nr) {
                        const int nr = static_cast<int>(std::min<std::int64_t>(ker.nr, nc - jr));
                        ker.run(kc, apanel, bp + jr * kc, crow + jr, n, accumulate, mr, nr);
                    }
                }
            }
        }
    }
}

bool cpu_has(SimdPath s) {
    switch (s) {
    case SimdPath::avx512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case SimdPath::avx2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default:
        return true;
    }
}

SimdPath best_path() {
    if (cpu_has(SimdPath::avx512)) return SimdPath::avx512;
    if (cpu_has(SimdPath::avx2)) return SimdPath::avx2;
    return SimdPath::portable;
}

std::atomic<SimdPath> g_forced{SimdPath::automatic};

}  // namespace

std::int64_t even_block(std::int64_t extent, std::int64_t limit, std::int64_t tile) {
    const std::int64_t blocks = (extent + limit - 1) / limit;
    return round_up((extent + blocks - 1) / blocks, tile);
}

template <typename T>
Kernel<T> active_kernel() {
    return kernel_for<T>(active_simd_path());
}
template Kernel<float> active_kernel<float>();
template Kernel<double> active_kernel<double>();

void PackBuffers::Free::operator()(void* p) const { std::free(p); }

void* PackBuffers::grow(std::unique_ptr<void, Free>& buf, std::size_t& have, std::size_t need) {
    if (need > have) {
        // 64-byte alignment: the microkernels use aligned loads of the packed panels.
        const std::size_t bytes = (need + 63) / 64 * 64;
        void* p = std::aligned_alloc(64, bytes);
        if (!p) throw std::bad_alloc();
        buf.reset(p);
        have = bytes;
    }
    return buf.get();
}

}  // namespace packed

std::string_view name(SimdPath s) {
    switch (s) {
    case SimdPath::automatic: return "automatic";
    case SimdPath::portable: return "portable";
    case SimdPath::avx2: return "avx2";
    case SimdPath::avx512: return "avx512";
    }
    return "?";
}

bool simd_path_supported(SimdPath s) { return packed::cpu_has(s); }

bool force_simd_path(SimdPath s) {
    if (!packed::cpu_has(s)) return false;
    packed::g_forced.store(s);
    return true;
}

SimdPath active_simd_path() {
    const SimdPath forced = packed::g_forced.load();
    if (forced != SimdPath::automatic) return forced;
    static const SimdPath best = packed::best_path();
    return best;
}

void k04_packed_simd(const GemmProblem& p) {
    if (p.type == DType::f64)
        packed::gemm<double>(p);
    else
        packed::gemm<float>(p);
}

}  // namespace rigel::cpu
