// The hopper rungs' registry table, in climbing order. Every row needs sm_90a
// (min_sm 90: the runner skips them on older GPUs), takes B as N x K (both
// operands K-major, which fp8 wgmma requires and TMA's 128B swizzle suits) and
// refuses K whose rows TMA cannot address (hopper_tma_check).
#include <array>
#include <cstdint>
#include <string>

#include "cuda/hopper/hopper_rungs.cuh"
#include "cuda/registry_parts.hpp"

namespace rigel::cuda {

std::string hopper_tma_check(const GemmProblem& p) {
    const bool fp8 = p.type == DType::e4m3 || p.type == DType::e5m2;
    if (fp8 && p.k % 16 != 0) return "K must be a multiple of 16: TMA needs 16-byte row strides (K x 1 byte)";
    if (!fp8 && p.k % 8 != 0) return "K must be a multiple of 8: TMA needs 16-byte row strides (K x 2 bytes)";
    // The smallest tile is 128 x 128; the tile index is a 32-bit int.
    const std::int64_t tiles = ((p.m - 1) / 128 + 1) * ((p.n - 1) / 128 + 1);
    if (tiles > INT32_MAX) return "ceil(M/128) * ceil(N/128) output tiles exceed 2^31 - 1";
    return {};
}

namespace {

constexpr std::uint32_t kHalf = dtype_mask(DType::bf16, DType::f16);
constexpr std::uint32_t kFp8 = dtype_mask(DType::e4m3, DType::e5m2);
constexpr int kSm90 = 90;

const std::array kHopperRungs{
    Rung{.id = "k30_wgmma_tma", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "wgmma reads A and B from shared memory that TMA filled in its 128B swizzle: no thread moves "
                   "operands",
         .run = k30_wgmma_tma, .check = hopper_tma_check},
    Rung{.id = "k31_wgmma_ws", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "warp specialization: a TMA producer fills a 4-stage mbarrier ring, two 232-register consumers "
                   "only issue wgmma",
         .run = k31_wgmma_ws, .check = hopper_tma_check},
    Rung{.id = "k32_wgmma_persistent", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "persistent CTAs, one per SM, walk tiles in M-grouped order: loads overlap the epilogue and L2 is "
                   "reused",
         .run = k32_wgmma_persistent, .check = hopper_tma_check},
    Rung{.id = "k33_wgmma_fp8", .backend = Backend::cuda, .group = "hopper", .dtypes = kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "fp8 wgmma (k32 per instruction) in k32's pipeline: twice the flops per instruction, sums kept in "
                   "the tensor core",
         .run = k33_wgmma_fp8, .check = hopper_tma_check},
    Rung{.id = "k34_wgmma_fp8_promoted", .backend = Backend::cuda, .group = "hopper", .dtypes = kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90, .promotes = true,
         .lesson = "fp8 with the tensor core's partial sums promoted into fp32 every 128 of K (DeepSeek-V3, block "
                   "scales 1)",
         .run = k34_wgmma_fp8_promoted, .check = hopper_tma_check},
    Rung{.id = "k35_wgmma_cluster_multicast", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf | kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "clusters of two CTAs share B through TMA multicast (a third less L2 traffic); the output leaves "
                   "by TMA store",
         .run = k35_wgmma_cluster_multicast, .check = hopper_tma_check},
    Rung{.id = "k36_wgmma_fp8_promoted_cluster", .backend = Backend::cuda, .group = "hopper", .dtypes = kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90, .promotes = true,
         .lesson = "fp8 promoted into fp32 every 128 of K in two half-width partials, so k35's 128 x 256 cluster tile "
                   "fits",
         .run = k36_wgmma_fp8_promoted_cluster, .check = hopper_tma_check},
    Rung{.id = "k37_wgmma_splitk", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf | kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "split K across CTAs when the output has too few tiles to fill the GPU",
         .run = k37_wgmma_splitk, .check = hopper_tma_check},
    Rung{.id = "k38_wgmma_fp8_block_scaled", .backend = Backend::cuda, .group = "hopper", .dtypes = kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90, .promotes = true,
         .lesson = "k34 with DeepSeek-V3's block scales (A per 1 x 128, B per 128 x 128) applied by an FFMA at each "
                   "promotion; all 1.0 here (rigel gemm blockscaled runs real ones)",
         .run = k38_wgmma_fp8_block_scaled, .check = hopper_tma_check},
    Rung{.id = "k39_wgmma_pingpong", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf | kFp8,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "ping-pong: each consumer owns a 128 x 128 tile and the two take turns, so one's epilogue runs "
                   "under the other's main loop",
         .run = k39_wgmma_pingpong, .check = hopper_tma_check},
    Rung{.id = "k40_wgmma_narrow_tail", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "k39 with its last tile columns re-cut 104 wide, so the last wave of whole tiles comes out even "
                   "on the SMs",
         .run = k40_wgmma_narrow_tail, .check = hopper_tma_check},
    Rung{.id = "k41_wgmma_wave_fit", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "k40 with the tile width chosen per shape: 128 x 192 tiles where they fill the SMs' waves better "
                   "than k40's narrow tail can",
         .run = k41_wgmma_wave_fit, .check = hopper_tma_check},
    Rung{.id = "k42_wgmma_tail_fit", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "k40 with the narrow tail's width chosen per shape: 64-wide tiles where they even the last wave "
                   "out better than 104-wide ones",
         .run = k42_wgmma_tail_fit, .check = hopper_tma_check},
    Rung{.id = "k43_wgmma_tma_store", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "k42 with the fp32 C staged in shared memory and written by TMA stores: no global store "
                   "instruction beside the other consumer's main loop",
         .run = k43_wgmma_tma_store, .check = hopper_tma_check},
    Rung{.id = "k44_wgmma_wave_fit_tma", .backend = Backend::cuda, .group = "hopper", .dtypes = kHalf,
         .b_layout = BLayout::n_by_k, .min_sm = kSm90,
         .lesson = "k43 with k41's tile width per shape: 128 x 192 tiles, their fp32 C through TMA stores too, where "
                   "they fill the SMs' waves better than k43's narrow tail",
         .run = k44_wgmma_wave_fit_tma, .check = hopper_tma_check},
};

}  // namespace

std::span<const Rung> hopper_rungs() { return kHopperRungs; }

}  // namespace rigel::cuda
