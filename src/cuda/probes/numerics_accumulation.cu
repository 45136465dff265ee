// Probe accumulation: how the matrix instructions add. Per path (mma.sync
// f16, bf16, tf32, e4m3, e5m2, e4m3 x e5m2; wgmma bf16, e4m3, e5m2,
// e4m3 x e5m2 on sm_90a) it asks, with crafted dot
// products in row 0 / column 0 of the instruction's matrices:
//   - are products exact; are subnormal inputs and results kept or flushed;
//   - how many products share one alignment step (the fused block), whether C
//     joins it, and how many bits below the largest term's leading bit survive
//     alignment (and how the rest is cut);
//   - how the fp32 result is rounded; does C pass through untouched;
//   - RIGEL's hostile sum (one large term plus 127 small ones, the gap scanned
//     until the small ones vanish) and its famous 448 + 127 x 0.0625 check;
//   - monotonicity (after Fasi et al.: a larger input can give a smaller sum);
//   - and finally whether the model assembled from those answers reproduces
//     random dot products bit for bit.
// Every device value is compared with the float64 (exact) value of the same
// bytes and with what the model predicts. Methods after Fasi, Higham,
// Mikaitis and Pranesh (2021) and Khattak and Mikaitis (2025). This file holds
// the kernels; the battery of experiments and its inference are plain C++ in
// numerics_battery.hpp (tested on the host against a model device), the
// model in numerics_model.hpp.
#include <bit>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cuda/probes/mma_sync_ptx.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "cuda/probes/wgmma_ptx.cuh"
#include "probes/layouts/fragment_maps.hpp"
#include "probes/numerics/numerics_battery.hpp"
#include "probes/numerics/numerics_model.hpp"

namespace rigel::probes {
namespace {

// ---- kernels -------------------------------------------------------------------------------

template <int Bytes>
__device__ std::uint32_t load_elem(const std::uint8_t* p) {
    if constexpr (Bytes == 1) return p[0];
    if constexpr (Bytes == 2) return *reinterpret_cast<const std::uint16_t*>(p);
    if constexpr (Bytes == 4) return *reinterpret_cast<const std::uint32_t*>(p);
}

// One experiment per warp: A (M x k_total, row-major), B (N x k_total: column
// n of B is row n), C and D (M x N f32) in global memory; fragments placed by
// the documented layouts (which the layout probe checks), k_total / K
// instructions chained through the accumulator.
template <MmaKind K>
__global__ void __launch_bounds__(128) dot_mma_kernel(const std::uint8_t* a, const std::uint8_t* b, const float* c,
                                                      float* d, int k_total, int experiments, int* built) {
    constexpr MmaShape s = shape_of(K);
    constexpr int eb = s.elem_bytes;
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = mma_compiled(K) ? 1 : 0;
    if constexpr (mma_compiled(K)) {
        const int lane = threadIdx.x & 31;
        const int e = blockIdx.x * 4 + static_cast<int>(threadIdx.x >> 5);
        if (e >= experiments) return;  // whole warps only
        const std::uint8_t* ae = a + std::size_t(e) * s.m * k_total * eb;
        const std::uint8_t* be = b + std::size_t(e) * s.n * k_total * eb;
        const float* ce = c + std::size_t(e) * s.m * s.n;
        float acc[s.d_elems];
#pragma unroll
        for (int i = 0; i < s.d_elems; ++i) {
            const Coord p = doc_coord(K, Operand::cd, lane, i);
            acc[i] = ce[p.row * s.n + p.col];
        }
        for (int k0 = 0; k0 < k_total; k0 += s.k) {
            std::uint32_t ar[a_words(K)] = {}, br[b_words(K)] = {};
#pragma unroll
            for (int i = 0; i < s.a_elems; ++i) {
                const Coord p = doc_coord(K, Operand::a, lane, i);
                ar[i * eb / 4] |= load_elem<eb>(ae + (std::size_t(p.row) * k_total + k0 + p.col) * eb)
                                  << (8 * (i * eb % 4));
            }
#pragma unroll
            for (int i = 0; i < s.b_elems; ++i) {
                const Coord p = doc_coord(K, Operand::b, lane, i);  // p.row is k, p.col is n
                br[i * eb / 4] |= load_elem<eb>(be + (std::size_t(p.col) * k_total + k0 + p.row) * eb)
                                  << (8 * (i * eb % 4));
            }
            mma<K>(acc, ar, br);
        }
#pragma unroll
        for (int i = 0; i < s.d_elems; ++i) {
            const Coord p = doc_coord(K, Operand::cd, lane, i);
            d[std::size_t(e) * s.m * s.n + p.row * s.n + p.col] = acc[i];
        }
    }
}

// One experiment per CTA (one warpgroup): m64n8, A (64 x k_total) and B
// (8 x k_total) staged in shared memory in the no-swizzle K-major layout,
// Steps = k_total / K wgmma instructions chained on one accumulator.
// MixedB: T is e4m3 and B is e5m2.
template <DType T, int Steps, bool MixedB = false>
__global__ void __launch_bounds__(128) dot_wgmma_kernel(const std::uint8_t* a, const std::uint8_t* b, const float* c,
                                                        float* d, int k_total, int experiments, int* built) {
    constexpr int eb = WgTraits<T>::elem_bytes;
    constexpr int kin = WgTraits<T>::k;
    constexpr int m = 64, n = 8;
    if (k_total != Steps * kin) __trap();  // the host picks the instantiation from k_total
    extern __shared__ __align__(128) std::uint8_t smem[];
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = wgmma_compiled() ? 1 : 0;
    if constexpr (wgmma_compiled()) {
        const int e = blockIdx.x;
        const int tid = threadIdx.x;
        if (e >= experiments) return;  // the whole CTA
        const int row_bytes = k_total * eb;
        const int chunks = row_bytes / 16;
        std::uint8_t* sa = smem;
        std::uint8_t* sb = smem + m * row_bytes;
        const std::uint8_t* ae = a + std::size_t(e) * m * row_bytes;
        const std::uint8_t* be = b + std::size_t(e) * n * row_bytes;
        for (int i = tid; i < m * chunks; i += 128) {
            const int r = i / chunks, q = i % chunks;
            *reinterpret_cast<uint4*>(sa + kmajor_offset(r, q * (16 / eb), m, eb)) =
                *reinterpret_cast<const uint4*>(ae + std::size_t(r) * row_bytes + q * 16);
        }
        for (int i = tid; i < n * chunks; i += 128) {
            const int r = i / chunks, q = i % chunks;
            *reinterpret_cast<uint4*>(sb + kmajor_offset(r, q * (16 / eb), n, eb)) =
                *reinterpret_cast<const uint4*>(be + std::size_t(r) * row_bytes + q * 16);
        }
        fence_proxy_async_smem();
        __syncthreads();
        const float* ce = c + std::size_t(e) * m * n;
        float acc[n / 2];
#pragma unroll
        for (int i = 0; i < n / 2; ++i) {
            const Coord p = wgmma_d_coord(tid, i);
            acc[i] = ce[p.row * n + p.col];
        }
        wgmma_fence();
#pragma unroll
        for (int step = 0; step < Steps; ++step) {
            const int chunk0 = step * kin * eb / 16;
            const std::uint64_t da = smem_desc(sa + chunk0 * m * 16, m * 16, 128);
            const std::uint64_t db = smem_desc(sb + chunk0 * n * 16, n * 16, 128);
            if constexpr (MixedB) {
                static_assert(T == DType::e4m3, "the mixed path is e4m3 x e5m2");
                wgmma_e4m3_e5m2_n8(acc, da, db, 1u);
            } else {
                wgmma<T, n>(acc, da, db, 1u);
            }
        }
        wgmma_commit();
        wgmma_wait_all();
#pragma unroll
        for (int i = 0; i < n / 2; ++i) {
            fence_operand(acc[i]);
            const Coord p = wgmma_d_coord(tid, i);
            d[std::size_t(e) * m * n + p.row * n + p.col] = acc[i];
        }
    }
}

template <typename Kernel>
std::optional<std::vector<float>> launch(Kernel kernel, const Batch& bt, int k_total, int blocks, int threads,
                                         std::size_t smem, std::size_t out_per_exp) {
    if (!kernel_has_image(kernel)) return std::nullopt;
    DeviceArray<std::uint8_t> da(bt.a), db(bt.b);
    DeviceArray<float> dc(bt.c), dd(out_per_exp * bt.count);
    DeviceArray<int> built(1);
    dd.fill_bytes(0xFF);  // NaN poison: an unwritten element cannot pass
    kernel<<<blocks, threads, smem>>>(da.get(), db.get(), dc.get(), dd.get(), k_total, bt.count, built.get());
    RIGEL_CUDA_CHECK_LAUNCH();
    RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
    if (built.download()[0] != 1) return std::nullopt;
    return dd.download();
}

// D (count x M x N) for a batch; nullopt when this binary cannot run the path here.
std::optional<std::vector<float>> run_batch(const NumPath& p, const Batch& bt, int k_total) {
    const std::size_t per = std::size_t(p.m) * p.n;
    const int warp_blocks = (bt.count + 3) / 4;
    const std::size_t smem = std::size_t(p.m + p.n) * k_total * facts(p.type).elem_bytes;
    // One instruction (k_total = its K) or RIGEL's 128-term chain of them.
    const auto wgmma = [&]<DType T, int K, bool MixedB>() -> std::optional<std::vector<float>> {
        if (k_total == K) return launch(dot_wgmma_kernel<T, 1, MixedB>, bt, k_total, bt.count, 128, smem, per);
        if (k_total == chain_k)
            return launch(dot_wgmma_kernel<T, chain_k / K, MixedB>, bt, k_total, bt.count, 128, smem, per);
        throw std::logic_error("accumulation: no wgmma kernel for k_total " + std::to_string(k_total));
    };
    switch (p.id) {
        case PathId::mma_f16:
            return launch(dot_mma_kernel<MmaKind::f16_m16n8k16>, bt, k_total, warp_blocks, 128, 0, per);
        case PathId::mma_bf16:
            return launch(dot_mma_kernel<MmaKind::bf16_m16n8k16>, bt, k_total, warp_blocks, 128, 0, per);
        case PathId::mma_tf32:
            return launch(dot_mma_kernel<MmaKind::tf32_m16n8k8>, bt, k_total, warp_blocks, 128, 0, per);
        case PathId::mma_e4m3:
            return launch(dot_mma_kernel<MmaKind::e4m3_m16n8k32>, bt, k_total, warp_blocks, 128, 0, per);
        case PathId::mma_e5m2:
            return launch(dot_mma_kernel<MmaKind::e5m2_m16n8k32>, bt, k_total, warp_blocks, 128, 0, per);
        case PathId::mma_e4m3_e5m2:
            return launch(dot_mma_kernel<MmaKind::e4m3_e5m2_m16n8k32>, bt, k_total, warp_blocks, 128, 0, per);
        case PathId::wgmma_bf16: return wgmma.operator()<DType::bf16, 16, false>();
        case PathId::wgmma_e4m3: return wgmma.operator()<DType::e4m3, 32, false>();
        case PathId::wgmma_e5m2: return wgmma.operator()<DType::e5m2, 32, false>();
        case PathId::wgmma_e4m3_e5m2: return wgmma.operator()<DType::e4m3, 32, true>();
    }
    throw std::logic_error("accumulation: no kernel for this path");
}

}  // namespace

std::vector<Finding> run_accumulation(const ProbeContext& ctx) {
    const DeviceFacts dev = device_facts();
    std::vector<Finding> out;
    for (const NumPath& p : paths) {
        report(ctx, std::string("accumulation: ") + p.ptx);
        const bool cc_ok = p.wgmma ? dev.cc == 90 : dev.cc >= p.min_cc;
        if (!cc_ok) {
            out.push_back(not_available(
                accumulation_probe, p.ptx, facts(p.type).name, "accumulation numerics",
                p.wgmma ? "wgmma exists on compute capability 9.0 (sm_90a) only; device has " + std::to_string(dev.cc)
                        : "needs compute capability " + std::to_string(p.min_cc) + ", device has " +
                              std::to_string(dev.cc)));
            continue;
        }
        PathProbe probe(p, ctx, [&p](const Batch& bt, int k_total) { return run_batch(p, bt, k_total); });
        if (!probe.available()) {
            out.push_back(not_available(accumulation_probe, p.ptx, facts(p.type).name, "accumulation numerics",
                                        "this binary has no code for the instruction on this device"));
            continue;
        }
        probe.run_all(out);
    }
    return out;
}

}  // namespace rigel::probes
