// k32_wgmma_persistent: k31 with a persistent grid and an L2-aware tile order.
// Kernel: warp_specialized.cuh, Schedule::persistent_grouped,
// Accumulation::tensor_core, 128 x 256 x 64 tiles (bf16, f16), 4 stages, one
// producer and 2 consumer warpgroups, one CTA per SM.
// Run alone: rigel ladder --backend cuda --rungs k32_wgmma_persistent --dtype bf16 --sizes 4096
//
// Adds over k31: the grid is one CTA per SM (132 on the H200), and each CTA
// walks tiles b, b + 132, b + 264, ... (warp_specialized.cuh, Schedule::
// persistent_grouped). Two gains. (1) The epilogue overlaps loads: while the
// consumers store tile t, the producer, which never stores, is already filling
// the ring with tile t + 132, so the next main loop starts on full stages; no
// CTA launch or prologue is paid per tile. (2) Tiles are numbered in groups of
// 8 tile rows walked column by column, so the ~132 tiles in flight form a block
// of about 8 x 17 tiles. Moving through K roughly together, a wave then needs
// 1024 rows of A and ~4300 rows of B per k-tile (each A tile shared by ~17
// CTAs, each B tile by 8) where k31's order needs all 8192 rows of A and ~600
// of B at 8192^3: about 40 % fewer bytes from HBM per wave, and a working set
// per k-step (~0.7 MB) that L2 keeps easily.
// Bottleneck: the tensor cores themselves under the 700 W power limit (the
// SM clock drops well below its peak under sustained bf16 GEMM: the
// sm_clock_mhz column of the CSVs); the consumers still idle during their own
// epilogue (the tile's stores are not asynchronous), and a ragged last wave
// leaves some SMs without work.
// Prediction: 620-720 Tflop/s in bf16 at 8192^3 (90-100 % of cuBLAS); the gain
// over k31 grows with N and K (more L2 reuse) and on many-tile shapes.
// Measured: README.md, "The climb", "4096 x 4096 x 4096" and "Hopper rungs
// against cuBLAS across shapes", rows k32_wgmma_persistent.
#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/hopper/warp_specialized.cuh"

namespace rigel::cuda {
namespace {

template <DType T>
using K32 = sm90::WarpSpecialized<T, 256, 4, sm90::Schedule::persistent_grouped, sm90::Accumulation::tensor_core>;

}  // namespace

void k32_wgmma_persistent(const GemmProblem& p) {
    switch (p.type) {
        case DType::bf16: return sm90::launch_warp_specialized<K32<DType::bf16>>(p, "k32_wgmma_persistent");
        case DType::f16: return sm90::launch_warp_specialized<K32<DType::f16>>(p, "k32_wgmma_persistent");
        default:
            throw std::invalid_argument("k32_wgmma_persistent takes bf16 and f16, not " + std::string(name(p.type)));
    }
}

}  // namespace rigel::cuda
