// k35_wgmma_cluster_multicast: k32/k33 run by pairs of CTAs (a 2 x 1
// thread-block cluster) that share their B tile through TMA multicast, with
// the output handed to the copy engine (a TMA store) instead of stored from
// registers.
// Kernel: cluster_gemm.cuh, ClusterAccumulation::tensor_core,
// Epilogue::tma_store, 128 x 256 x 64 tiles (bf16, f16) or 128 x 256 x 128
// (e4m3, e5m2), 4 stages, one producer and 2 consumer warpgroups, persistent
// clusters of 2 CTAs.
// Run alone: rigel ladder --backend cuda --rungs k35_wgmma_cluster_multicast --dtype bf16 --sizes 4096
//
// Adds over k32 (bf16, f16) and k33 (e4m3, e5m2), same 128 x 256 tile, same
// 4-stage ring (cluster_gemm.cuh): (1) the two CTAs of a cluster compute tile
// rows 2p and 2p + 1 of one tile column, so both need the same 256-row B tile
// at every k-step; each producer loads its own A and HALF of B and multicasts
// that half into both CTAs' shared memory. L2 delivers 32 KB per CTA and stage
// instead of 48 KB, for the same 4.2 Mflop (bf16) or 8.4 Mflop (fp8). The
// consumers of both CTAs release each stage (16 arrivals on each empty
// barrier, half of them remote). (2) The epilogue writes each consumer's
// 64 x 256 fp32 accumulators into shared memory in 64 x 32 slabs in the 128B
// swizzle (conflict-free 8-byte stores) and one thread per warpgroup issues a
// TMA store per slab: full 128-byte lines to L2, clipped at M and N by the
// copy engine, and the warpgroup moves on to the next tile while the bytes
// drain. (3) mbarrier waits carry a suspend-time hint.
// Why faster (the plan): at full tensor rate a 128 x 256 tile consumes 48
// bytes of L2 per SM-cycle (bf16 and fp8 alike), about 10 TB/s over 132 SMs at
// 1.6 GHz; k32/k33 move about 7-7.5 TB/s, so L2 looked like their limit. With
// multicast it is 32 bytes per SM-cycle, and bytes not moved are power left
// for the clock on this 700 W-limited card.
// What the H200 said: multicast alone (this kernel with k32's direct stores)
// bought nothing measurable, so L2 bandwidth was not what held k32/k33 back;
// the gain is the TMA-store epilogue's, larger at 4096^3 than at 8192^3.
// Bottleneck: at 8192^3 ours and the vendor's kernels alike sit at the 700 W
// limit, the SM clock well under its peak. At 4096^3 the clock is higher and
// what is lost per tile shows: 512 tiles on 132 SMs is 3.9 waves (3 %), the
// first k-tiles come from HBM after the L2 flush, and the consumers still
// spend the shared-memory writes and two named barriers per slab of the
// epilogue while the tensor cores idle. A CTA pair moves in lockstep, so one
// slow SM slows two. On skinny shapes (16 x 4096 x 4096, 128 x 7168 x 16384)
// its 128 x 256 tiles leave most SMs idle: k37's problem.
// Prediction: bf16 700-760 Tflop/s at 8192^3 and fp8 1250-1400; bf16 fell
// short of it (the power limit, not L2).
// Measured: README.md, "The climb", "4096 x 4096 x 4096" and "Hopper rungs
// against cuBLAS across shapes", rows k35_wgmma_cluster_multicast.
#include "cuda/hopper/cluster_gemm.cuh"
#include "cuda/hopper/hopper_rungs.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K35 = sm90::ClusterGemm<T, 256, 4, sm90::ClusterAccumulation::tensor_core, sm90::Epilogue::tma_store>;

}  // namespace

void k35_wgmma_cluster_multicast(const GemmProblem& p) {
    constexpr const char* kId = "k35_wgmma_cluster_multicast";
    switch (p.type) {
        case DType::bf16: return sm90::launch_cluster_gemm<K35<DType::bf16>>(p, kId);
        case DType::f16: return sm90::launch_cluster_gemm<K35<DType::f16>>(p, kId);
        case DType::e4m3: return sm90::launch_cluster_gemm<K35<DType::e4m3>>(p, kId);
        case DType::e5m2: return sm90::launch_cluster_gemm<K35<DType::e5m2>>(p, kId);
        default:
            throw std::invalid_argument(std::string(kId) + " takes bf16, f16, e4m3 and e5m2, not " +
                                        std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
