// GPT-2's GELU (the tanh approximation), the exact erf form, and the tanh
// form's derivative, in fp32: one definition for the GEMM library's epilogue
// (src/cuda/gemm/fused_epilogue.cuh) and the training kernels.
//
// The tanh form as a sigmoid: 0.5 (1 + tanh u) = s = 1 / (1 + e), e = exp(-2u),
// so gelu(x) = x s and gelu'(x) = s + 2 x s (1 - s) u'. Evaluated first with
// the hardware's ex2 and reciprocal (MUFU.EX2, MUFU.RCP: __expf, __fdividef),
// about 10 instructions against the 25 or so of tanhf with its two branches,
// which made the GELU epilogues issue-bound (now on the FMA pipe, below);
// and no cancellation where tanh u
// nears -1 (x below -3), where 1 + t loses the bits that s keeps. The error:
// ex2's argument |2u log2 e| rounded (relative |2u| u in e, times s (1 - s) in
// s, at most 0.45 u |x| in x s), ex2 and rcp within 2 ulps each, u's three
// roundings (0.7 u |x|): below 1.5 u |x| + 2.5 u |gelu(x)|, inside the 4 u
// (|x| + |gelu(x)|) that src/gemm/reference.cpp allows an f32 GELU. 1 - s is
// taken as e s where e < 1 (no cancellation near s = 1) and as 1 - s above.
//
// e and the reciprocal on the FMA and ALU pipes, no MUFU (since 3a349d7's
// measurement): in the GEMM's bias + GELU epilogue at 4096^3 the two MUFU per
// element cost the other consumer's main loop about 5 % of its tensor-pipe
// cycles (Nsight Compute on the fixed kernels, one launch each at the same
// clock: bias + GELU 299.6 k cycles, tensor pipe 84.7 % active, XU pipe 5.5 %;
// bias alone 284.3 k, 89.9 %, 0.2 %), though the XU pipe itself was nowhere
// near full. e = 2^t, t = -2u log2(e) clamped to [-126, 64] (outside it s is 1,
// or below 5.5e-20, within the allowance), t = n + f with n = rint(t) by the
// 1.5 x 2^23 shift and |f| <= 1/2 exact, 2^f by its Taylor series to f^7
// (truncation below 5.2e-9 relative, under 0.1 ulp; Horner's roundings about
// 1 ulp), 2^n by the exponent field. 1 / (1 + e) by Newton's iteration from the
// exponent-flip estimate (relative error below 1/8), three steps of two FMAs:
// about 1 ulp. So e and s keep the "2 ulps each" of the MUFU forms above; an
// fp32 emulation of this sequence over x in [-20, 20] stays below 0.29 of the
// allowance. About 25 instructions an element instead of 10 and two MUFU.
#pragma once

namespace rigel::cuda {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// s = 0.5 (1 + tanh u) and e = exp(-2u), u = sqrt(2/pi) (x + 0.044715 x^3). An infinite e (u below
// about -44) gives s = 0, a zero e (u above 52) s = 1.
struct GeluGate {
    float s, e;
};
// 2^t for t in [-126, 64] (the caller clamps), on the FMA pipe.
__device__ __forceinline__ float exp2_fma(float t) {
    constexpr float kShift = 12582912.0f;  // 1.5 x 2^23: t + kShift rounds t to an integer in its low bits
    const float shifted = __fadd_rn(t, kShift);
    const float f = __fsub_rn(t, __fsub_rn(shifted, kShift));  // exact, |f| <= 1/2
    float p = 1.5252733804059838e-05f;                         // ln2^k / k!, k = 7 .. 1, then 1
    p = __fmaf_rn(p, f, 1.5403530393381606e-04f);
    p = __fmaf_rn(p, f, 1.3333558146428441e-03f);
    p = __fmaf_rn(p, f, 9.618129107628477e-03f);
    p = __fmaf_rn(p, f, 5.5504108664821576e-02f);
    p = __fmaf_rn(p, f, 0.2402265069591007f);
    p = __fmaf_rn(p, f, 0.6931471805599453f);
    p = __fmaf_rn(p, f, 1.0f);
    // shifted's bits are 0x4B400000 + n; shifted left by 23 they leave n in the exponent field.
    const float scale = __int_as_float(static_cast<int>((static_cast<unsigned>(__float_as_int(shifted)) << 23) +
                                                        0x3F800000u));
    return p * scale;
}
// 1 / d for d in [1, 2^64], on the FMA pipe.
__device__ __forceinline__ float rcp_fma(float d) {
    float y = __int_as_float(0x7EF311C3 - __float_as_int(d));  // within 1/8 of 1 / d
#pragma unroll
    for (int i = 0; i < 3; ++i) y = __fmaf_rn(y, __fmaf_rn(-d, y, 1.0f), y);
    return y;
}
__device__ __forceinline__ GeluGate gelu_tanh_gate(float x) {
    // t = -2u log2(e) = x (a + b x^2)
    constexpr float kA = -2.0f * 1.4426950408889634f * kSqrt2OverPi;
    constexpr float kB = kA * kGeluCubic;
    const float t = fminf(fmaxf(x * __fmaf_rn(kB, x * x, kA), -126.0f), 64.0f);
    const float e = exp2_fma(t);
    return {rcp_fma(1.0f + e), e};
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
