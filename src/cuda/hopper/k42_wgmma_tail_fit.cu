// k42_wgmma_tail_fit: k40 with the narrow tail's width chosen per shape,
// 104 or 64 columns, whichever leaves the busiest SM the least work.
// Kernel: pingpong_gemm.cuh, k40's (128 x 128 x 64 tiles, 7 stages, bf16 and
// f16) with a narrow tail of 104 (G::kTailN, k40's kernel) or of 64 columns
// (a second instantiation: m64n64k16 on the first 32 of each half's 64
// accumulators, B through a map of 64-row boxes). The choice is
// gemm::plan_tail_fit (src/gemm/narrow_tail.hpp, host-tested): 64 only where
// it gains 1 % on 104 in the model, which counts neither its extra bytes nor
// m64n64's lower rate; no tail where neither evens the SMs out by 1 %.
// Run alone: rigel ladder --backend cuda --rungs k42_wgmma_tail_fit --dtype bf16 --sizes 3072
//
// Adds over k40: the tail's width as a choice. At 3072^3 k40 re-cuts the last
// 8 columns of 128 into 10 of 104: 384 wide tiles (2.91 waves) and 240 narrow
// ones, the busiest SM 612 columns' worth of 128-row tile against an even
// share of 559 (the model's cost of a tile: its width plus 4 columns for its
// start and hand-off). 64-wide tiles re-cut only the last 2 columns, into 4:
// the 528 wide tiles are then exactly 4 waves, and 96 of the 132 SMs take one
// narrow tile after them, 4 x 132 + 68 = 596. k41 tried the same shape with a
// wider tile instead (128 x 192, the model's 588) and its paired ratio did not
// move: its 192-wide kernel lost per column what it won in the last wave
// (k41's comment). Here every wide tile is k40's own, and only the 96 narrow
// tiles differ. A 64-wide tile asks L2 for 24 KB a k-tile for
// half a wide tile's work (1.5 times the bytes a tensor cycle), while the
// whole wave is in its tail; m64n64 ran at 3,662 operations a clock an SM in
// the throughput probe against m64n128's 3,709. 64 is also a whole 64-column
// slab of an MN-major B, which 104 is not (docs/gemm.md, "The narrow tail").
// Among the sweep's squares only 3072^3 changes: 4096^3 and 8192^3 keep the
// 104-wide tail (1,032 against 1,056; 4,128 against 4,160), and so does
// 6144^3, where 64 would gain only 0.5 % (2,316 against 2,328); 2048^3 and
// 16384^3 take none; of the odd verify shapes, 3001^2 x 296 takes the 64-wide
// tail (its last narrow column 57 wide) and 2500 x 2100 x 136 the 104-wide one.
// Prediction: 3072^3 about 2 % faster than k40 in paired samples (the model's
// 2.6 % less for the busiest SM, less the narrow tiles' extra bytes), from
// k40's 0.987x cuBLAS to about 1.01x; the other squares as k40.
// Measured on the H200 machine (bae56f2, one call, each size paired with
// cuBLAS; results/h200/2026-12-05_bae56f2_ladder.csv): 3072^3 0.981x
// [0.966, 0.993], level with k40's 0.983x and 0.987x and k43's 0.989x (which
// has k42's plan): the prediction failed there, the 64-wide tail's 2.6 % on
// the busiest SM not showing; 4096^3, where k42 runs k40's kernel and plan,
// 1.0497x [1.034, 1.064] (k40 1.046x and 1.048x before), 0.0003 short of
// issue 11's 1.05x.
// On an H100 (one call, 4c8b541,
// results/h100/2026-12-05_4c8b541_ladder.csv, each rung paired with cuBLAS,
// bf16 with an fp32 C): 3072^3 0.805x [0.784, 0.836] against k40's 0.764x
// [0.745, 0.799], the 64-wide tail about 5 % ahead (unpaired 542.7 against
// 520.7 Tflop/s), the direction and more than the size the model gave; 4096^3
// and 8192^3, where k42 runs k40's kernel and plan, 0.861x and 0.821x against
// 0.846x and 0.802x. Both rungs' odd verify shapes (3001^2 x 296 with the
// 64-wide tail, 2500 x 2100 x 136 with the 104-wide one, 3072 x 3072 x 136)
// passed for bf16 and f16 in that call. The H100's rates sit well below the
// H200's for these fp32-output rungs while cuBLAS's do not (docs/machines/h100.md),
// so the H100 tells the direction of k42's change, not its ratio on the H200.
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/pingpong_rung.cuh"

namespace rigel::cuda {
namespace {

// k40's kernel for each of the two widths the plan chooses from.
template <DType T>
struct TailFit {
    template <int TailN>
    using Kernel = sm90::PingPong<T, 7, sm90::Major::k, sm90::Major::k, 1, false, 128, 128, TailN>;
};
static_assert(gemm::kTailFitWidths[0] == gemm::kTailTileN && gemm::kTailFitWidths[1] == 64,
              "k42 instantiates the two widths the plan chooses from");

}  // namespace

void k42_wgmma_tail_fit(const GemmProblem& p) {
    constexpr const char* kRung = "k42_wgmma_tail_fit";
    switch (p.type) {
        case DType::bf16: return sm90::launch_tail_fit_rung<TailFit<DType::bf16>::Kernel>(p, kRung);
        case DType::f16: return sm90::launch_tail_fit_rung<TailFit<DType::f16>::Kernel>(p, kRung);
        default:
            throw std::invalid_argument(std::string(kRung) + " takes bf16 and f16, not " + std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
