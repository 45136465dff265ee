// k23_mma_sync_e4m3: k21's pipeline on fp8 e4m3 (fp32 accumulation, fp32 C),
// mma.sync.m16n8k32.e4m3 (sm_89 and later). B is N x K (BLayout::n_by_k).
// Run alone: rigel ladder --backend cuda --rungs k23_mma_sync_e4m3 --dtype e4m3 --sizes 4096
//
// Adds over k21: the fp8 instruction. A stage holds 64 bytes of K (k21: 128),
// here 64 e4m3 values (two k32 steps); each byte moved feeds twice the flops
// of bf16. ldmatrix's 8x8 b16 matrix read as bytes is 8 rows of 16 e4m3, lane l
// receiving bytes 4(l & 3) .. 4(l & 3) + 3 of row l >> 2: the e4m3 fragments
// of PTX ISA 9.7.14.5.10 (A: row g (+8 for a4..7, a12..15), columns 4q + 0..3
// (+16 for a8..15); B: rows 4q + 0..3 (+16 for b4..7), column g), the same
// byte map as the 16-bit types (mma_layout.cuh). fp8 mma needs K contiguous
// for both operands (the .row.col form only), hence B as N x K.
// What the machine code says: ptxas for sm_90a turns each m16n8k32 e4m3
// mma.sync into F2FP.F16.E4M3.UNPACK_B conversions of the fragments and two
// HMMA.16816.F32 (f16) instructions: on Hopper the legacy path has no fp8
// math; fp8 runs natively only on wgmma (QGMMA). The unpacked fragments take
// twice the registers, so the 64 x 64 warp tile spills: this rung uses a
// 128 x 128 block tile of 64 x 32 warp tiles (mma_layout.cuh,
// MmaSyncE4m3TileConfig).
// Tails: any M, N; K % 16 == 0 on cp.async, other K element by element.
// Bottleneck: the f16 HMMA rate, with 1.5 F2FP conversions per HMMA (96 per
// 64 in this tile's SASS) competing for issue slots; half the bytes per flop
// of k21 relieve L2 and shared memory.
// Prediction: 0.7-1.0x k21's f16 Tflop/s: fp8 is "footprint only" on this
// path (the accelerated rule asks >= 1.5x fp16).
// Measured: README.md, "4096 x 4096 x 4096" (k23_mma_sync_e4m3).
#include <cuda_runtime.h>

#include "cuda/ladder/tensor_rungs.cuh"

namespace rigel::cuda {
namespace {

// mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32: a = four .b32 of four
// e4m3 each, b = two, c/d = four f32.
struct MmaE4m3 {
    static constexpr int kElemBytes = 1;
    __device__ __forceinline__ static void mma(float (&d)[4], const std::uint32_t (&a)[4],
                                               const std::uint32_t (&b)[2]) {
        asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

using Cfg = mma::MmaSyncE4m3TileConfig;

}  // namespace

std::string k23_mma_sync_e4m3_check(const GemmProblem& p) {
    return tensor::check_tile_grid(p, Cfg::kBM, Cfg::kBN);
}

void k23_mma_sync_e4m3(const GemmProblem& p) {
    if (p.type != DType::e4m3)
        throw std::invalid_argument("k23_mma_sync_e4m3 takes e4m3, not " + std::string(name(p.type)));
    tensor::launch_mma_sync<Cfg, MmaE4m3>(p);
}

}  // namespace rigel::cuda
