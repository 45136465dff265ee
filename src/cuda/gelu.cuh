// GPT-2's GELU (the tanh approximation), the exact erf form, and the tanh
// form's derivative, in fp32: one definition for the GEMM library's epilogue
// (src/cuda/gemm/fused_epilogue.cuh) and the training kernels.
//
// The tanh form as a sigmoid: 0.5 (1 + tanh u) = s = 1 / (1 + e), e = exp(-2u),
// so gelu(x) = x s and gelu'(x) = s + 2 x s (1 - s) u'. Evaluated with the
// hardware's ex2 and reciprocal (MUFU.EX2, MUFU.RCP), against the 25 or so
// instructions of tanhf with its two branches, which made the GELU epilogues
// issue-bound; and no cancellation where tanh u nears -1 (x below -3), where
// 1 + t loses the bits that s keeps.
//
// Eight instructions an element with the bias add: e's exponent -2u log2(e)
// is one polynomial x (kGateLinear + kGateCubic x^2) whose constants fold
// sqrt(2/pi), -2 and log2(e) (x^2, one FFMA, one FMUL), and ex2 and rcp are
// the .ftz forms. Written as __expf(-2u) and __fdividef, the constants were
// multiplied in one at a time (fp32 arithmetic is not reassociated) and each
// ex2 carried a compare and two predicated multiplies for subnormal inputs:
// about 15 instructions an element in the fixed kernels' SASS, which the
// other consumer's main loop shares the issue slots with (docs/gemm.md).
// Flushing to zero changes nothing that is stored: a subnormal exponent's e
// is below 2^-126, which 1 + e does not see, and an s below 2^-126 (x below
// about -10) makes x s within 2^-126 |x| of the zero it becomes.
//
// The error: e's exponent carries three roundings and the constants' own
// (about 4u relative, u = 2^-24; before, five), so e is off by a relative
// 4u |2u log2 e| ln 2, times s (1 - s) in s, at most 0.45 u |x| in x s; ex2 and
// rcp within 2 ulps each: below 1.5 u |x| + 2.5 u |gelu(x)|, inside the
// 4 u (|x| + |gelu(x)|) that src/gemm/reference.cpp allows an f32 GELU.
// 1 - s is taken as e s where e < 1 (no cancellation near s = 1) and as
// 1 - s above.
#pragma once

namespace rigel::cuda {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;
constexpr double kLog2E = 1.4426950408889634;
// -2 u log2(e) = x (kGateLinear + kGateCubic x^2), the products taken in double and rounded once.
constexpr float kGateLinear = static_cast<float>(-2.0 * kSqrt2OverPi * kLog2E);
constexpr float kGateCubic = static_cast<float>(-2.0 * kSqrt2OverPi * kLog2E * kGeluCubic);

__device__ __forceinline__ float ex2_ftz(float v) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ float rcp_ftz(float v) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

// s = 0.5 (1 + tanh u) and e = exp(-2u), u = sqrt(2/pi) (x + 0.044715 x^3). An infinite e (u below
// about -44) gives s = 0, a zero e (u above 44) s = 1.
struct GeluGate {
    float s, e;
};
__device__ __forceinline__ GeluGate gelu_tanh_gate(float x) {
    const float e = ex2_ftz(x * fmaf(kGateCubic, x * x, kGateLinear));
    return {rcp_ftz(1.0f + e), e};
}
__device__ __forceinline__ float gelu_tanh(float x) { return x * gelu_tanh_gate(x).s; }
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
// d/dx gelu_tanh(x) = s + x s (1 - s) 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2), the polynomial's constants
// folded as the gate's are.
constexpr float kGradLinear = static_cast<float>(2.0 * kSqrt2OverPi);
constexpr float kGradQuadratic = static_cast<float>(2.0 * kSqrt2OverPi * 3.0 * kGeluCubic);
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const GeluGate g = gelu_tanh_gate(x);
    const float one_minus_s = g.e < 1.0f ? g.e * g.s : 1.0f - g.s;
    return fmaf(x * g.s, one_minus_s * fmaf(kGradQuadratic, x * x, kGradLinear), g.s);
}

}  // namespace rigel::cuda
