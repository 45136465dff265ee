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

#include "cuda/hopper/sm90.cuh"
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
};

// -- the math, in fp32 -------------------------------------------------------
// GPT-2's GELU (the tanh approximation) and the exact erf form; tanhf and
// erff, not the approximate-tanh instruction, so an f32 output stays within a
// few ulps of the float64 reference.
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float gelu_tanh(float x) {
    const float t = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    return 0.5f * x * (1.0f + t);
}
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
// d/dx gelu_tanh(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const float t = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
}

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
// accumulator fragment (layout: sm90.cuh, store_accumulators) through the
// epilogue, straight from registers. Thread (warp w, lane l) holds, for column
// group j, the pairs (16w + l/4 + 8h, 8j + 2(l%4) + {0,1}), h = 0, 1. bgrad:
// each thread sums its two rows, the 8 lanes sharing a column pair (l/4)
// combine by shuffles, and lanes 0-3 add the pair into bgrad atomically.
struct FusedEpilogue {
    using Params = EpilogueParams;

    template <class T, int BN>
    static __device__ __forceinline__ void store_as(const Params& p, const float (&acc)[BN / 2], int m, int n,
                                                    int row0, int col0) {
        const int rows_left = m - row0;
        const int cols_left = n - col0;
        const int t = static_cast<int>(threadIdx.x) % sm90::kWarpgroup;
        const int warp = t / 32;
        const int lane = t % 32;
        const bool bgrad = p.kind == Epilogue::dgelu_bgrad;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = 8 * j + 2 * (lane % 4);
            float sum0 = 0.0f, sum1 = 0.0f;
            if (rows_left > 0 && col < cols_left) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = 16 * warp + lane / 4 + 8 * h;
                    if (r >= rows_left) continue;
                    const std::int64_t row = static_cast<std::int64_t>(row0) + r;
                    const float a0 = acc[4 * j + 2 * h], a1 = acc[4 * j + 2 * h + 1];
                    if (p.paired && col + 1 < cols_left) {
                        const int cc = col0 + col;
                        float x0 = p.alpha * a0, x1 = p.alpha * a1;
                        if (p.beta != 0.0f) {
                            const float2 cv = Elem<T>::load2(p.c, row * p.ldc + cc);
                            x0 += p.beta * cv.x;
                            x1 += p.beta * cv.y;
                        }
                        float2 bv = make_float2(0.0f, 0.0f), av = make_float2(0.0f, 0.0f);
                        if (takes_bias(p.kind)) bv = Elem<T>::load2(p.bias, cc);
                        if (bgrad) av = Elem<T>::load2(p.aux, row * p.ldaux + cc);
                        float pre0 = 0.0f, pre1 = 0.0f;
                        const float v0 = finish(p.kind, x0, bv.x, av.x, pre0);
                        const float v1 = finish(p.kind, x1, bv.y, av.y, pre1);
                        if (p.kind == Epilogue::bias_gelu_aux) Elem<T>::store2(p.aux, row * p.ldaux + cc, pre0, pre1);
                        Elem<T>::store2(p.d, row * p.ldd + cc, v0, v1);
                        sum0 += v0;
                        sum1 += v1;
                    } else {
                        sum0 += epilogue_element<T>(p, a0, row, col0 + col);
                        if (col + 1 < cols_left) sum1 += epilogue_element<T>(p, a1, row, col0 + col + 1);
                    }
                }
            }
            if (bgrad) {  // every lane takes part in the shuffles
#pragma unroll
                for (int mask = 4; mask < 32; mask <<= 1) {
                    sum0 += __shfl_xor_sync(0xffffffffu, sum0, mask);
                    sum1 += __shfl_xor_sync(0xffffffffu, sum1, mask);
                }
                if (lane < 4 && rows_left > 0) {
                    if (col < cols_left) atomicAdd(p.bgrad + col0 + col, sum0);
                    if (col + 1 < cols_left) atomicAdd(p.bgrad + col0 + col + 1, sum1);
                }
            }
        }
    }

    template <int BN>
    static __device__ __forceinline__ void store(const Params& p, const float (&acc)[BN / 2], int m, int n, int row0,
                                                 int col0) {
        switch (p.d_type) {
            case Type::bf16: return store_as<__nv_bfloat16, BN>(p, acc, m, n, row0, col0);
            case Type::f16: return store_as<__half, BN>(p, acc, m, n, row0, col0);
            default: return store_as<float, BN>(p, acc, m, n, row0, col0);
        }
    }
};

}  // namespace rigel::cuda::gemm_kernels
