// The library's epilogue: what happens to a finished fp32 accumulator tile
// before it leaves the SM, D = epilogue(alpha acc + beta C), written in D's
// type (include/rigel/gemm.hpp defines each epilogue). Two users:
//   FusedEpilogue, the Epi policy of warp_specialized_kernel: the consumers
//     apply it to their registers as they store (the fused path);
//   epilogue_kernel (epilogue_kernel.cu): an elementwise pass over a matrix
//     already in memory, the split-K reduction's second half and the
//     decomposed path's second kernel.
// Both evaluate the same finish() in fp32, so they differ only where the
// input does (the decomposed path's D was rounded to D's type first).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/gelu.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/hopper/sm90_cluster.cuh"
#include "cuda/hopper/tma_store_f32.cuh"
#include "cuda/hopper/wgmma.cuh"
#include "cuda/ladder/tensor_rungs.cuh"  // ldmatrix_x4
#include "rigel/gemm.hpp"

namespace rigel::cuda::gemm_kernels {

using gemm::Epilogue;
using gemm::Type;

// Everything the epilogue reads and writes; one struct passed by value.
struct EpilogueParams {
    void* d = nullptr;
    const void* c = nullptr;  // read when beta != 0
    const void* bias = nullptr;
    void* aux = nullptr;
    float* bgrad = nullptr;  // zeroed by the plan before the kernel; atomically accumulated
    std::int64_t ldd = 0, ldc = 0, ldaux = 0;
    float alpha = 1.0f, beta = 0.0f;
    Epilogue kind = Epilogue::none;
    Type d_type = Type::f32;  // also C's, aux's and (for bf16/f16) bias's type
    bool paired = false;      // D, C, aux and bias can be read and written two elements at a time
    bool octets = false;      // ... and eight at a time (16-byte aligned rows and pointers)
};

// -- the math, in fp32 (GELU: cuda/gelu.cuh) ---------------------------------

__host__ __device__ constexpr bool takes_bias(Epilogue e) {
    return e == Epilogue::bias || e == Epilogue::bias_relu || e == Epilogue::bias_gelu ||
           e == Epilogue::bias_gelu_erf || e == Epilogue::bias_gelu_aux;
}

// `x` is alpha * acc + beta * C; returns what D holds, and sets `pre` to what
// aux gets (bias_gelu_aux) or reads `aux_in` (dgelu_bgrad).
__device__ __forceinline__ float finish(Epilogue kind, float x, float bias, float aux_in, float& pre) {
    switch (kind) {
        case Epilogue::none: return x;
        case Epilogue::bias: return x + bias;
        case Epilogue::bias_relu: return fmaxf(x + bias, 0.0f);
        case Epilogue::bias_gelu: return gelu_tanh(x + bias);
        case Epilogue::bias_gelu_erf: return gelu_erf(x + bias);
        case Epilogue::bias_gelu_aux: pre = x + bias; return gelu_tanh(pre);
        case Epilogue::dgelu_bgrad: return x * gelu_tanh_grad(aux_in);
    }
    return x;
}

// -- element access in D's type ------------------------------------------------
template <class T>
struct Elem;
template <>
struct Elem<float> {
    static __device__ __forceinline__ float load(const void* p, std::int64_t i) { return static_cast<const float*>(p)[i]; }
    static __device__ __forceinline__ float2 load2(const void* p, std::int64_t i) {
        return *reinterpret_cast<const float2*>(static_cast<const float*>(p) + i);
    }
    static __device__ __forceinline__ void store(void* p, std::int64_t i, float v) { static_cast<float*>(p)[i] = v; }
    static __device__ __forceinline__ void store2(void* p, std::int64_t i, float a, float b) {
        *reinterpret_cast<float2*>(static_cast<float*>(p) + i) = make_float2(a, b);
    }
};
template <>
struct Elem<__nv_bfloat16> {
    static __device__ __forceinline__ float load(const void* p, std::int64_t i) {
        return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    }
    static __device__ __forceinline__ float2 load2(const void* p, std::int64_t i) {
        return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(static_cast<const __nv_bfloat16*>(p) + i));
    }
    static __device__ __forceinline__ void store(void* p, std::int64_t i, float v) {
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    }
    static __device__ __forceinline__ void store2(void* p, std::int64_t i, float a, float b) {
        *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p) + i) = __floats2bfloat162_rn(a, b);
    }
};
template <>
struct Elem<__half> {
    static __device__ __forceinline__ float load(const void* p, std::int64_t i) {
        return __half2float(static_cast<const __half*>(p)[i]);
    }
    static __device__ __forceinline__ float2 load2(const void* p, std::int64_t i) {
        return __half22float2(*reinterpret_cast<const __half2*>(static_cast<const __half*>(p) + i));
    }
    static __device__ __forceinline__ void store(void* p, std::int64_t i, float v) {
        static_cast<__half*>(p)[i] = __float2half_rn(v);
    }
    static __device__ __forceinline__ void store2(void* p, std::int64_t i, float a, float b) {
        *reinterpret_cast<__half2*>(static_cast<__half*>(p) + i) = __floats2half2_rn(a, b);
    }
};

// Eight consecutive elements in D's type, as 16-byte accesses (two for f32;
// the address must be 16-byte aligned), kept packed in registers until an
// element is used: 4 registers for eight 16-bit values instead of 8 floats.
template <class T>
struct Vec8 {
    static constexpr int kWords = sizeof(T) / 2;  // 16-byte words per 8 elements
    struct Packed {
        uint4 w[kWords];
    };
    static __device__ __forceinline__ Packed load(const void* p, std::int64_t i) {
        const uint4* s = reinterpret_cast<const uint4*>(static_cast<const T*>(p) + i);
        Packed v;
#pragma unroll
        for (int j = 0; j < kWords; ++j) v.w[j] = s[j];
        return v;
    }
    // Element e (a compile-time index after unrolling) in fp32.
    static __device__ __forceinline__ float get(const Packed& v, int e) {
        if constexpr (std::is_same_v<T, float>) {
            return reinterpret_cast<const float*>(v.w)[e];
        } else {
            const T x = reinterpret_cast<const T*>(v.w)[e];
            if constexpr (std::is_same_v<T, __half>) return __half2float(x);
            else return __bfloat162float(x);
        }
    }
    static __device__ __forceinline__ void store(void* p, std::int64_t i, const float (&v)[8]) {
        Packed out;
        if constexpr (std::is_same_v<T, float>) {
            float* f = reinterpret_cast<float*>(out.w);
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = v[e];
        } else {
            using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
            Pair* pairs = reinterpret_cast<Pair*>(out.w);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if constexpr (std::is_same_v<T, __half>) pairs[j] = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
                else pairs[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
            }
        }
        uint4* d = reinterpret_cast<uint4*>(static_cast<T*>(p) + i);
#pragma unroll
        for (int j = 0; j < kWords; ++j) d[j] = out.w[j];
    }
};

// Calls f.template operator()<K>() with the run-time epilogue as a
// compile-time K: one instance of the element loop per epilogue.
template <class F>
__device__ __forceinline__ auto with_epilogue(Epilogue kind, F&& f) {
    switch (kind) {
        case Epilogue::bias: return f.template operator()<Epilogue::bias>();
        case Epilogue::bias_relu: return f.template operator()<Epilogue::bias_relu>();
        case Epilogue::bias_gelu: return f.template operator()<Epilogue::bias_gelu>();
        case Epilogue::bias_gelu_erf: return f.template operator()<Epilogue::bias_gelu_erf>();
        case Epilogue::bias_gelu_aux: return f.template operator()<Epilogue::bias_gelu_aux>();
        case Epilogue::dgelu_bgrad: return f.template operator()<Epilogue::dgelu_bgrad>();
        case Epilogue::none: break;
    }
    return f.template operator()<Epilogue::none>();
}

// Bias is f32 when D is f32, else D's type: the same Elem<T>.
// One element (r, col) through the whole epilogue; returns D's value in fp32
// (before D's rounding: what bgrad sums).
template <class T>
__device__ __forceinline__ float epilogue_element(const EpilogueParams& p, float acc, std::int64_t r, int col) {
    float x = p.alpha * acc;
    if (p.beta != 0.0f) x += p.beta * Elem<T>::load(p.c, r * p.ldc + col);
    const bool bias = takes_bias(p.kind);
    const float b = bias ? Elem<T>::load(p.bias, col) : 0.0f;
    const float aux_in = p.kind == Epilogue::dgelu_bgrad ? Elem<T>::load(p.aux, r * p.ldaux + col) : 0.0f;
    float pre = 0.0f;
    const float v = finish(p.kind, x, b, aux_in, pre);
    if (p.kind == Epilogue::bias_gelu_aux) Elem<T>::store(p.aux, r * p.ldaux + col, pre);
    Elem<T>::store(p.d, r * p.ldd + col, v);
    return v;
}

// The fused policy for warp_specialized_kernel: a consumer warpgroup's 64 x BN
// accumulator tile goes out 32 columns at a time through its 10 KB of shared
// memory. For each chunk, every thread writes its fragment of the chunk
// (layout: sm90.cuh, store_accumulators) to the staging rows, the warpgroup
// meets at a named barrier, and each thread takes 2 adjacent columns of 8 rows
// (a warp: two rows of 32 columns, coalesced) through the epilogue.
//
// Why staged: the epilogue's code is a switch over seven epilogues and three
// output types. Applied straight to the registers, it has to be unrolled over
// all BN/8 column groups (registers are indexed at compile time), and the
// result is a kernel of hundreds of kilobytes whose epilogue runs from L2, not
// from the instruction cache: on the H200 machine that cost ~120 us per tile.
// Staged, the registers leave through a few unrolled shared-memory stores and
// the epilogue is one small loop, the same for every chunk.
//
// Staging rows are 40 floats (160 bytes) apart: the fragment's float2 writes
// (a half-warp: 4 rows x 32 bytes) and the epilogue's float2 reads (a
// half-warp: 128 contiguous bytes of a row) are both free of bank conflicts.
// bgrad: each thread sums its 8 rows, lanes l and l + 16 (the same columns)
// combine by a shuffle, and lanes 0-15 add into bgrad atomically: 4 adds per
// column, chunk and consumer.
//
// Where D, C, aux and bias rows are 16-byte aligned (p.octets) and the chunk
// lies inside N, each thread takes 8 adjacent columns of 2 rows instead
// (finish_octets): 16-byte loads and stores, half the instructions per
// element. The epilogue runs with one warp per scheduler, so its speed is its
// instruction count times their latency; on the H200 machine the pair path
// held GPT-2's K = 768 products to about half of cuBLASLt's rate (before the
// parameters and the octets left local memory: docs/gemm.md).
struct FusedEpilogue {
    using Params = EpilogueParams;
    static constexpr int kChunkCols = 32;
    static constexpr int kStagingStride = 40;
    static constexpr int kStagingBytes = sm90::kWgmmaM * kStagingStride * 4;

    // Chunk `chunk` of the fragment (column groups j = 4 chunk .. 4 chunk + 3)
    // into the staging rows: a chain of compile-time cases, because registers
    // cannot be indexed at run time.
    template <int BN, int C = 0>
    static __device__ __forceinline__ void stage(const float (&acc)[BN / 2], int chunk, float* staging, int warp,
                                                 int lane) {
        if constexpr (C < (BN + kChunkCols - 1) / kChunkCols) {
            if (chunk != C) return stage<BN, C + 1>(acc, chunk, staging, warp, lane);
#pragma unroll
            for (int jj = 0; jj < 4 && 4 * C + jj < BN / 8; ++jj) {  // a 168-column tile's last chunk: one group
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int j = 4 * C + jj;
                    const int r = 16 * warp + lane / 4 + 8 * h;
                    const int c = 8 * jj + 2 * (lane % 4);
                    *reinterpret_cast<float2*>(staging + r * kStagingStride + c) =
                        make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                }
            }
        }
    }

    // The staged chunk through the epilogue: this thread's columns 2 (t % 16)
    // and + 1 of rows t / 16 + 8 i, both inside N and stored as one pair.
    // Returns the columns' sums (bgrad). One instance per output type and
    // epilogue (K), chosen once per chunk, so that the row loop carries no
    // switch and the bias pair is loaded once.
    template <class T, Epilogue K>
    static __device__ __forceinline__ float2 finish_pairs(const Params& p, const float* staging, int rows_left,
                                                          std::int64_t row0, int cc, int col, int t) {
        constexpr int kRows = sm90::kWgmmaM / 8;  // this thread's rows of the chunk
        float2 sum = make_float2(0.0f, 0.0f);
        float2 bv = make_float2(0.0f, 0.0f);
        if constexpr (takes_bias(K)) bv = Elem<T>::load2(p.bias, cc);
        // Every global read of the chunk first (C, aux), so that their
        // latencies overlap: C may be D itself, and a read after a store to D
        // would otherwise wait for that store, one memory latency per row.
        float2 cv[kRows], av[kRows];
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
            const int r = t / 16 + 8 * i;
            const std::int64_t row = row0 + r;
            cv[i] = av[i] = make_float2(0.0f, 0.0f);
            if (r < rows_left && p.beta != 0.0f) cv[i] = Elem<T>::load2(p.c, row * p.ldc + cc);
            if constexpr (K == Epilogue::dgelu_bgrad)
                if (r < rows_left) av[i] = Elem<T>::load2(p.aux, row * p.ldaux + cc);
        }
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
            const int r = t / 16 + 8 * i;
            if (r >= rows_left) break;
            const float2 a = *reinterpret_cast<const float2*>(staging + r * kStagingStride + col);
            const std::int64_t row = row0 + r;
            float x0 = p.alpha * a.x, x1 = p.alpha * a.y;
            if (p.beta != 0.0f) {
                x0 += p.beta * cv[i].x;
                x1 += p.beta * cv[i].y;
            }
            float pre0 = 0.0f, pre1 = 0.0f;
            const float v0 = finish(K, x0, bv.x, av[i].x, pre0);
            const float v1 = finish(K, x1, bv.y, av[i].y, pre1);
            if constexpr (K == Epilogue::bias_gelu_aux) Elem<T>::store2(p.aux, row * p.ldaux + cc, pre0, pre1);
            Elem<T>::store2(p.d, row * p.ldd + cc, v0, v1);
            sum.x += v0;
            sum.y += v1;
        }
        return sum;
    }

    // The same, one element at a time: the last column of an odd N, or
    // leading dimensions or pointers that do not allow pairs.
    template <class T>
    static __device__ __noinline__ float2 finish_singles(const Params& p, const float* staging, int rows_left,
                                                         int cols_left, std::int64_t row0, int cc, int col, int t) {
        float2 sum = make_float2(0.0f, 0.0f);
        for (int r = t / 16; r < rows_left && r < sm90::kWgmmaM; r += 8) {
            const float2 a = *reinterpret_cast<const float2*>(staging + r * kStagingStride + col);
            sum.x += epilogue_element<T>(p, a.x, row0 + r, cc);
            if (col + 1 < cols_left) sum.y += epilogue_element<T>(p, a.y, row0 + r, cc + 1);
        }
        return sum;
    }

    // Pairs where they fit, else singles. Pairs(cc, col) runs finish_pairs of
    // the epilogue: chosen at run time (finish_chunk) or compiled in
    // (finish_chunk_as).
    template <class T, class Pairs>
    static __device__ __forceinline__ float2 finish_chunk_with(const Params& p, const float* staging, int rows_left,
                                                               int cols_left, std::int64_t row0, int col0, int t,
                                                               Pairs&& pairs) {
        const int col = 2 * (t % 16);
        if (col >= cols_left) return make_float2(0.0f, 0.0f);
        const int cc = col0 + col;
        if (!p.paired || col + 1 >= cols_left) return finish_singles<T>(p, staging, rows_left, cols_left, row0, cc, col, t);
        return pairs(cc, col);
    }
    template <class T>
    static __device__ __forceinline__ float2 finish_chunk(const Params& p, const float* staging, int rows_left,
                                                          int cols_left, std::int64_t row0, int col0, int t) {
        return finish_chunk_with<T>(p, staging, rows_left, cols_left, row0, col0, t, [&](int cc, int col) {
            return with_epilogue(p.kind, [&]<Epilogue K>() {
                return finish_pairs<T, K>(p, staging, rows_left, row0, cc, col, t);
            });
        });
    }
    template <class T, Epilogue K>
    static __device__ __forceinline__ float2 finish_chunk_as(const Params& p, const float* staging, int rows_left,
                                                             int cols_left, std::int64_t row0, int col0, int t) {
        return finish_chunk_with<T>(p, staging, rows_left, cols_left, row0, col0, t, [&](int cc, int col) {
            return finish_pairs<T, K>(p, staging, rows_left, row0, cc, col, t);
        });
    }

    // A whole chunk (32 columns inside N) when p.octets: thread t takes
    // columns 8 (t % 4) .. + 7 of rows t / 4 and t / 4 + 32, read from the
    // staging rows as two 16-byte halves (odd rows the second half first: the
    // 8 threads of a shared-memory wavefront then meet no bank twice) and
    // written as 16-byte stores. Half the instructions per element of the
    // pair path. dgelu_bgrad: the columns' sums of D go into bgrad (lanes 4
    // apart hold the same columns: 8 lanes per warp to add up, then 4 atomic
    // adds per column and warp).
    template <class T, Epilogue K>
    static __device__ __forceinline__ void finish_octets(const Params& p, const float* staging, int rows_left,
                                                         std::int64_t row0, int col0, int t) {
        using V = Vec8<T>;
        const int q = t % 4;
        const int cc = col0 + 8 * q;
        typename V::Packed bias{};
        if constexpr (takes_bias(K)) bias = V::load(p.bias, cc);
        // Both rows' C and aux before any store to D (finish_pairs says why),
        // packed as loaded.
        typename V::Packed cv[2] = {}, av[2] = {};
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = t / 4 + 32 * i;
            if (r >= rows_left) continue;
            const std::int64_t row = row0 + r;
            if (p.beta != 0.0f) cv[i] = V::load(p.c, row * p.ldc + cc);
            if constexpr (K == Epilogue::dgelu_bgrad) av[i] = V::load(p.aux, row * p.ldaux + cc);
        }
        [[maybe_unused]] float sum[8] = {};  // dgelu_bgrad: D's column sums
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = t / 4 + 32 * i;
            if (r >= rows_left) break;
            const std::int64_t row = row0 + r;
            // The halves land in x by selects, not by an index known only at run
            // time: that would put x in local memory.
            const bool odd = (r & 1) != 0;
            const float* const src = staging + r * kStagingStride + 8 * q;
            const float4 first = *reinterpret_cast<const float4*>(src + (odd ? 4 : 0));
            const float4 second = *reinterpret_cast<const float4*>(src + (odd ? 0 : 4));
            const float4 lo = odd ? second : first, hi = odd ? first : second;
            float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            float pre[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                float xe = p.alpha * x[e];
                if (p.beta != 0.0f) xe += p.beta * V::get(cv[i], e);
                const float b = takes_bias(K) ? V::get(bias, e) : 0.0f;
                const float a = K == Epilogue::dgelu_bgrad ? V::get(av[i], e) : 0.0f;
                x[e] = finish(K, xe, b, a, pre[e]);
                if constexpr (K == Epilogue::dgelu_bgrad) sum[e] += x[e];
            }
            if constexpr (K == Epilogue::bias_gelu_aux) V::store(p.aux, row * p.ldaux + cc, pre);
            V::store(p.d, row * p.ldd + cc, x);
        }
        if constexpr (K == Epilogue::dgelu_bgrad) {
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                sum[e] += __shfl_xor_sync(0xffffffffu, sum[e], 4);
                sum[e] += __shfl_xor_sync(0xffffffffu, sum[e], 8);
                sum[e] += __shfl_xor_sync(0xffffffffu, sum[e], 16);
            }
            if (t % 32 < 4) {
#pragma unroll
                for (int e = 0; e < 8; ++e) atomicAdd(p.bgrad + cc + e, sum[e]);
            }
        }
    }

    // The chunk loop: stage each 32-column chunk, then Octets(rows_left,
    // chunk_col0) where the chunk lies inside N and p.octets holds, else
    // Chunk(rows_left, cols_left, chunk_col0), which returns the columns' sums
    // (dgelu_bgrad adds them into bgrad here).
    template <int BN, class Octets, class Chunk>
    static __device__ __forceinline__ void store_chunks(const Params& p, const float (&acc)[BN / 2], int m, int n,
                                                        int row0, int col0, float* staging, Octets&& octets,
                                                        Chunk&& chunk) {
        const int rows_left = m - row0;  // the same for the whole warpgroup
        if (rows_left <= 0) return;
        const int t = static_cast<int>(threadIdx.x) % sm90::kWarpgroup;
        const int warp = t / 32, lane = t % 32;
        // Named barriers 2 and 3, one per consumer (0 is __syncthreads'; the producer never takes part).
        const int barrier = 1 + static_cast<int>(threadIdx.x) / sm90::kWarpgroup;
#pragma unroll 1
        for (int chunk_index = 0; chunk_index < (BN + kChunkCols - 1) / kChunkCols; ++chunk_index) {
            const int chunk_col0 = col0 + chunk_index * kChunkCols;
            if (chunk_col0 >= n) break;
            // The chunk's columns inside N and inside the tile (a 168-column tile's last chunk has 8).
            const int cols_left = min(n - chunk_col0, BN - chunk_index * kChunkCols);
            stage<BN>(acc, chunk_index, staging, warp, lane);
            sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
            if (p.octets && cols_left >= kChunkCols) {
                octets(rows_left, chunk_col0);
                sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
                continue;
            }
            const float2 sum = chunk(rows_left, cols_left, chunk_col0);
            if (p.kind == Epilogue::dgelu_bgrad) {
                const float sx = sum.x + __shfl_xor_sync(0xffffffffu, sum.x, 16);
                const float sy = sum.y + __shfl_xor_sync(0xffffffffu, sum.y, 16);
                const int col = 2 * (lane % 16);
                if (lane < 16 && col < cols_left) atomicAdd(p.bgrad + chunk_col0 + col, sx);
                if (lane < 16 && col + 1 < cols_left) atomicAdd(p.bgrad + chunk_col0 + col + 1, sy);
            }
            sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);  // the chunk is read before the next one is staged
        }
    }

    // After a consumer's last tile (FixedEpilogue's TMA stores wait here).
    static __device__ __forceinline__ void drain(const Params&) {}

    // Every epilogue and output type, chosen at run time from p.
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging) {
        const int t = static_cast<int>(threadIdx.x) % sm90::kWarpgroup;
        const auto by_type = [&](auto&& f) {
            switch (p.d_type) {
                case Type::bf16: return f.template operator()<__nv_bfloat16>();
                case Type::f16: return f.template operator()<__half>();
                default: return f.template operator()<float>();
            }
        };
        store_chunks<BN>(
            p, acc, m, n, row0, col0, staging,
            [&](int rows_left, int chunk_col0) {
                by_type([&]<class T>() {
                    with_epilogue(p.kind, [&]<Epilogue K>() {
                        finish_octets<T, K>(p, staging, rows_left, row0, chunk_col0, t);
                    });
                });
            },
            [&](int rows_left, int cols_left, int chunk_col0) {
                return by_type([&]<class T>() {
                    return finish_chunk<T>(p, staging, rows_left, cols_left, row0, chunk_col0, t);
                });
            });
    }
};

// FusedEpilogue with D's type T and the epilogue K compiled in (p.d_type and
// p.kind must be T's and K; the plan takes this policy only then): one
// instance of each path instead of one per output type and epilogue, no
// switch over them. The ping-pong kernel's SASS holds the epilogue's paths
// twice (one call per m64 half); with FusedEpilogue that was 43,552
// instructions, and Nsight Compute on GPT-2's fwd_lm_head found warps waiting
// on instruction fetches and on the switches' branches inside it
// (docs/gemm.md).
//
// The TMA store path (p.tma: bf16 D, epilogue none, bias or bias_gelu_aux, no
// C, N and D's and aux's rows multiples of 8 elements from 16-byte aligned
// starts; gemm::tma_stores decides, and dispatch.cpp says why). Why: on fwd_lm_head the staged path above took longer than the
// other consumer's main loop (Nsight Compute's source page at 0de62c6: more
// warp samples on its lines than on the k-loop's, and almost none on the
// consumers' hand-off), so the tensor pipe waited on the epilogue. Its 4
// chunks per m64 half each cross two named barriers and move the half through
// shared memory as fp32 twice (32 KB stored, 32 KB loaded), while the other
// consumer's wgmma read the same banks. Here each thread applies the
// epilogue to its accumulator pairs in registers, writes them once as bf16
// (16 KB a half) into a staging box laid out as D's tensor map expects (128B
// swizzle: 16-byte chunk c of row r at chunk c ^ (r % 8), which also keeps the
// warp's 4-byte stores free of bank conflicts), and one thread hands the two
// 64 x 64 boxes to the copy engine (cp.async.bulk.tensor, clipped at M and
// N): two named barriers a half, and no global store instruction in the
// consumers. Before a half reuses the staging box, the thread that issued
// the last copy waits until the copy engine has read it (wait_group.read).
// bias_gelu_aux stages aux in a second box (kStagingBytes 32 KB, so its
// kernel keeps 5 ring stages instead of 6). No C: read a pair at a time from
// global memory in this path (1c7bd85), it was slower than the staged path,
// which takes every call with beta != 0.
struct FixedEpilogueParams : EpilogueParams {
    CUtensorMap map_d{}, map_aux{};  // boxes of 64 rows x 64 bf16, 128B swizzle (p.tma)
    // A tile's last box where its width is no multiple of 64 (128 x 168 tiles: 64 rows x 40 bf16), unswizzled:
    // D's next tile begins where it ends, so a 64-column box would write over that tile's first columns.
    CUtensorMap map_d_tail{};
    CUtensorMap map_c{};             // the same boxes of C (p.tma_c)
    bool tma = false;
    bool tma_c = false;  // with tma and beta != 0: C loaded by TMA into the staging box, D written over it
    int tail_cols = 0;   // the narrow tail's columns of tiles (pingpong_gemm.cuh, TailN); 0: none
    bool tma_add = false;  // TmaStoreF32 with tma: D += its boxes by the copy engine (beta 1, C the same as D)
};

// LoadsC: the kernel that also loads C by TMA (p.tma_c, the library's
// "fixed_tma_c"), and dgelu_bgrad's aux the same way (beta 0), compiled apart
// from the others: C's path compiled into every fixed kernel behind a
// run-time flag grew them by 864 to 6,712 SASS instructions and gave the
// dGELU kernel 65 local-memory accesses, and fwd_qkv fell from 0.88x to
// 0.78x cuBLASLt (2026-12-02_4d201d3_gpt2_gemm.csv against fa5f109's).
// TileN: the columns of the 64-row halves the kernel hands over, 128 (the
// ping-pong kernel), 168 or 192 (the ping-pong kernel's 128 x 168 and
// 128 x 192 tiles, "fixed_n168", "fixed_n192": three boxes) or 256 (the
// cooperative 128 x 256 kernel, "fixed_wide": a consumer's 64 x 256 share of
// the tile, four boxes); the staging box holds one half. 168 columns are two
// 64-column boxes and a last one of 40 (kTailCols), written unswizzled (its
// rows 80 bytes apart: the 8 rows of an stmatrix matrix then fall on 8
// different groups of 4 banks) and stored through p.map_d_tail; its 21
// 8-column groups end with one stored by stmatrix x2.
template <class T, Epilogue K, bool LoadsC = false, int TileN = 128>
struct FixedEpilogue : FusedEpilogue {
    using Params = FixedEpilogueParams;
    // dgelu_bgrad takes the TMA path only with aux loaded by TMA into the staging box (LoadsC, beta 0).
    static constexpr bool kTmaCapable =
        std::is_same_v<T, __nv_bfloat16> &&
        (K == Epilogue::none || K == Epilogue::bias || K == Epilogue::bias_gelu || K == Epilogue::bias_gelu_aux ||
         (LoadsC && K == Epilogue::dgelu_bgrad));
    static constexpr bool kLoadsAux = LoadsC && K == Epilogue::dgelu_bgrad;
    // The kernel that loads C or aux (LoadsC) loads both halves' boxes when its consumer takes the
    // tile (begin_tile), into a staging region of two halves, so that they arrive under the other
    // consumer's main loop and its own. Loaded at each half's store instead (before a27f51f), each
    // half waited out a round trip to memory inside the epilogue: the dGELU backward at
    // 16384 x 3072 x 768 ran at 281-285 Tflop/s on an H100, 0.79-0.80x its own decomposed path (the
    // GEMM, then the elementwise pass), where bias + GELU with aux, which loads nothing, ran at 537
    // (2026-12-06_5fc230d_gpt2_gemm.csv). The second half of staging takes one ring stage.
    static constexpr bool kPrefetchesLoads = LoadsC && kTmaCapable;
    static constexpr int kBoxBytes = sm90::kWgmmaM * sm90::kRowBytes;  // 64 rows x 64 bf16
    static constexpr int kFullBoxes = TileN / 64;                      // 64-column boxes, 128B swizzle
    static constexpr int kTailCols = TileN % 64;                       // the narrow last box's columns, if any
    static constexpr int kTailRowBytes = kTailCols * 2;                // its rows, unswizzled
    static constexpr int kBoxes = kFullBoxes + (kTailCols > 0 ? 1 : 0);
    static constexpr int kHalfBytes = kBoxes * kBoxBytes;              // a 64 x TileN half of the tile
    static constexpr bool kTwoHalves = K == Epilogue::bias_gelu_aux || kPrefetchesLoads;
    static constexpr int kStagingBytes = kTwoHalves ? 2 * kHalfBytes : kHalfBytes;
    static constexpr int kStages = kTwoHalves ? 5 : 6;  // ring stages of its kernel
    static_assert(kStagingBytes >= FusedEpilogue::kStagingBytes, "the staged path shares the region");
    static_assert(kStagingBytes % sm90::kSwizzleAtom == 0, "staging boxes start on swizzle atoms");
    static_assert(TileN == 128 || TileN == 168 || TileN == 176 || TileN == 192 || TileN == 256,
                  "the ping-pong kernel's halves, or the wide kernel's");
    static_assert(kTailCols == 0 || (!LoadsC && K != Epilogue::bias_gelu_aux),
                  "a narrow last box for D alone: C's and aux's maps have 64-column boxes");
    static_assert(!LoadsC || (TileN == 128 && kTmaCapable), "C and aux are loaded for the ping-pong kernel's halves");

    // The TMA path spreads its stores where the kernel says so (gemm/epilogue_spread.hpp): spread_ns > 0,
    // a sleep of about that many ns after each stmatrix.
    static constexpr int kSpreadNs = 150;
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging, int spread_ns = 0,
                                                 std::uint32_t loads_parity = 0) {
        if constexpr (kTmaCapable) {
            if (p.tma) return store_tma<BN>(p, acc, m, n, row0, col0, staging, spread_ns, loads_parity);
        }
        const int t = static_cast<int>(threadIdx.x) % sm90::kWarpgroup;
        store_chunks<BN>(
            p, acc, m, n, row0, col0, staging,
            [&](int rows_left, int chunk_col0) { finish_octets<T, K>(p, staging, rows_left, row0, chunk_col0, t); },
            [&](int rows_left, int cols_left, int chunk_col0) {
                return finish_chunk_as<T, K>(p, staging, rows_left, cols_left, row0, chunk_col0, t);
            });
    }

    // The consumers' barriers for the boxes of C (p.tma_c) or aux (dgelu_bgrad), one each, set up by
    // thread 0 before the kernel's first __syncthreads (pingpong_kernel calls init() where the policy
    // has one). The consumer's copying thread arrives once a tile, with the boxes' bytes; its 128
    // threads wait on the phase of the consumer's tile count (loads_parity, from the kernel).
    static __device__ __forceinline__ std::uint64_t* c_ready(int consumer) {
        __shared__ std::uint64_t bars[2];
        return &bars[consumer];
    }
    static __device__ __forceinline__ void init() {
        if constexpr (kPrefetchesLoads) {
            if (threadIdx.x == 0) {
                sm90::mbar_init(c_ready(0), 1);
                sm90::mbar_init(c_ready(1), 1);
                sm90::fence_mbarrier_init();
            }
        }
    }
    // Whether this call's stores read boxes loaded by begin_tile: C (beta != 0) or aux.
    static __device__ __forceinline__ bool loads_boxes(const Params& p) {
        return kPrefetchesLoads && p.tma && (kLoadsAux || p.tma_c);
    }
    // Called by the consumer's 128 threads as it takes the tile at (row0, col0), before its turn: its
    // copying thread waits until the copies of the tile before have read the staging region, then
    // loads both halves' boxes of C or aux into it (rows past M and columns past N come in as zeros;
    // boxes wholly past them are not loaded).
    static __device__ __forceinline__ void begin_tile(const Params& p, int m, int n, int row0, int col0,
                                                      float* staging) {
        if (!loads_boxes(p) || threadIdx.x % sm90::kWarpgroup != 0) return;
        sm90::bulk_wait_read<0>();
        unsigned char* const region = reinterpret_cast<unsigned char*>(staging);
        std::uint64_t* const bar = c_ready(static_cast<int>(threadIdx.x) / sm90::kWarpgroup - 1);
        const int halves = row0 + sm90::kWgmmaM < m ? 2 : 1;
        int boxes = 0;
        for (int b = 0; b < kBoxes; ++b) boxes += col0 + 64 * b < n ? 1 : 0;
        sm90::mbar_arrive_expect_tx(bar, static_cast<std::uint32_t>(halves * boxes * kBoxBytes));
        const CUtensorMap* const map = kLoadsAux ? &p.map_aux : &p.map_c;
        for (int h = 0; h < halves; ++h)
            for (int b = 0; b < boxes; ++b)
                sm90::tma_load_2d(region + h * kHalfBytes + b * kBoxBytes, map, bar, col0 + 64 * b,
                                  row0 + h * sm90::kWgmmaM);
    }

    // The TMA stores' (and C's) tensor maps, fetched at the kernel's start (pingpong_kernel).
    static __device__ __forceinline__ void prefetch(const Params& p) {
        if constexpr (kTmaCapable) {
            if (!p.tma) return;
            sm90::prefetch_tensor_map(&p.map_d);
            if constexpr (kTailCols > 0) sm90::prefetch_tensor_map(&p.map_d_tail);
            if constexpr (K == Epilogue::bias_gelu_aux || kLoadsAux) sm90::prefetch_tensor_map(&p.map_aux);
            if constexpr (LoadsC && !kLoadsAux)
                if (p.tma_c) sm90::prefetch_tensor_map(&p.map_c);
        }
    }

    // After the consumer's last tile: its copies have read the staging boxes
    // before the CTA's shared memory goes away (wait_group.read). Their writes
    // to D need no wait: the grid's completion covers them, and nothing in the
    // kernel reads D. Waiting for the writes themselves (wait_group, before
    // 0cf70bf) put an L2 round trip at the end of every CTA.
    static __device__ __forceinline__ void drain(const Params& p) {
        if constexpr (kTmaCapable)
            if (p.tma && threadIdx.x % sm90::kWarpgroup == 0) sm90::bulk_wait_read<0>();
    }

private:
    // Two bf16 values of a row of D's type at column `col` (and col + 1),
    // each only inside N.
    static __device__ __forceinline__ float2 load_pair(const Params& p, const void* base, std::int64_t at, int col,
                                                       int n) {
        if (p.paired && col + 1 < n) return Elem<T>::load2(base, at);
        return make_float2(col < n ? Elem<T>::load(base, at) : 0.0f, col + 1 < n ? Elem<T>::load(base, at + 1) : 0.0f);
    }
    static __device__ __forceinline__ std::uint32_t pack(float a, float b) {
        const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<const std::uint32_t*>(&v);
    }

    // bgrad for a batch of 4 8-column groups from column c0: `sum` holds this thread's sums of its 8
    // columns there (index 2 group + e: column c0 + 8 group + 2 (lane % 4) + e). The 8 lanes holding the
    // same columns (lane % 4 alike) add theirs by halving exchanges: across lane bit 4 each keeps 4 of
    // the 8 and adds its partner's, across bit 3 2 of those, across bit 2 one, so that lane l ends with
    // the whole warp's sum of index l / 4: 7 shuffles for 8 columns where a full reduction of each took
    // 24, and one atomic add a lane, 32 columns a warp. Rows past M and columns past N hold zeros (their
    // A rows and B columns were loaded as zeros); columns past N are not added. Zeroes `sum`. With aux
    // read a pair of groups ahead (store_tma), GPT-2's dGELU product (16384 x 3072 x 768 NN) went from 364
    // to 462 Tflop/s on an H100 (aebfea3, ba0fd31: results/h100/2026-12-06_*_gpt2_subset_gemm.csv).
    static __device__ __forceinline__ void bgrad_batch(const Params& p, float (&sum)[8], int c0, int n, int lane) {
        const bool b4 = (lane & 16) != 0, b3 = (lane & 8) != 0, b2 = (lane & 4) != 0;
        float w[4], u[2];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float send = b4 ? sum[k] : sum[k + 4];
            w[k] = (b4 ? sum[k + 4] : sum[k]) + __shfl_xor_sync(0xffffffffu, send, 16);  // index k + 4 b4
        }
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const float send = b3 ? w[k] : w[k + 2];
            u[k] = (b3 ? w[k + 2] : w[k]) + __shfl_xor_sync(0xffffffffu, send, 8);  // k + 2 b3 + 4 b4
        }
        const float send = b2 ? u[0] : u[1];
        const float total = (b2 ? u[1] : u[0]) + __shfl_xor_sync(0xffffffffu, send, 4);  // lane / 4
        const int index = lane / 4;
        const int col = c0 + 8 * (index / 2) + 2 * (lane % 4) + index % 2;
        if (col < n) atomicAdd(p.bgrad + col, total);
#pragma unroll
        for (int k = 0; k < 8; ++k) sum[k] = 0.0f;
    }

    // BN: the half's columns, the kernel's TileN, or whole 64-column boxes of it, or a narrow tail's tile
    // (pingpong_gemm.cuh, TailN: 104 columns, one 64-column box and a last one of 40 through p.map_d_tail).
    template <int BN>
    static __device__ __forceinline__ void store_tma(const Params& p, const float (&acc)[BN / 2], int m, int n,
                                                     int row0, int col0, float* staging, int spread_ns,
                                                     std::uint32_t loads_parity) {
        static_assert(BN <= TileN, "a half no wider than the tile");
        static_assert(BN % 64 == 0 || BN == TileN || (!LoadsC && K != Epilogue::bias_gelu_aux),
                      "a narrow last box for D alone: C's and aux's maps have 64-column boxes");
        // The half's boxes: whole 64-column ones, then the narrow last one (its columns, rows unswizzled).
        constexpr int kHalfFullBoxes = BN / 64;
        constexpr int kHalfTailCols = BN % 64;
        constexpr int kHalfTailRowBytes = kHalfTailCols * 2;
        static_assert(kHalfFullBoxes * kBoxBytes + sm90::kWgmmaM * kHalfTailRowBytes <= kHalfBytes,
                      "inside the staging box");
        // 8-column groups j: this thread's pairs at rows 16 warp + lane / 4 and 8 below (wgmma's
        // accumulator layout), columns 8 j + 2 q and one right of it.
        constexpr int kGroups = BN / 8;
        if (row0 >= m) return;  // the same for the whole warpgroup
        const int t = sm90::tid_x_here() % sm90::kWarpgroup;  // the addresses below not hoisted out of the tile loop
        const int warp = t / 32, lane = t % 32, q = lane % 4;
        // The bias pairs of this thread's columns, loaded ahead in batches of independent 4-byte loads and
        // held packed (16 registers at BN 128), the first batch before the staging box's wait: loaded
        // inside the group loop, each group's load waited out its round trip before the group's math, 16
        // in a row, which a tile alone on its SM (512^3) cannot hide, nor, it turned out, a K = 768
        // product's other consumer. bias_gelu_aux takes two batches of 8 (all 16 at once spilled 16 bytes
        // in its kernel); the wide kernel (BN 256) keeps the loads in the loop (32 more registers spilled).
        constexpr bool kHoistBias = takes_bias(K) && BN <= 128;
        constexpr int kBiasBatch = K == Epilogue::bias_gelu_aux ? kGroups / 2 : kGroups;
        [[maybe_unused]] std::uint32_t bias_pairs[kHoistBias ? kGroups : 1];
        [[maybe_unused]] const bool bias_words = p.paired && col0 + BN <= n;  // the same for the warpgroup
        [[maybe_unused]] const auto load_bias_batch = [&](int first) {
            if (bias_words) {  // one 4-byte load a pair
                const auto* const words = static_cast<const __nv_bfloat16*>(p.bias) + col0 + 2 * q;
#pragma unroll
                for (int j = first; j < first + kBiasBatch; ++j)
                    bias_pairs[j] = __ldg(reinterpret_cast<const unsigned int*>(words + 8 * j));
            } else {  // the tile's last columns past N, or pairs not 4-byte aligned
#pragma unroll
                for (int j = first; j < first + kBiasBatch; ++j) {
                    const float2 b = load_pair(p, p.bias, col0 + 8 * j + 2 * q, col0 + 8 * j + 2 * q, n);
                    bias_pairs[j] = pack(b.x, b.y);  // exact: the values are bf16
                }
            }
        };
        if constexpr (kHoistBias) load_bias_batch(0);
        // The staging boxes are free once the copies of the previous half have read them. Waited for
        // before the math, not after: holding the half's bf16 pairs in registers meanwhile (32 more
        // beside both halves' 128 accumulators) spilled.
        const bool issuer = t == 0;
        const int barrier = 1 + static_cast<int>(threadIdx.x) / sm90::kWarpgroup;
        // C (beta != 0, which gemm::tma_stores allows only with p.tma_c), or dgelu_bgrad's aux (its
        // beta is 0 here): the half's boxes, loaded by begin_tile into the half's own part of the
        // staging region, where D's then go out of, each thread reading its pairs where it then writes
        // D's. The loading thread waited for the previous tile's copies to read the region; without
        // loads, the previous half's copies are waited for here.
        const bool with_c = LoadsC && !kLoadsAux && p.tma_c;
        unsigned char* const box =
            reinterpret_cast<unsigned char*>(staging) + (LoadsC ? (row0 / sm90::kWgmmaM) % 2 * kHalfBytes : 0);
        if (loads_boxes(p)) {
            sm90::mbar_wait(c_ready(static_cast<int>(threadIdx.x) / sm90::kWarpgroup - 1), loads_parity);
        } else {
            if (issuer) sm90::bulk_wait_read<0>();
            sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
        }
        // Two 8-column groups at a time through stmatrix (C or aux in through ldmatrix): four 8 x 8
        // matrices, (rows r, group j), (r + 8, j), (r, j + 1), (r + 8, j + 1), each a register of
        // the thread. Lane l gives the address of row l % 8 of matrix l / 8: row 16 warp + l % 8 +
        // 8 ((l / 8) % 2) of the half, 16-byte chunk j + l / 16 of the box's 8, stored at chunk
        // (j % 8 + l / 16) ^ (row % 8) = (j % 8) ^ (l / 16) ^ (l % 8) (j even). So four addresses
        // a thread (j % 8 = 0, 2, 4, 6), the box (j / 8) an immediate offset. Before (76fa825), each
        // pair of bf16 went out by its own 4-byte store, two integer instructions computing its
        // address: three instructions for every two elements of D, beside the epilogue's math.
        const int lane_row = 16 * warp + lane % 8 + 8 * (lane / 8 % 2);
        const std::uint32_t chunk_xor = static_cast<std::uint32_t>((lane / 16) ^ (lane % 8));
        const std::uint32_t row_at = sm90::smem_u32(box) + static_cast<std::uint32_t>(lane_row * sm90::kRowBytes);
        std::uint32_t pair_at[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) pair_at[i] = row_at + ((chunk_xor ^ (2u * i)) << 4);
        // The narrow last box (kHalfTailCols): row lane_row kHalfTailRowBytes apart, chunk (group - its
        // first) + l / 16.
        constexpr int kTailGroup0 = 8 * kHalfFullBoxes;
        [[maybe_unused]] const std::uint32_t tail_at =
            sm90::smem_u32(box) + static_cast<std::uint32_t>(kHalfFullBoxes * kBoxBytes +
                                                             lane_row * kHalfTailRowBytes + (lane / 16) * 16);
        const auto pair_address = [&](int j) {
            return kHalfTailCols > 0 && j >= kTailGroup0
                       ? tail_at + static_cast<std::uint32_t>(16 * (j - kTailGroup0))
                       : pair_at[(j % 8) / 2] + static_cast<std::uint32_t>((j / 8) * kBoxBytes);
        };
        // C's or aux's bf16 pairs, matrix by matrix: each pair of groups' read one pair ahead, before the
        // pair before is stored (other addresses), so that its latency passes under that pair's math.
        [[maybe_unused]] std::uint32_t in_next[4] = {};
        if (with_c || kLoadsAux) tensor::ldmatrix_x4(in_next, pair_address(0));
        // dgelu_bgrad: the columns' sums of D (before D's rounding) over this thread's two rows, for a
        // batch of 4 groups (8 columns a thread: index 2 (group % 4) + e), added across the 8 lanes
        // that hold the same columns by a transposing reduction once the batch is done (bgrad_batch).
        static_assert(!kLoadsAux || kGroups % 4 == 0, "bgrad's batches of 4 groups");
        [[maybe_unused]] float colsum[8] = {};
#pragma unroll
        for (int j = 0; j < kGroups; j += 2) {
            const bool two = j + 1 < kGroups;  // else the tile's last group alone (stmatrix x2)
            const std::uint32_t at = pair_address(j);
            [[maybe_unused]] std::uint32_t in[4] = {in_next[0], in_next[1], in_next[2], in_next[3]};
            if ((with_c || kLoadsAux) && j + 2 < kGroups) tensor::ldmatrix_x4(in_next, pair_address(j + 2));
            std::uint32_t out[4] = {};
            [[maybe_unused]] std::uint32_t pre_out[4];
#pragma unroll
            for (int g = 0; g < 2; ++g) {
                const int jg = j + g;
                if (jg >= kGroups) break;
                float2 bv = make_float2(0.0f, 0.0f);
                if constexpr (kHoistBias && kBiasBatch < kGroups)
                    if (jg > 0 && jg % kBiasBatch == 0) load_bias_batch(jg);
                if constexpr (kHoistBias)
                    bv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bias_pairs[jg]));
                else if constexpr (takes_bias(K))
                    bv = load_pair(p, p.bias, col0 + 8 * jg + 2 * q, col0 + 8 * jg + 2 * q, n);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int i = 2 * g + h;
                    float x0 = p.alpha * acc[4 * jg + 2 * h], x1 = p.alpha * acc[4 * jg + 2 * h + 1];
                    if (with_c) {
                        const float2 c = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&in[i]));
                        x0 += p.beta * c.x;
                        x1 += p.beta * c.y;
                    }
                    float2 aux = make_float2(0.0f, 0.0f);
                    if constexpr (kLoadsAux) aux = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&in[i]));
                    float pre0 = 0.0f, pre1 = 0.0f;
                    const float v0 = finish(K, x0, bv.x, aux.x, pre0);
                    const float v1 = finish(K, x1, bv.y, aux.y, pre1);
                    if constexpr (kLoadsAux) {
                        colsum[2 * (jg % 4)] += v0;
                        colsum[2 * (jg % 4) + 1] += v1;
                    }
                    out[i] = pack(v0, v1);
                    if constexpr (K == Epilogue::bias_gelu_aux) pre_out[i] = pack(pre0, pre1);
                }
                if constexpr (kLoadsAux)
                    if (jg % 4 == 3) bgrad_batch(p, colsum, col0 + 8 * (jg - 3), n, lane);
            }
            if (two) {
                sm90::stmatrix_x4(at, out);
            } else {
                const std::uint32_t last[2] = {out[0], out[1]};
                sm90::stmatrix_x2(at, last);
            }
            if constexpr (K == Epilogue::bias_gelu_aux) sm90::stmatrix_x4(at + kHalfBytes, pre_out);
            if (spread_ns > 0) __nanosleep(static_cast<unsigned>(spread_ns));
        }
        sm90::fence_proxy_async_smem();
        sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
        if (issuer) {
#pragma unroll
            for (int b = 0; b < (BN + 63) / 64; ++b) {
                if (col0 + 64 * b >= n) break;  // boxes past N are not stored
                const bool tail = kHalfTailCols > 0 && b == kHalfFullBoxes;
                sm90::tma_store_2d(tail ? &p.map_d_tail : &p.map_d, sm90::smem_u32(box + b * kBoxBytes),
                                   col0 + 64 * b, row0);
                if constexpr (K == Epilogue::bias_gelu_aux)
                    sm90::tma_store_2d(&p.map_aux, sm90::smem_u32(box + kHalfBytes + b * kBoxBytes), col0 + 64 * b,
                                       row0);
            }
            sm90::bulk_commit();
        }
    }
};

// The library's fp32 D without epilogue on the ping-pong kernel (Choice::f32_tma, "pingpong_f32_tma"):
// each half staged in shared memory as 64 x 32 fp32 boxes and written by TMA stores (tma_store_f32.cuh,
// the ladder's k43 path), D = alpha * the product; or, in place (beta 1 with C the same matrix as D, p.tma_add),
// D += alpha * the product, the boxes added into D by the copy engine's reduce-add. Calls that tma_stores
// refuses (another beta, a C apart from D, D's rows or N no multiple of 16 bytes) take FixedEpilogue's float
// path, the staged stores, in the same 16 KB region.
struct TmaStoreF32 : FixedEpilogue<float, Epilogue::none> {
    using Base = FixedEpilogue<float, Epilogue::none>;
    static_assert(Base::kStagingBytes >= sm90::kF32StagingBytes, "the TMA path's boxes fit the staging region");
    static __device__ __forceinline__ void prefetch(const Params& p) {
        if (p.tma) sm90::prefetch_tensor_map(&p.map_d);
    }
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging, int /*spread_ns*/ = 0) {
        if (!p.tma) return Base::template store<BN>(p, acc, m, n, row0, col0, staging);
        if (row0 >= m) return;  // the same for the whole warpgroup
        sm90::store_f32_tma<BN>(&p.map_d, acc, p.alpha, static_cast<float*>(p.d), p.ldd, m, n, row0, col0, staging,
                                1 + static_cast<int>(threadIdx.x) / sm90::kWarpgroup, p.tma_add);
    }
    static __device__ __forceinline__ void drain(const Params& p) {
        if (p.tma) sm90::store_f32_tma_drain();
    }
};

// The narrow-tail kernels' policy where B is K-major ("fixed_tail" in the NT and TT layouts): the fixed
// epilogue with B's map in boxes of the narrow width, through which the ping-pong kernel's producer
// loads a narrow tile's B rows (pingpong_gemm.cuh: a stage then brings the 104 rows the tile multiplies,
// not 128). The store code is FixedEpilogue's: its functions take the base of these params.
struct FixedTailParams : FixedEpilogueParams {
    CUtensorMap map_b_tail{};
};
template <class T, Epilogue K>
struct FixedTailEpilogue : FixedEpilogue<T, K> {
    using Params = FixedTailParams;
};

// The ping-pong split-K's policy (pingpong_gemm.cuh, SplitK): each unit's
// partial 64 x BN half, times alpha, added into the fp32 D. D holds C before
// the kernel (beta 1 with C the same matrix, as a weight gradient that
// accumulates) or zeros (beta 0: the plan clears it first); no other beta.
// Where D's rows and N are 16-byte multiples and D starts on a 16-byte
// boundary (p.tma), the half is staged in shared memory and added into D by
// the copy engine's reduce-add (tma_store_f32.cuh, as TmaStoreF32 in place);
// else with reductions in L2 from the accumulator registers (red.global.add:
// a pair of floats at a time where D's rows allow 8-byte accesses, else one).
// The order of the additions is not fixed from run to run.
struct AtomicAddF32 {
    struct Params {
        float* d = nullptr;
        std::int64_t ldd = 0;
        float alpha = 1.0f;
        int splits = 1;      // the kernel's units per tile
        bool pairs = false;  // D's rows start on 8-byte boundaries (ldd even, D aligned)
        int split_tiles = 0;  // > 0: only the last split_tiles tiles split, the others added whole (the tail split)
        bool tma = false;     // the halves added by the copy engine through map_d (64 x 32 fp32 boxes)
        CUtensorMap map_d{};
    };
    static constexpr int kStagingBytes = sm90::kF32StagingBytes;

    static __device__ __forceinline__ void prefetch(const Params& p) {
        if (p.tma) sm90::prefetch_tensor_map(&p.map_d);
    }
    static __device__ __forceinline__ void drain(const Params& p) {
        if (p.tma) sm90::store_f32_tma_drain();
    }

    static __device__ __forceinline__ void red_add(float* at, float v) {
        asm volatile("red.global.add.f32 [%0], %1;" ::"l"(at), "f"(v) : "memory");
    }
    static __device__ __forceinline__ void red_add2(float* at, float a, float b) {
        asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(at), "f"(a), "f"(b) : "memory");
    }

    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging) {
        if (row0 >= m) return;  // the same for the whole warpgroup
        // Whole boxes only: store_f32_tma adds columns past them by a read and a write, which another
        // unit of the same tile could interleave with.
        static_assert(BN % sm90::kF32BoxCols == 0, "the split kernel's halves are whole 32-column boxes");
        if (p.tma)
            return sm90::store_f32_tma<BN>(&p.map_d, acc, p.alpha, p.d, p.ldd, m, n, row0, col0, staging,
                                           1 + static_cast<int>(threadIdx.x) / sm90::kWarpgroup, true);
        const int t = static_cast<int>(threadIdx.x) % sm90::kWarpgroup;
        const int warp = t / 32, lane = t % 32;
        const int r = 16 * warp + lane / 4;  // rows r and r + 8 of the half (wgmma's accumulator layout)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + r + 8 * h;
            if (row >= m) continue;
            float* const d_row = p.d + static_cast<std::int64_t>(row) * p.ldd;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const int col = col0 + 8 * j + 2 * (lane % 4);
                const float v0 = p.alpha * acc[4 * j + 2 * h], v1 = p.alpha * acc[4 * j + 2 * h + 1];
                if (p.pairs && col + 1 < n) {
                    red_add2(d_row + col, v0, v1);
                } else {
                    if (col < n) red_add(d_row + col, v0);
                    if (col + 1 < n) red_add(d_row + col + 1, v1);
                }
            }
        }
    }
};

// The ping-pong split-K for a bf16 D with a fixed epilogue (the dispatcher's
// rule 6 under allow_atomics, and "fixed_split"; pingpong_gemm.cuh's SplitK,
// which hands both halves of a unit to publish() and then each half the unit
// came last to to reload() and store(), the sum read back into the half's own
// accumulators): units of (split,
// tile) as AtomicAddF32's, but D cannot take additions, so each unit adds its
// partial 64 x BN half, as fp32, into a slab of the plan's workspace
// (red.global.add.v4: L2 does the adds), then counts itself on the half's
// arrival counter. The unit that arrives last (its count splits - 1) holds the
// only complete sum: it reads the slab back, clears it and the counter for
// the next call, and hands the sum to Inner, the fixed epilogue, which stores
// D as the unsplit kernel does (alpha, C, bias, GELU, bgrad applied once, TMA
// stores where the call allows them). One kernel, no fp32 slabs of M x N per
// split and no second pass: against the cooperative split (StoreF32 slabs,
// then epilogue_kernel) a unit moves 32 KB of adds instead of a 32 KB store
// that the reduction reads back, and nothing waits on anything (no unit spins
// on another's flag, so no schedule can deadlock).
// Ordering: each thread fences (fence.acq_rel.gpu via __threadfence) after its
// adds; the consumer's named barrier then orders all of them before the one
// thread's counter increment; the last unit's threads fence again before
// reading the slab through L2 (ld.global.cg). The slab keeps each thread's
// accumulators in register order (16 bytes per thread and step, 2 KB a step
// across the warpgroup), so every access is coalesced; its layout is private
// to this policy. Runs of one plan must be stream-ordered (its workspace and
// counters are reused), as with any split-K workspace. The order of the
// additions is not fixed from run to run.
// Ordered (the library's "fixed_split_ordered", rules 2a and 3a): the sum is
// ((p0 + p1) + p2) + ... whatever the timing, so runs repeat bit for bit.
// Two forms, by Params::gather:
// - Gathered, where every tile is split (rule 2a's one wave, the named
//   kernel): a slab per half and split; each unit stores its partial into its
//   own and counts itself, as above, and the last to arrive, whichever split
//   it is, sums the slabs in split order. No unit waits for another.
// - In turn, under a tail split (rule 3a): one slab a half, the arrival
//   counter serving as a ticket: unit s waits until it reads s, stores its
//   partial (s = 0) or adds it into the slab (red.add, as above; L2's fp32
//   adds round to nearest even and flush subnormals, the same every run), then
//   sets the counter to s + 1 (a release); the last unit's sum goes through
//   the fixed epilogue. The waits cannot deadlock while every CTA is resident
//   (the persistent grid): the unpublished unit of lowest index always finds
//   split s - 1 of its tile published. In a streamed tail (Params::stream) a
//   tile's units are the pieces of consecutive CTAs' runs: split 0 starts the
//   tile and is its CTA's first unit, which waits on nothing; split s > 0 is
//   the second unit of CTA c (a run's end, or a whole run inside the tile)
//   and waits on CTA c - 1's split s - 1, which is split 0 or again such a
//   second unit, so every chain of waits ends at a split 0.
// Measured on the H200 (GPT-2's dW, 2026-12-03, eefc20b in turn, 43aecb1
// gathered): under the tail split (bwd_mlp_down_dw and bwd_mlp_up_dw, 11
// splits) gathering lost 5-8 % to the turns, its last unit reading 11 slabs
// through the SM that also feeds the other consumer's main loop (the likely
// cause, not measured apart); on rule 2a's 3 splits (bwd_attn_proj_dw), with
// nothing to overlap, gathering ran about 2 % faster (472-479 Tflop/s against
// 465-472, across calls, not paired). Until 19084e4 a turn
// read the slab into registers, added and stored one 16-byte group at a
// time, each load a whole L2 round trip behind the previous group's store.
struct SplitFixupParams : FixedEpilogueParams {
    // Slabs of 64 x 128 floats: one per half of each split tile (gathered: per half and split).
    float* partials = nullptr;
    unsigned* arrivals = nullptr;    // per half of a split tile: units that have arrived, back to 0 by the last
    int splits = 1;                  // units per tile (the kernel reads it)
    // > 0: only the last split_tiles tiles (of the kernel's tile order) are split, the others run
    // whole and go straight to the inner epilogue (Choice::split_tiles); 0: every tile is split.
    int split_tiles = 0;
    // With split_tiles: the streamed tail. The split tiles' k-tiles are cut into one run per CTA of
    // equal length, each run a CTA's first two units (pingpong_kernel's Span); added in turn.
    bool stream = false;
    bool gather = false;  // Ordered: a slab per split, summed by the last unit; false: one slab, added in turn
};

template <class Inner, bool Ordered = false>
struct SplitFixup {
    using Params = SplitFixupParams;
    static constexpr int kStagingBytes = Inner::kStagingBytes;
    static constexpr int kStages = Inner::kStages;
    // pingpong_kernel hands a unit's halves over in two steps: publish() for both (each partial leaves
    // the registers: stored or added into the workspace, and counted), then, for each half this unit
    // arrived last at, reload() (the sum into the half's accumulators) and store().
    static constexpr bool kUnitStore = true;

    static __device__ __forceinline__ void init() {
        if constexpr (requires { Inner::init(); }) Inner::init();
    }
    static __device__ __forceinline__ void drain(const Params& p) { Inner::drain(p); }
    static __device__ __forceinline__ void prefetch(const Params& p) { Inner::prefetch(p); }

    // A whole tile (Params::split_tiles), or a half's sum after reload(): stored as the unsplit kernel
    // stores it.
    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0, float* staging) {
        Inner::template store<BN>(p, acc, m, n, row0, col0, staging);
    }

    // This unit's partial of split-tile half `half` (the kernel's numbering) into the workspace, then
    // counted; true (the same for the whole warpgroup) where this unit is the half's last to arrive.
    // `split` of `splits`: the unit's place among its tile's units (p.splits, or fewer in a streamed
    // tail, where each tile has as many units as CTAs' runs cover it).
    template <int BN>
    static __device__ __forceinline__ bool publish(const Params& p, const float (&acc)[BN / 2], int m, int row0,
                                                   int half, int split, int splits) {
        static_assert(BN == kBN, "a slab holds a 64 x 128 half");
        if (row0 >= m) return false;  // the same for every unit of this half: none counts
        const int t = static_cast<int>(threadIdx.x) % sm90::kWarpgroup;
        const int consumer = static_cast<int>(threadIdx.x) / sm90::kWarpgroup - 1;
        const int barrier = 1 + static_cast<int>(threadIdx.x) / sm90::kWarpgroup;  // FixedEpilogue's, in turn
        const bool turns = Ordered && !p.gather;
        float* const mine = slab(p, half, Ordered && p.gather ? split : 0);
        __shared__ unsigned last_flag[2];
        if (turns) {
            // This unit's turn: one thread waits for the ticket, the barrier passes it to the others.
            if (t == 0) {
                unsigned ticket = 0;
                do {
                    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(ticket) : "l"(p.arrivals + half) : "memory");
                } while (ticket != static_cast<unsigned>(split));
            }
            sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
        }
        // Gathered: into this split's own slab; in turn: split 0 stores, the later ones add (fire and
        // forget, no round trip a group); unordered: every unit adds, L2 doing the adds.
        const bool stores = Ordered && (p.gather || split == 0);
#pragma unroll
        for (int j = 0; j < kSteps; ++j) {
            float* const to = mine + j * kStep;
            if (stores)
                asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(to), "f"(acc[4 * j]), "f"(acc[4 * j + 1]),
                             "f"(acc[4 * j + 2]), "f"(acc[4 * j + 3])
                             : "memory");
            else
                asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(to), "f"(acc[4 * j]),
                             "f"(acc[4 * j + 1]), "f"(acc[4 * j + 2]), "f"(acc[4 * j + 3])
                             : "memory");
        }
        __threadfence();
        sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
        if (turns) {
            const bool last = split == splits - 1;
            if (t == 0 && !last)  // the next split's ticket; the last leaves it for reload() to reset
                asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p.arrivals + half), "r"(static_cast<unsigned>(split + 1))
                             : "memory");
            return last;
        }
        if (t == 0) last_flag[consumer] = atomicAdd(p.arrivals + half, 1u) == static_cast<unsigned>(splits - 1);
        sm90::named_barrier_sync<sm90::kWarpgroup>(barrier);
        return last_flag[consumer] != 0u;
    }

    // The last unit of a half: the sum read back into acc (gathered: every split's slab, `splits` of
    // them, the half's units; p.splits is the slabs a half has, the most any tile's units; added in split
    // order; in turn: the one slab as the last split left it; neither to clear, since split 0 stores;
    // unordered: the one slab, then cleared) and the counter reset for the next call; the kernel then
    // stores acc through store(), as a whole tile's.
    template <int BN>
    static __device__ __forceinline__ void reload(const Params& p, float (&acc)[BN / 2], int half, int splits) {
        __threadfence();
        if constexpr (Ordered) {
            // Split 0's slab, then each later split's added to it (ptxas issues a slab's 16 loads at once).
            const int slabs = p.gather ? splits : 1;
            for (int s = 0; s < slabs; ++s) {
                const float* const from = slab(p, half, s);
#pragma unroll
                for (int j = 0; j < kSteps; ++j) {
                    const float4 v = __ldcg(reinterpret_cast<const float4*>(from + j * kStep));
                    float* const a = acc + 4 * j;
                    if (s == 0) {
                        a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
                    } else {
                        a[0] += v.x, a[1] += v.y, a[2] += v.z, a[3] += v.w;
                    }
                }
            }
        } else {
            float* const from = slab(p, half, 0);
#pragma unroll
            for (int j = 0; j < kSteps; ++j) {
                asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                             : "=f"(acc[4 * j]), "=f"(acc[4 * j + 1]), "=f"(acc[4 * j + 2]), "=f"(acc[4 * j + 3])
                             : "l"(from + j * kStep)
                             : "memory");
                asm volatile("st.global.cg.v4.f32 [%0], {%1, %1, %1, %1};" ::"l"(from + j * kStep), "f"(0.0f)
                             : "memory");
            }
        }
        if (threadIdx.x % sm90::kWarpgroup == 0) p.arrivals[half] = 0u;
    }

private:
    static constexpr int kBN = 128;
    static constexpr int kSlabFloats = sm90::kWgmmaM * kBN;
    static constexpr int kSteps = kBN / 8;               // 16-byte groups of a thread's kBN / 2 accumulators
    static constexpr int kStep = 4 * sm90::kWarpgroup;   // floats between a thread's groups in a slab

    // Split `split`'s slab of half `half` (gathered; else the half's one slab, split 0), at this thread's
    // place in it.
    static __device__ __forceinline__ float* slab(const Params& p, int half, int split) {
        const std::int64_t index = static_cast<std::int64_t>(half) * (Ordered && p.gather ? p.splits : 1) + split;
        return p.partials + index * kSlabFloats + 4 * (static_cast<int>(threadIdx.x) % sm90::kWarpgroup);
    }
};

}  // namespace rigel::cuda::gemm_kernels
