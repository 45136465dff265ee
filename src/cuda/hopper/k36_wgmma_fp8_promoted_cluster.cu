// k36_wgmma_fp8_promoted_cluster: k34's promotion of the fp8 sums into fp32
// every 128 of K, on k35's 128 x 256 cluster tile.
// Kernel: cluster_gemm.cuh, ClusterAccumulation::promoted_halves,
// Epilogue::tma_store, 128 x 256 x 128 tiles (e4m3, e5m2), 4 stages, one
// producer and 2 consumer warpgroups taking turns, persistent clusters of 2.
// Run alone: rigel ladder --backend cuda --rungs k36_wgmma_fp8_promoted_cluster --dtype e4m3 --sizes 4096
//
// Adds over k34: k34 needs two accumulator sets (the fp32 sum and the tensor
// core's partial), so it fell back to a 128 x 128 tile: twice k33's L2 and
// shared-memory bytes per flop. Here each consumer splits its 64 x 256 tile
// into two halves per k-tile: it accumulates the left 64 x 128 into a 64-
// register partial (4 m64n128k32 steps, a fresh sum per 128 of K), waits,
// adds it into the fp32 accumulator (64 FADDs), then does the same for the
// right half. 128 + 64 accumulator registers fit the consumers' 232, and the
// tile keeps k35's cluster of two with B multicast and its TMA-store epilogue.
// The consumers take turns (named barriers passing a token, CUTLASS's ordered
// sequence barrier): consumer 0 issues a half, then consumer 1, then 0 ... so
// that one consumer's wgmma run while the other waits for its own and adds.
// Double-buffering the partial inside one warpgroup (issue k-tile kt into one
// partial, add k-tile kt - 1's while it runs) is what would hide the wait; on
// a 128 x 128 tile it fits the registers, but ptxas then serializes every
// wgmma (info C7514: "non wgmma instructions reading accumulator registers of
// a wgmma between start and end of the pipeline stage"), so only a second
// warpgroup can cover the promotion.
// The price against k35: m64n128 reads 6 KB of shared memory per 64 cycles
// of tensor work (96 B/cycle of the 128 the SM has) against m64n256's 80, and
// A is read twice per k-tile; plus two waits per k-tile per consumer.
// What the H200 said: the turns changed nothing beyond noise against
// consumers issuing freely, and the error equals k34's and cuBLASLt's to the
// digit (err_rel_fro), so cuBLASLt promotes every 128 of K too.
// Bottleneck: the wait per half-tile. The SM clock stays higher than under
// cuBLASLt's promoted kernel while a smaller share of that clock's fp8 peak
// is reached: this kernel is latency-bound, not power- or L2-bound.
// Prediction: 1100-1250 Tflop/s at 8192^3; missed, for the latency above.
// Measured: README.md, "4096 x 4096 x 4096" and "Hopper rungs against cuBLAS
// across shapes", rows k36_wgmma_fp8_promoted_cluster (baseline: cuBLASLt's
// default).
#include "cuda/hopper/cluster_gemm.cuh"
#include "cuda/hopper/hopper_rungs.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K36 = sm90::ClusterGemm<T, 256, 4, sm90::ClusterAccumulation::promoted_halves, sm90::Epilogue::tma_store>;

}  // namespace

void k36_wgmma_fp8_promoted_cluster(const GemmProblem& p) {
    constexpr const char* kId = "k36_wgmma_fp8_promoted_cluster";
    switch (p.type) {
        case DType::e4m3: return sm90::launch_cluster_gemm<K36<DType::e4m3>>(p, kId);
        case DType::e5m2: return sm90::launch_cluster_gemm<K36<DType::e5m2>>(p, kId);
        default:
            throw std::invalid_argument(std::string(kId) + " takes e4m3 and e5m2, not " + std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
