// GPT-2's GELU (the tanh approximation), the exact erf form, and the tanh
// form's derivative, in fp32: one definition for the GEMM library's epilogue
// (src/cuda/gemm/fused_epilogue.cuh) and the training kernels.
//
// The tanh form as a sigmoid: 0.5 (1 + tanh u) = s = 1 / (1 + e), e = exp(-2u),
// so gelu(x) = x s and gelu'(x) = s + 2 x s (1 - s) u'. Evaluated with the
// hardware's ex2 and reciprocal (MUFU.EX2, MUFU.RCP: __expf, __fdividef),
// about 10 instructions against the 25 or so of tanhf with its two branches,
// which made the GELU epilogues issue-bound; and no cancellation where tanh u
// nears -1 (x below -3), where 1 + t loses the bits that s keeps. The error:
// ex2's argument |2u log2 e| rounded (relative |2u| u in e, times s (1 - s) in
// s, at most 0.45 u |x| in x s), ex2 and rcp within 2 ulps each, u's three
// roundings (0.7 u |x|): below 1.5 u |x| + 2.5 u |gelu(x)|, inside the 4 u
// (|x| + |gelu(x)|) that src/gemm/reference.cpp allows an f32 GELU. 1 - s is
// taken as e s where e < 1 (no cancellation near s = 1) and as 1 - s above.
#pragma once

namespace rigel::cuda {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// s = 0.5 (1 + tanh u) and e = exp(-2u), u = sqrt(2/pi) (x + 0.044715 x^3). An infinite e (u below
// about -44) gives s = 0, a zero e (u above 52) s = 1.
struct GeluGate {
    float s, e;
};
__device__ __forceinline__ GeluGate gelu_tanh_gate(float x) {
    const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    const float e = __expf(-2.0f * u);
    return {__fdividef(1.0f, 1.0f + e), e};
}
__device__ __forceinline__ float gelu_tanh(float x) { return x * gelu_tanh_gate(x).s; }
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
// d/dx gelu_tanh(x) = s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const GeluGate g = gelu_tanh_gate(x);
    const float one_minus_s = g.e < 1.0f ? g.e * g.s : 1.0f - g.s;
    return g.s + 2.0f * x * g.s * one_minus_s * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
}

}  // namespace rigel::cuda
