// k34_wgmma_fp8_promoted: k33 with the accumulator promoted to fp32 every 128
// of K, as DeepSeek-V3 trains in fp8.
// Kernel: warp_specialized.cuh, Schedule::persistent_grouped,
// Accumulation::promoted, 128 x 128 x 128 tiles (e4m3, e5m2), 6 stages, one
// producer and 2 consumer warpgroups, one CTA per SM.
// Run alone: rigel ladder --backend cuda --rungs k34_wgmma_fp8_promoted --dtype e4m3 --sizes 4096
//
// Adds over k33: each k-tile (128 of K: 4 wgmma k32 steps) is accumulated by
// the tensor core into a fresh register set (scale_d = 0 on its first step);
// the consumer waits for it and adds it into a separate fp32 accumulator with
// ordinary FADDs (warp_specialized.cuh, Accumulation::promoted). Two such
// sets take turns: k-tile kt + 1's wgmma is issued before k-tile kt is
// waited for and added. The tensor
// core's reduced-precision sum then spans only 128 products, and the long sum
// over K is plain fp32. DeepSeek-V3 multiplies each partial by per-block
// scales of A and B at this point (an FFMA instead of the FADD, the same
// cost); rigel's fp8 inputs are unscaled, so the block scales are 1.0 and the
// multiply is left out.
// The price: three accumulator sets per thread (the total and two partial
// sums), so each consumer computes 64 x 128 instead of 64 x 256 (a 128 x 128
// CTA tile, 6 stages of 32 KB), which doubles shared-memory and L2 traffic
// per flop.
// Bottleneck, first version (one partial sum): the consumer waited for every
// k-tile's wgmma before its FADDs, so only the other consumer's wgmma kept
// the tensor cores busy meanwhile: 1006 and 1010 Tflop/s at 4096^3 and
// 8192^3 (2026-12-01_da76df2_ladder.csv). With the two sets in turn: 1122
// and 1175 in the same ladder run as cuBLASLt's default fp8 at 1177 and 1234
// (2026-12-01_2e246c5_ladder.csv), the same bits as before.
// Prediction: 750-1000 Tflop/s at 8192^3 (70-85 % of k33), with a smaller
// error than k33 at large K (err_rel_fro in the CSV). Against cuBLASLt's
// default (promoted) fp8 it stays short of parity; k36 says why.
// Measured: README.md, "4096 x 4096 x 4096" and "Hopper rungs against cuBLAS
// across shapes", rows k34_wgmma_fp8_promoted (baseline: cuBLASLt's default).
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/warp_specialized.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K34 = sm90::WarpSpecialized<T, 128, 6, sm90::Schedule::persistent_grouped, sm90::Accumulation::promoted>;

}  // namespace

void k34_wgmma_fp8_promoted(const GemmProblem& p) {
    switch (p.type) {
        case DType::e4m3: return sm90::launch_warp_specialized<K34<DType::e4m3>>(p, "k34_wgmma_fp8_promoted");
        case DType::e5m2: return sm90::launch_warp_specialized<K34<DType::e5m2>>(p, "k34_wgmma_fp8_promoted");
        default:
            throw std::invalid_argument("k34_wgmma_fp8_promoted takes e4m3 and e5m2, not " +
                                        std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
