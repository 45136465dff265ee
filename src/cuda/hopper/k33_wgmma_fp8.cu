// k33_wgmma_fp8: k32 in fp8 (e4m3 x e4m3 or e5m2 x e5m2 -> fp32).
// Kernel: warp_specialized.cuh, Schedule::persistent_grouped,
// Accumulation::tensor_core, 128 x 256 x 128 tiles (e4m3, e5m2), 4 stages,
// one producer and 2 consumer warpgroups, one CTA per SM.
// Run alone: rigel ladder --backend cuda --rungs k33_wgmma_fp8 --dtype e4m3 --sizes 4096
//
// Adds over k32: the operands are one byte, and wgmma.m64n256k32.f32.e4m3.e4m3
// (or .e5m2.e5m2) takes k32 per instruction at the same issue cost as bf16's
// k16: twice the flops per instruction and per byte of shared memory. Nothing
// else changes: a tile row is still 128 bytes (now 128 elements of K), a
// wgmma k-step is still 32 bytes, so the descriptors, the swizzle and the ring
// are k32's byte for byte. fp8 wgmma reads only K-major operands, which B as N
// x K already is.
// Accumulation: raw, inside the tensor core. Hopper's fp8 path keeps only about
// 14 fraction bits of the running sum (DeepSeek-V3 report, section 3.3.2), so
// the error grows with K faster than bf16's; rigel's fp8 tolerance assumes that
// 2^-14 accumulator (core/dtype.cpp), and k34 shows the remedy and its price.
// Bottleneck: tensor-core rate and power, as k32; with half the bytes per
// flop, L2 and HBM traffic matter even less.
// Prediction: 1000-1300 Tflop/s at 8192^3 (1.6-1.9x k32's bf16: "accelerated"
// by rigel's 1.5x rule), e5m2 the same as e4m3.
// Measured: README.md, "4096 x 4096 x 4096" and "Hopper rungs against cuBLAS
// across shapes", rows k33_wgmma_fp8 (baseline: cuBLASLt FAST_ACCUM).
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/warp_specialized.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K33 = sm90::WarpSpecialized<T, 256, 4, sm90::Schedule::persistent_grouped, sm90::Accumulation::tensor_core>;

}  // namespace

void k33_wgmma_fp8(const GemmProblem& p) {
    switch (p.type) {
        case DType::e4m3: return sm90::launch_warp_specialized<K33<DType::e4m3>>(p, "k33_wgmma_fp8");
        case DType::e5m2: return sm90::launch_warp_specialized<K33<DType::e5m2>>(p, "k33_wgmma_fp8");
        default: throw std::invalid_argument("k33_wgmma_fp8 takes e4m3 and e5m2, not " + std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
