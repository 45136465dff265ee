// The library's fp8 kernels (e4m3, e5m2): layout NT only (fp8 wgmma reads
// K-major operands), k34's promoted accumulation (fp32 every 128 of K),
// 128 x 128 tiles fused, and split-K.
#include <array>

#include "cuda/gemm/gemm_kernels.cuh"

namespace rigel::cuda::gemm_kernels {
namespace {

using gemm::Op;

template <DType T>
using Fused = WarpSpecialized<T, 128, 6, Schedule::persistent_grouped, Accumulation::promoted>;
template <DType T>
using Split = WarpSpecialized<T, 128, 6, Schedule::split_k, Accumulation::promoted>;

const std::array kRows{
    KernelEntry{{Type::e4m3, Op::n, Op::t, 128, false, false}, launch_kernel<Fused<DType::e4m3>, FusedEpilogue>,
                Fused<DType::e4m3>::kBK},
    KernelEntry{{Type::e4m3, Op::n, Op::t, 128, true, false}, launch_kernel<Split<DType::e4m3>, sm90::StoreF32>,
                Split<DType::e4m3>::kBK},
    KernelEntry{{Type::e5m2, Op::n, Op::t, 128, false, false}, launch_kernel<Fused<DType::e5m2>, FusedEpilogue>,
                Fused<DType::e5m2>::kBK},
    KernelEntry{{Type::e5m2, Op::n, Op::t, 128, true, false}, launch_kernel<Split<DType::e5m2>, sm90::StoreF32>,
                Split<DType::e5m2>::kBK},
};

}  // namespace

std::span<const KernelEntry> fp8_kernels() { return kRows; }

}  // namespace rigel::cuda::gemm_kernels
