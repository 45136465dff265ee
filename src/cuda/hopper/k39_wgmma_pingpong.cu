// k39_wgmma_pingpong: k32's producer and ring with the ping-pong schedule:
// each consumer warpgroup owns a whole 128 x 128 tile and the two take turns.
// Kernel: pingpong_gemm.cuh (the library's ping-pong kernel, the one its
// dispatcher runs for bf16 products), 128 x 128 x 64 tiles (bf16, f16) or
// 128 x 128 x 128 (e4m3, e5m2, accumulated in the tensor core as k33), 7
// stages (bf16, f16; 6 for fp8), one producer and 2 consumer warpgroups, one CTA per SM, tile rows
// in groups of 8; the fp32 output stored from the registers.
// Run alone: rigel ladder --backend cuda --rungs k39_wgmma_pingpong --dtype bf16 --sizes 4096
//
// Adds over k32 (and k35): in k32's cooperative schedule both consumers share
// one 128 x 256 tile, so while they store it no wgmma of the CTA is in
// flight; here consumer 0 multiplies the CTA's tiles 0, 2, 4, ... and
// consumer 1 tiles 1, 3, 5, ..., their main loops handed over in turn, so one
// consumer's epilogue runs under the other's main loop and the tensor cores
// wait for no store. The price: a tile of 128 x 128 asks L2 for 32 KB a
// k-tile for half the work of k32's 48 KB, and each consumer holds 128
// accumulators of one tile. The library runs this kernel with its epilogues
// fused and a bf16 D (docs/gemm.md); the rung is the same kernel writing the
// ladder's fp32 C, so that the ladder's sweep sets it beside k32 and k35 on
// the same problems, and fp8 without promotion runs on it too (the library's
// fp8 path promotes, k34's way).
// Prediction: bf16 4096^3 at cuBLAS's rate or better (the library's kernel
// with a bf16 D read 1.006x-1.012x cuBLAS in every layout at 4096^3, where
// k35 reads 0.97x; an fp32 C doubles the bytes each epilogue writes, still
// under the other consumer's main loop), 8192^3 at 1.00-1.02x; e4m3 at
// 8192^3 within 1 % of cuBLASLt's FAST_ACCUM either way (k35: 0.99x), since
// an fp8 k-tile's wgmma takes as long as a bf16 one and the epilogue is then
// twice as large a share of a tile.
// Measured (paired samples, each ratio against the vendor row it is judged
// by, results/h200/2026-12-04_0e438be_ladder_*.csv and _b3ce812_ladder*.csv):
// bf16 against cuBLAS (fp32 C both) 1.008x at 2048^3, 1.031x and 1.026x at
// 4096^3 (two calls), 1.054x at 8192^3, 1.051x at 16384^3 (16 pairs), where
// k35 read 0.958x, 0.989x/0.990x, 1.019x and 1.012x in the same runs; e4m3
// against cuBLASLt's FAST_ACCUM 1.032x at 4096^3 and 1.078x at 8192^3 (k33
// 0.956x, 1.006x; k35 0.990x, 1.019x). The prediction held for bf16 and was
// too timid for fp8: the epilogue's larger share of an fp8 tile is what the
// ping-pong hides. Single-sided rates in the same runs put k39 below cuBLAS at
// 4096^3 (643.7 against 668.8 Tflop/s), measured seconds apart at SM clocks of
// 1500 and 1635 MHz. That clock gap is the kernels' own, not the drift's: timed
// in 1 s blocks, each side alone at the 700 W cap (`rigel gemm run --blocks 1`,
// the same kernel in the library with an f32 D), this kernel ran at 1470 MHz
// where cuBLAS ran at 1605, and the ratio against cuBLAS went from 0.992x
// paired to 0.927x at 4096^3 and from 1.035x to 0.966x at 8192^3
// (results/h200/2026-12-04_57b6485_run_*gemm*.csv; FINDINGS.md, "Paired
// against blocked timing"). The paired ratio, which issue 11's targets read,
// counts cycles at a shared clock; run alone, this kernel spends more energy a
// cycle than cuBLAS's and loses about 7 %. Where it loses
// (_b3ce812_ladder_20261204T030203Z-66b37c.csv): small squares, 0.71x cuBLAS
// at 512^3 and 0.78x at 1024^3 (16 and 64 tiles: most SMs idle, which the
// library's 64-row tiles and k37's split address), and e4m3 at 8192 x 8192 x
// 1024, 0.905x FAST_ACCUM (8 k-tiles of 128 a tile: the pipeline's fill is
// not hidden); where it wins most, bf16 4096 x 11008 x 4096 1.123x and
// 8192 x 8192 x 1024 1.172x, e4m3 4096 x 11008 x 4096 1.171x. Issue 11's 4096^3
// target (1.05x) is still short; the cells are in README.md, "Hopper rungs
// against cuBLAS across shapes", column k39_wgmma_pingpong.
// A 7th stage (5184c77, kept for 16-bit types): the direct stores leave the
// staging boxes' 32 KB free, and the timeline probe had found the fixed
// kernel's main loops waiting for 1-4 k-tiles a tile at 6 stages. In one call
// of four builds, each paired with cuBLAS: as built 1.036x at 4096^3 and
// 1.050x at 8192^3, 7 stages 1.033x and 1.063x, the stores spread out beside
// the other main loop (gemm/epilogue_spread.hpp) 1.032x and 1.052x,
// both 1.033x and 1.052x (results/h200/experiments/2026-12-04_5184c77_k39_*):
// 8192^3 gained, 4096^3 did not move.
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/pingpong_rung.cuh"

namespace rigel::cuda {
namespace {

// 7 stages for the 16-bit types: the direct fp32 stores need no staging box, so the room the library's
// fixed kernels give their two boxes holds a 7th stage here (224 KB of ring). fp8 keeps the 6 it was
// measured with.
template <DType T>
using K39 = sm90::PingPong<T, sm90::elem_bytes(T) == 2 ? 7 : 6>;

}  // namespace

void k39_wgmma_pingpong(const GemmProblem& p) {
    constexpr const char* kRung = "k39_wgmma_pingpong";
    switch (p.type) {
        case DType::bf16: return sm90::launch_pingpong_rung<K39<DType::bf16>>(p, kRung);
        case DType::f16: return sm90::launch_pingpong_rung<K39<DType::f16>>(p, kRung);
        case DType::e4m3: return sm90::launch_pingpong_rung<K39<DType::e4m3>>(p, kRung);
        case DType::e5m2: return sm90::launch_pingpong_rung<K39<DType::e5m2>>(p, kRung);
        default:
            throw std::invalid_argument(std::string(kRung) + " takes bf16, f16, e4m3 and e5m2, not " +
                                        std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
