// The library's host half: names, the shape check, the argument check and the
// dispatcher. Pure C++ (no CUDA), so all of it is unit-tested on any machine
// (tests/host/test_gemm_dispatch.cpp); the kernels are in src/cuda/gemm/.
//
// The dispatcher's rules, in order (constants below):
//   1. fp8 runs the promoted cooperative kernel with 128 x 128 tiles (two
//      accumulator sets must fit the registers); bf16/f16 the ping-pong kernel
//      with 128 x 128 tiles, each consumer warpgroup its own tile, so that the
//      epilogue of one runs under the other's main loop
//      (src/cuda/hopper/pingpong_gemm.cuh).
//   2. If fewer 128 x 128 tiles than half the SMs exist, and K holds at least
//      kMinKTilesPerSplit k-tiles per split (and, for a bf16 D with a fixed
//      epilogue, at least kMinKTilesFixedFewSplit k-tiles in all: below that
//      rule 4's unsplit kernel is faster), split K: as many splits as fill
//      the SMs (at most kMaxSplits), run by the cooperative kernel, the
//      partial tiles going to an fp32 workspace that a second kernel sums and
//      passes through the epilogue.
//   2a. Where rule 2 splits K for bf16 operands, a bf16 D and one of
//      gemm::kFixedEpilogues, and every split keeps at least
//      kMinOrderedUnitKTiles k-tiles: the same splits as units of the ping-pong
//      kernel compiled for the epilogue, one a CTA, each storing its partial
//      into a workspace slab of its own, the last to arrive summing them in
//      split order and storing D through the epilogue (gathered, as
//      "fixed_split_ordered" where every tile is split): no fp32 slab of M x N
//      per split, no second kernel, and the same bits every run.
//      GPT-2's bwd_attn_proj_dw (36 tiles, 3 splits of 85 or 86 k-tiles): 0.875x
//      cuBLASLt against the cooperative split's 0.837x in the same call, in
//      either order, with the units adding in turn (2026-12-03_c82e249_gpt2_fixed_split_wave_subset_gemm.csv
//      beside _gpt2_subset_gemm.csv, and the repeat under experiments/);
//      0.907x gathered (2026-12-03_a06ba17_gpt2_gemm.csv);
//      "fixed_split_wave" names it anywhere.
//   3. Otherwise, if the last wave of tiles leaves the tensor work of all
//      waves under kMinWaveUse busy (144 tiles on 132 SMs: two waves, the
//      second 12 tiles, 55 %) and K is long (at least kMinSplitKTiles k-tiles
//      per split), split K s ways, s from 2 to kMaxWaveSplits minimizing the
//      modelled time waves(s) / s + s r, where r is one fp32 partial slab's
//      round trip (written, read back: 8 M N bytes at kSlabBytesPerSecond)
//      over one wave of full-K tiles (2 128^2 K flops at kFlopsPerSm); only
//      where that model promises at least kMinWaveGain. GPT-2's dW products
//      (768 x 3072 x 16384, 144 tiles) would split 4 ways; rule 3a takes them first.
//   3a. Before rule 3, for bf16 operands, a bf16 D and one of
//      gemm::kFixedEpilogues, with more tiles than SMs, a part-empty last
//      wave and a long K: the tail split (set_tail_split), where it takes at
//      least kMinTailGain off the busiest SM's k-tiles. Only the last wave's
//      tiles split K, as many ways as give each SM one unit of them (GPT-2's
//      dW: 144 tiles, the last 12 split 11 ways, 23 of 256 k-tiles a unit);
//      those units run first, then the other tiles whole (or, where they are
//      fewer than the SMs, after the whole tiles, so that the waves of whole
//      tiles keep step), on the ping-pong kernel compiled for the epilogue.
//      Each SM multiplies 279 k-tiles where
//      the unsplit kernel gave 12 SMs 512, and the split units' fix-up (adding
//      into one workspace slab in split order, the last storing D: the same
//      bits every run) runs under the other consumer's whole tile. No fp32
//      slabs of M x N, no second kernel. At 1647f7b: bwd_mlp_down_dw 1.05x and
//      bwd_mlp_up_dw 1.01x cuBLASLt (0.75x and 0.74x on rule 3's slabs at
//      2020d30), the 7B fwd_qkv by name 0.97x against 0.95x unsplit.
//   (3b, measured and not taken.) Where rule 3a finds the last wave more
//      than half full (no split gives each SM one unit of it), the streamed
//      tail (set_stream_tail, "fixed_split_stream"): the tail tiles' k-tiles,
//      end to end, cut into one run per SM of equal length, each run the start
//      of one tile and the end of the one before, first; the pieces of a tile
//      adding into its slab in turn (or gathered: "fixed_split_stream_gather",
//      and where every tile is streamed), the other tiles whole after them.
//      4096^3: 1,024 tiles, the last 100 on 132 SMs, 498 k-tiles on the
//      busiest SM against 512. As the rule at a5755eb, every check passing,
//      every product it streamed was slower: NT_4096 0.82x cuBLASLt against
//      0.997x unsplit, GPT-2's bwd_mlp_up_dx 0.81x against 0.98x
//      (results/h200/experiments/2026-12-03_a5755eb_*; docs/gemm.md).
//   4. bf16 operands, a bf16 D and one of a training step's epilogues: the
//      ping-pong kernel compiled for that epilogue, whose tiles leave through
//      TMA stores on calls that tma_stores() allows. For epilogues none and
//      bias, calls with beta != 0 (a residual added) run the same kernel
//      compiled to load C by TMA into the staging box (Choice::tma_load_c):
//      GPT-2's fwd_attn_proj 0.84x cuBLASLt against 0.76x with C read by the
//      staged path, fwd_mlp_down 0.96x against 0.93x; with beta 0 that
//      compilation was slower (fwd_qkv 0.78x against 0.87x), so those calls
//      keep the kernel without C's path (2026-12-02_86412c0_gpt2_fixed_tma_c_gemm.csv
//      beside _gpt2_gemm.csv). dgelu_bgrad runs on that kernel too, its aux
//      loaded by TMA (beta 0) as each tile begins: GPT-2's bwd_mlp_down_dx
//      363.5 Tflop/s on an H100 against 283.7 with aux read by the staged
//      path, same call (results/h100/2026-12-06_0267288_gpt2_*subset_gemm.csv).
//   5. Where rule 2 or 3 splits K for an fp32 D without epilogue and the desc
//      allows atomics: the ping-pong kernel over units of (split, tile) in
//      pingpong_splitk_units splits, each unit added into D by reductions in
//      L2 (D cleared first for beta 0; beta 1 with C the same matrix as D adds
//      in place; other calls run on the rule-2/3 choice). GPT-2's fp32 dW as
//      the trainer runs them (suite gpt2_dw at d882e33): 0.93x and 0.88x
//      cuBLASLt for the MLP's, 1.02x for the attention projection's, against
//      0.68x, 0.67x and 0.81x for the cooperative split's slabs. Where rule 3
//      split and rule 3a's tail exists (more tiles than SMs), the tail split
//      instead, every unit (split or whole) added into D.
//  5a. Where rules 2, 3 and 3a leave an
//      fp32 D without epilogue unsplit and its last wave part-empty, and the
//      desc allows atomics, the ping-pong split-K could take s splits of
//      every tile (wave_splits: the s of 2 to 16 that most lowers the busiest
//      SM's units times their k-tiles, its two consumers counted one after
//      the other as they share the tensor pipe, by at least
//      kMinWaveSplitGain). GPT-2's bwd_qkv_dw, 108 tiles on 132 SMs, 24 of
//      them idle unsplit: 6 splits, 5 units of 43 k-tiles on the busiest SM
//      against one tile of 256. Rule 5's own splits (pingpong_splitk_units)
//      count consumers as if each had an SM's tensor pipe to itself, which
//      would take 2 here and gain nothing. "pingpong_wave_split" names it.
//      On the H200 machine (11ed0da, one call): bwd_qkv_dw 1.051x cuBLASLt
//      on it against the unsplit kernel's 0.994x; on an H100 (083720f) it
//      lost, 0.914x against 0.999x, and 0.907x against 0.999x as dispatched
//      (cac3aa6), so the rule holds only where the GPU's DRAM peak reaches
//      kWaveSplitMinDramBytesPerSecond (4 TB/s: the H200's 4.8, not an
//      H100's 3.35). gemm::kDispatchWaveSplit switches it.
//   6. Where rule 3 splits K for bf16 operands, a bf16 D and one of
//      gemm::kFixedEpilogues, and the desc allows atomics (its additions'
//      order, as rule 5's, varies): the ping-pong kernel compiled for the epilogue
//      over the units of rule 5, each unit's partial added into an fp32
//      workspace slab (reductions in L2) and the last unit of a tile reading
//      the sum back, applying the epilogue and storing D (SplitFixup,
//      fused_epilogue.cuh): one kernel instead of the slabs and second pass.
//      GPT-2's bf16 dW at 12c21e1 (then the default; allow_atomics since, the
//      library's default being bit-reproducible runs): 0.83x and 0.82x cuBLASLt for the MLP's,
//      0.83x for the attention projection's, against 0.75x, 0.73x and 0.85x
//      on the slabs (c952acb). On rule 2's few tiles it lost to the slabs in
//      the same build (512^3 0.43x cuBLAS against 0.52x, 1024^3 0.41x against
//      0.47x; bias + GELU 0.31x and 0.36x against 0.49x and 0.54x), so rule 2
//      keeps the cooperative split; "fixed_split" names the kernel. Its
//      bit-reproducible form ("fixed_split_ordered") ran, as a slab per unit
//      summed in split order by the last, at 0.58x cuBLASLt on the same dW
//      products at 449b1f0, below the slabs' 0.73-0.86x, so calls without
//      allow_atomics keep the slabs. It now adds in split order into one slab,
//      the arrival counter as a ticket: 0.77x and 0.76x cuBLASLt on
//      bwd_mlp_down_dw and bwd_mlp_up_dw against the slabs' 0.74x and 0.73x in
//      the same call (experiments/2026-12-02_f0a4a37_gpt2_*gemm.csv; not
//      paired with each other), too close to move the rule.
//   7. Where rule 2 leaves a bf16 D with one of gemm::kShortTileEpilogues
//      unsplit (few 128 x 128 tiles, fewer than kMinKTilesFixedFewSplit
//      k-tiles): rule 4's kernel with 64 x 128 tiles, twice the SMs at work
//      for half as long each (512^3: 32 instead of 16 of 132; 1024^3: 128
//      instead of 64). At f1b72cf, in one visit: 1024^3 0.92x cuBLAS
//      against 0.75x on 128 x 128 tiles, 512^3 0.88x against 0.74x
//      (2026-12-02_f1b72cf_small_gemm.csv beside _small_fixed_gemm.csv).
//      64 x 64 tiles for 512^3 (64 CTAs, d31041b) ran at 35.1 Tflop/s against
//      64 x 128's 35.0 in the same visit (results/h200/experiments/
//      2026-12-02_d31041b_small_gemm.csv beside _small_fixed_m64_gemm.csv), so
//      what is left there (7.6 against cuBLAS's 6.9 us) is not the tiles'
//      work, and that kernel was taken out again. bias and bias + GELU have
//      the 64-row kernel too (0612f4a): bias + GELU at 512^3 and 1024^3 0.62x
//      and 0.78x cuBLASLt's GELU_BIAS in that call, 0.80x and 0.93x once the
//      epilogue loaded its bias ahead (89aca92), where 12c21e1 split them on
//      128-row tiles at 0.31x and 0.36x (2026-12-02_0612f4a_fused_gemm.csv,
//      _89aca92_fused_gemm.csv).
//   8. Where rule 4's kernel takes a bf16 D with epilogue none, N is a
//      multiple of 192, K at most kN192MaxK and the 128 x 192 tiles make at
//      least kN192MinWaves waves (GPT-2's LM head: 16384 x 50304 x 768):
//      the ping-pong kernel with 128 x 192 tiles ("fixed_n192"), whose tile
//      asks L2 for 40 KB a k-tile where two 128 x 128 tiles ask 64 KB for
//      4/3 of its work. fwd_lm_head: 0.990x cuBLASLt against 0.967x on
//      128 x 128 tiles in the same call. That kernel has no path for C by
//      TMA, so the plan runs calls with beta != 0 on rule 4's kernel that
//      loads C (Plan's residual plan).
//   9. Before rule 3a, for a bf16 D with epilogue none, B K-major and K of
//      at least kN176MinKTiles k-tiles: 128 x 176 or 128 x 192 tiles
//      ("fixed_n176", "fixed_n192"), whichever leaves the busiest SM less
//      work, where that is less than on 128 x 128 tiles, rule 3a's tail
//      split counted at kSplitUnitCost a k-tile (set_wide_n).
//      The 7B fwd_qkv, 4096 x 12288 x 4096: 0.994x cuBLASLt against 0.979x
//      on the tail split, in one call; 176 is the tile of cuBLASLt's fastest
//      kernel for that product. 3072^3 NT takes 192 (384 tiles, 3 waves):
//      1.000x cuBLASLt and 1.001x cuBLAS on the H200 machine against the tail
//      split's 0.896x and 0.895x, in one call (11ed0da), as on an H100 (0.984x
//      against 0.863x). Among the suites' products only the 7B fwd_qkv takes
//      the rule.
//  10. Where rule 4's kernel takes a bf16 D with one of gemm::kTailEpilogues
//      unsplit on 128 x 128 tiles, A and B K-major (NT), and the narrow tail
//      (narrow_tail.hpp) takes at least kMinGain off the busiest SM's work:
//      the last tile columns re-cut 104 wide ("fixed_tail"); calls with
//      beta != 0 on rule 4's kernel (Plan's residual plan). The 7B fwd_down
//      (4096 x 4096 x 11008, 1,024 tiles): 1.025x cuBLASLt against 1.003x
//      unsplit, the same cuBLASLt algorithm in both, one call
//      (2026-12-05_2ac711e_llama7b_*subset_gemm.csv). MN-major operands lost
//      in the same call (bwd_gate_up_dx and bwd_qkv_dx, NN: 0.92x against
//      1.00x; bwd_qkv_dw, TN: 0.90x against rule 3a's 0.99x; both store B
//      MN-major), so they keep rules 3a and 4. TT (B K-major too) has run
//      on an H100 only, where the tail and the uniform tiles tied at 4096^3
//      (1.011x and 1.000x cuBLASLt, each inside the other's spread), so it
//      keeps rule 4 until the H200 machine separates them.
//  11. 16-bit operands, an fp32 D and no epilogue on the unsplit ping-pong
//      kernel: its D staged in shared memory and written by TMA stores
//      (Choice::f32_tma, "pingpong_f32_tma"; the ladder's k43 store path), on
//      calls with beta 0, D 16-byte aligned, ldd and N multiples of 4; and
//      on the same calls with beta 1 and C the same matrix as D (the training
//      step's dW += dY^T X), the boxes then added into D by the copy engine
//      (cp.reduce.async.bulk.tensor .add), so D is never loaded by the SMs.
//      The dispatcher's plan runs other calls (another beta, a C apart from D)
//      on the kernel the rule replaced, the ping-pong kernel with its staged
//      stores, as before the rule. Taken from the ladder, where on an H100
//      it took the rung from 0.833x to 1.031x cuBLAS at 4096^3. Behind
//      gemm::kDispatchF32Tma (true).
//  12. Any ping-pong choice (no cluster) of a product with more tile rows
//      than tile columns, at most kRowOrderMaxTileCols of those, and K of at
//      least kRowOrderMinK: the tile order walks D row by row (Choice::group_m
//      1) instead of in groups of 8 tile rows walked down each column, so
//      that the tiles sharing a panel of A, the long operand, are neighbours
//      in the order and so on CTAs that start together. On an H100 (3e3e16d,
//      one call, each paired with cuBLASLt, not with each other): GPT-2's
//      bwd_lm_head_dw (50304 x 768 x 16384, 6 tile columns) 0.819x -> 0.968x
//      with an fp32 D and 0.854x -> 1.009x with a bf16 D, bwd_mlp_up_dw
//      0.832x -> 1.001x, bwd_lm_head_dx 0.886x -> 1.002x, bwd_qkv_dw 0.999x
//      -> 1.008x; Nsight Compute (9dc51e6) read 2.2 GB from DRAM on the
//      first against 5.2 GB, the tensor pipe 97 % busy against 72 %. Where
//      the tile rows are few instead (bwd_mlp_down_dw, 6 rows of 24 columns)
//      the groups of 8 already walk whole columns, and row by row lost
//      (0.784x against 1.000x); so did fwd_lm_head (393 tile columns, K 768:
//      0.497x against 0.962x). Only on GPUs whose DRAM peak is below
//      kRowOrderMaxDramBytesPerSecond: the H200 machine has not measured it.
//  13. On those GPUs too, a ping-pong choice (no cluster) of a product with
//      at least kLargeProductMinTiles tile rows and as many tile columns, and
//      K of at least kRowOrderMinK, walks its tiles in groups of
//      kLargeProductGroupM tile rows instead of 8. On an H100 (6164623, each
//      paired with cuBLASLt's GELU_BIAS, one call a group size): bias + GELU
//      at 8192^3 read 0.867x-0.975x in groups of 8 (two calls), 1.037x in
//      groups of 4, 0.979x of 2, 0.693x of 1, 0.870x of 16 and 0.793x of 32;
//      at 16384^3 0.630x-0.713x in groups of 8, 0.767x of 4, 0.790x of 2,
//      0.411x of 1, 0.478x of 16, 0.404x of 32. Nsight Compute had timed
//      8192^3 with no epilogue at 1435 us in groups of 4 against 1640-1773 us
//      in groups of 8 (its DRAM reads no lower). Groups of 4 and 2 are level
//      within the pairs' spread at 16384^3; 4 won at 8192^3. At 16384^3 the
//      H100 stays far below cuBLASLt whatever the order (docs/gemm.md).
//  14. Before rules 9 and 3a, on those GPUs too, a bf16 D with one of
//      gemm::kWideEpilogues (bf16 operands), any layout, M, N and K each at
//      least kWideAtCapMinExtent: the cooperative 128 x 256 kernel compiled
//      for the epilogue ("fixed_wide"), unsplit, its tiles leaving by TMA
//      stores, where rules 3a and 4 took the ping-pong tiles; calls with
//      beta != 0 on rule 4's kernel (Plan's residual plan, residual_choice),
//      its tiles in rule 13's groups of 4 (at 16384^3 NT, beta 1, on an H100:
//      0.86x-0.88x cuBLASLt against 0.78x-0.80x in the kernel's groups of 8
//      with no epilogue, 0.94x-1.05x against 0.77x-0.78x with bias + GELU;
//      336a465's binary, three calls each, each paired with cuBLASLt, not
//      with each other). On an H100
//      (a0bcad5, each paired with cuBLASLt, not with each other): 16384^3 NT with no epilogue
//      0.999x against the ping-pong tiles' 0.736x (groups of 4), bias + GELU
//      0.977x against 0.816x; the ladder's k32 (the same tile, fp32 C) 1.012x
//      cuBLAS where k43 (ping-pong) read 0.605x; NN, TN and TT 0.986x, 1.001x
//      and 0.991x against 0.744x, 0.687x and 0.698x; NT at 12288^3, 10240^3
//      and 9216^3 0.987x, 0.956x and 0.971x against 0.859x, 0.762x and
//      0.854x (12408f6). At 8192^3 the two tied (0.968x and 0.999x against
//      1.002x twice) and with bias + GELU the ping-pong tiles won (1.038x
//      against 0.939x), and so they did on GPT-2's fwd_qkv and fwd_lm_head
//      (K 768: 0.979x and 0.960x against 0.782x and 0.823x), so the rule asks
//      for all three extents. Bias + GELU has run only at 8192^3 and
//      16384^3. The H200 machine has not run it (results/h100/2026-12-07_a0bcad5_*,
//      _12408f6_*; docs/gemm.md).
// The cooperative 128 x 256 kernel (k32's tile) stays in the table, for
// kernel_named and for comparison, and so does its fixed-epilogue form with
// TMA stores ("fixed_wide", rule 14's kernel): at 8278d2d on the H200 machine
// it tied the ping-pong kernel on the 4096^3 layouts and the 7B products
// (0.93x-1.00x against 0.95x-1.00x cuBLASLt) and lost on bias + GELU at
// 4096^3 (0.86x against 0.88x).
// These are the rules measured on the H200 machine, and on an H100 for those
// that ask for a DRAM peak below 4 TB/s (12, 13, 14); `rigel gemm bench
// --suite small` and the dispatcher's bench rows show where they stand.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "gemm/narrow_tail.hpp"
#include "gemm/stream_tail.hpp"
#include "rigel/gemm.hpp"

namespace rigel::gemm {

namespace {

constexpr int kTileM = 128;
constexpr int kShortTileM = 64;  // rule 7
constexpr int kWideTileN = 256;
constexpr int kNarrowTileN = 128;
constexpr int kN192TileN = 192;  // rule 8 and "fixed_n192"
constexpr int kN168TileN = 168;  // "fixed_n168"
constexpr int kN176TileN = 176;  // rule 9 and "fixed_n176"
// Rule 9: from this many k-tiles (K = 2048; measured at K = 4096), and the cost of a tail split's unit per
// k-tile against a whole tile's (its pieces run out of step with the other SMs' loads: docs/gemm.md, "The
// streamed tail" and "Split units after the whole tiles").
constexpr std::int64_t kN176MinKTiles = 32;
constexpr double kSplitUnitCost = 4.0 / 3.0;
// Rule 8: measured on GPT-2's fwd_lm_head (16384 x 50304 x 768, 33,536 tiles of 128 x 192, 254 waves):
// 0.990x cuBLASLt against 0.967x on 128 x 128 tiles in the same call (experiments/
// 2026-12-04_db806f7_gpt2_*subset_gemm.csv); the 7B fwd_qkv (K = 4096) read 0.974x on it against the
// dispatcher's 0.976x in another call, so K stays short, and many waves keep the wider tiles' coarser
// last wave small.
constexpr std::int64_t kN192MaxK = 1024;
constexpr std::int64_t kN192MinWaves = 16;
constexpr int kMaxSplits = 16;
constexpr int kMinKTilesPerSplit = 2;
// Rule 2 for a bf16 D with a fixed epilogue: only from this many k-tiles (K = 2048). On the H200 the
// unsplit fixed kernel beat the split at 8 and 16 k-tiles (512^3 0.76x cuBLASLt against 0.50x, 1024^3
// 0.76x against 0.47x; 2026-12-02_37fc29e_small_fixed_gemm.csv beside _small_gemm.csv), while k37's
// split doubled the unsplit rate at 64 (16 x 4096 x 4096); 32 lies between, unmeasured.
constexpr int kMinKTilesFixedFewSplit = 32;
// Rule 2a: the ordered split on rule 2's splits from this many k-tiles a split; measured at 85 (K = 16384,
// 3 splits), while the ticket chain's share grows as the units shorten (7 splits of 36 or 37 k-tiles on the
// same product: 0.78x cuBLASLt against the slabs' 0.86x, 2026-12-03_f0be7f5_gpt2_fixed_split_ordered_subset_gemm.csv).
constexpr int kMinOrderedUnitKTiles = 64;
constexpr double kMinWaveUse = 0.75;
constexpr int kMinSplitKTiles = 16;
constexpr int kMaxWaveSplits = 8;
constexpr double kSlabBytesPerSecond = 3.0e12;  // about what a device-to-device copy moves on the H200
constexpr double kFlopsPerSm = 700e12 / 132;     // a 128 x 128 tile's rate in a full wave
constexpr double kMinWaveGain = 0.9;
// wave_splits ("pingpong_wave_split"): split where the SMs' k-tiles modelled (wave_split_cost) fall to this
// share of the unsplit ones.
constexpr double kMinWaveSplitGain = 0.92;
// Rule 3a: the tail split where it takes at least 1 % off the busiest SM's k-tiles. The 7B fwd_qkv
// (4096 x 12288 x 4096, 3,072 tiles, 24 waves, the last 36 tiles split 3 ways: 2.8 % fewer): 0.969x
// cuBLASLt against the unsplit kernel's 0.949x in the same call at 1647f7b.
constexpr double kMinTailGain = 0.01;
constexpr std::int64_t kMaxWorkspaceBytes = std::int64_t{1} << 30;
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int32_t>::max();

struct TypeRow {
    Type type;
    const char* name;
    int bytes;
};
constexpr std::array kTypes{
    TypeRow{Type::f32, "f32", 4}, TypeRow{Type::bf16, "bf16", 2}, TypeRow{Type::f16, "f16", 2},
    TypeRow{Type::e4m3, "e4m3", 1}, TypeRow{Type::e5m2, "e5m2", 1},
};

struct EpilogueRow {
    Epilogue epilogue;
    const char* name;
    bool bias, aux_out, aux_in, bgrad;
};
constexpr std::array kEpilogues{
    EpilogueRow{Epilogue::none, "none", false, false, false, false},
    EpilogueRow{Epilogue::bias, "bias", true, false, false, false},
    EpilogueRow{Epilogue::bias_relu, "bias_relu", true, false, false, false},
    EpilogueRow{Epilogue::bias_gelu, "bias_gelu", true, false, false, false},
    EpilogueRow{Epilogue::bias_gelu_erf, "bias_gelu_erf", true, false, false, false},
    EpilogueRow{Epilogue::bias_gelu_aux, "bias_gelu_aux", true, true, false, false},
    EpilogueRow{Epilogue::dgelu_bgrad, "dgelu_bgrad", false, false, true, true},
};

const EpilogueRow& row_of(Epilogue e) {
    for (const auto& r : kEpilogues)
        if (r.epilogue == e) return r;
    return kEpilogues[0];
}

bool is_fp8(Type t) { return t == Type::e4m3 || t == Type::e5m2; }
bool is_16bit(Type t) { return t == Type::bf16 || t == Type::f16; }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A DRAM bandwidth in the dispatcher's sentences: "4 TB/s" for 4e12 bytes a second.
std::string tb_per_s(double bytes_per_s) {
    char text[32];
    std::snprintf(text, sizeof text, "%g TB/s", bytes_per_s / 1e12);
    return text;
}

// The stored matrix of an operand: rows x cols, row-major.
struct Stored {
    std::int64_t rows, cols;
};
Stored stored_a(const Desc& d) { return d.a_op == Op::n ? Stored{d.m, d.k} : Stored{d.k, d.m}; }
Stored stored_b(const Desc& d) { return d.b_op == Op::n ? Stored{d.k, d.n} : Stored{d.n, d.k}; }

std::string check_operand_ld(const char* what, Stored s, std::int64_t ld, Type t) {
    const std::string w(what);
    if (ld < s.cols)
        return "ld" + w + " " + std::to_string(ld) + " is smaller than the " + std::to_string(s.cols) +
               " elements of a stored row of " + (w == "a" ? "A" : "B");
    if (ld * type_bytes(t) % 16 != 0)
        return "ld" + w + " x " + std::to_string(type_bytes(t)) + " bytes must be a multiple of 16 (TMA row strides): ld" +
               w + " is " + std::to_string(ld) + ", so pad the stored rows to a multiple of " +
               std::to_string(16 / type_bytes(t)) + " elements";
    return {};
}

// Bytes from the first to one past the last element of a stored matrix.
std::uint64_t span_bytes(Stored s, std::int64_t ld, Type t) {
    return (static_cast<std::uint64_t>(s.rows - 1) * static_cast<std::uint64_t>(ld) +
            static_cast<std::uint64_t>(s.cols)) *
           static_cast<std::uint64_t>(type_bytes(t));
}

bool overlap(const void* p, std::uint64_t p_bytes, const void* q, std::uint64_t q_bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(q);
    return a < b + q_bytes && b < a + p_bytes;
}

// The tail split (rule 3a, kernel_named "fixed_split_tail"): the tiles of a part-filled last wave split
// K so that each SM takes at most one of their units (at least kMinSplitKTiles k-tiles a unit, at most
// kMaxSplits), run first and the other tiles whole after them (after the whole tiles where they are fewer
// than the SMs: pingpong_gemm.cuh says why), on the ping-pong kernel compiled for the
// epilogue, adding in split order. False, c untouched, where there is no such tail, K is too short, or
// the busiest SM's k-tiles shrink by less than min_gain. With fixed false (rule 5's fp32 D): the
// ping-pong split-K whose units, split or whole, add into D.
bool set_tail_split(Choice& c, std::int64_t tiles, std::int64_t k_tiles, int sms, bool fixed, double min_gain) {
    const std::int64_t tail = tiles % sms;
    if (tiles <= sms || tail == 0) return false;
    const std::int64_t splits = std::min<std::int64_t>({sms / tail, k_tiles / kMinSplitKTiles, kMaxSplits});
    if (splits < 2) return false;
    const std::int64_t waves = ceil_div(tiles, sms);
    const std::int64_t busiest = tiles / sms * k_tiles + ceil_div(k_tiles, splits);
    if (static_cast<double>(busiest) > (1.0 - min_gain) * static_cast<double>(waves * k_tiles)) return false;
    c.splits = static_cast<int>(splits);
    c.split_tiles = static_cast<int>(tail);
    c.pingpong = true;
    c.fixed_epilogue = fixed;
    c.ordered_split = fixed;
    c.ctas = sms;
    // Units after the whole tiles have no whole tile left to hide a chain of turns under: gathered.
    const bool after = split_units_lead(static_cast<int>(tiles - tail), static_cast<int>(splits * tail), sms, false) > 0;
    c.tail_gather = fixed && after;
    c.why = std::to_string(tiles) + " tiles of 128 x 128 leave the last of " + std::to_string(waves) + " waves on " +
            std::to_string(sms) + " SMs " + std::to_string(tail) + " tiles: those split K " + std::to_string(splits) +
            " ways, one unit an SM, " +
            (after ? std::string("run after the whole tiles, so that the waves keep step ")
                   : std::string("run first, the others whole after them ")) +
            (!fixed ? "(the ping-pong kernel, every unit added into the fp32 D by atomic reductions: allow_atomics)"
             : after ? "(the ping-pong kernel compiled for this epilogue and a bf16 D; each split unit stores its "
                       "partial into a workspace slab of its own, the last of a tile to arrive summing them in split "
                       "order and storing D)"
                     : "(the ping-pong kernel compiled for this epilogue and a bf16 D; the split units add into a "
                       "workspace slab in split order, the last storing D)");
    return true;
}

// Rule 9 (kernel_named "fixed_n176" and "fixed_n192"): a bf16 D with epilogue none, B K-major (its 176-row
// boxes; an MN-major B would load 192 columns for 176), K long (kN176MinKTiles), more tiles than SMs and not
// rule 2's split: 128 x 176 or 128 x 192 tiles, whichever leaves the busiest SM less work, in 128 x 128
// tiles' worth (ceil(tiles / SMs) x width / 128; 176 on a tie), where that is less than on 128 x 128 tiles
// (the whole waves, plus the tail split's unit where rule 3a would split the last wave, its k-tiles at
// kSplitUnitCost each). False, c untouched, elsewhere. The 7B fwd_qkv (4096 x 12288, NT): 2,240 tiles of
// 176, 17 waves, 23.38 against 23 + 4/9 = 23.44 on 128 x 128 tiles split 3 ways at the tail (and 24 on
// 192): 0.994x cuBLASLt against 0.979x in one call (4451225). 3072^3 NT: 384 tiles of 192, 3 waves, 4.50
// against 4 + 2/3 = 4.67 (5.50 on 176); on an H100, 0.984x cuBLAS against the tail split's 0.863x, each
// paired with cuBLAS in one call (results/h100/2026-12-06_7d2868e_run_*gemm.csv).
bool set_wide_n(Choice& c, const Desc& d, std::int64_t tiles, std::int64_t k_tiles, int sms) {
    if (c.splits != 1 || !has_n192_kernel(d) || d.b_op != Op::t || k_tiles < kN176MinKTiles || tiles <= sms)
        return false;
    int width = 0;
    std::int64_t wide_tiles = 0;
    double on_wide = std::numeric_limits<double>::infinity();
    for (const int w : {kN176TileN, kN192TileN}) {
        const std::int64_t t = ceil_div(d.m, kTileM) * ceil_div(d.n, w);
        const double work = static_cast<double>(ceil_div(t, sms)) * w / kNarrowTileN;
        if (work < on_wide) width = w, wide_tiles = t, on_wide = work;
    }
    double on_128 = static_cast<double>(ceil_div(tiles, sms));
    Choice split;
    if (set_tail_split(split, tiles, k_tiles, sms, true, kMinTailGain))
        on_128 = static_cast<double>(tiles / sms) + kSplitUnitCost / split.splits;
    if (on_wide >= on_128) return false;
    c.pingpong = true;
    c.fixed_epilogue = true;
    c.tile_n = width;
    c.tma_load_c = false;  // Plan's residual plan runs the calls with beta != 0
    c.ctas = static_cast<int>(std::min<std::int64_t>(wide_tiles, sms));
    char cost[64];
    std::snprintf(cost, sizeof cost, "%.2f against %.2f", on_wide, on_128);
    const std::string w = std::to_string(width);
    c.why = std::to_string(wide_tiles) + " tiles of 128 x " + w + ": the busiest SM's work in 128 x 128 tiles' "
            "worth, " + cost + " on 128 x 128 tiles; the ping-pong kernel with " + w + "-column tiles compiled for "
            "this epilogue and a bf16 D, its tiles leaving by TMA stores (N and the rows multiples of 8); calls "
            "with beta != 0 on the 128 x 128 kernel that loads C by TMA";
    return true;
}

// The streamed tail (kernel_named "fixed_split_stream"; not a rule, see the rules' note): the tail's
// tail x k_tiles k-tiles cut into one run per SM (CTA), each at least kMinSplitKTiles long, so that the
// busiest SM multiplies (waves - 1) k_tiles + its run, plus one k-tile for its pieces' fix-ups, where
// whole tiles gave it waves x k_tiles. 4096^3: 1,024 tiles, the last 100 on 132 SMs, runs of 48 or 49
// of 64 k-tiles: 498 k-tiles against 512. Fewer tiles than SMs are all tail: GPT-2's bwd_qkv_dw, 108
// tiles of 256 k-tiles, runs of 210 instead of 256. False, c untouched, where the runs would be short
// or the busiest SM would gain nothing.
bool set_stream_tail(Choice& c, std::int64_t tiles, std::int64_t k_tiles, int sms) {
    const std::int64_t tail = tiles % sms;
    const std::int64_t run = ceil_div(tail * k_tiles, sms);
    if (tail == 0 || tail * k_tiles < sms * kMinSplitKTiles) return false;
    const std::int64_t waves = ceil_div(tiles, sms);
    const std::int64_t busiest = (waves - 1) * k_tiles + run + 1;
    if (busiest >= waves * k_tiles) return false;
    c.splits = 2;
    c.split_tiles = static_cast<int>(tail);
    c.stream_tail = true;
    c.pingpong = true;
    c.fixed_epilogue = true;
    c.ordered_split = true;
    c.ctas = sms;
    c.why = std::to_string(tiles) + " tiles of 128 x 128 " +
            (waves > 1 ? "leave the last of " + std::to_string(waves) + " waves on " + std::to_string(sms) + " SMs " +
                             std::to_string(tail) + " tiles"
                       : "fill " + std::to_string(tiles) + " of " + std::to_string(sms) + " SMs") +
            ": their " + std::to_string(tail * k_tiles) + " k-tiles streamed, one run of " + std::to_string(run) +
            (waves > 1 ? " or fewer an SM, first, the other tiles whole after them (the ping-pong kernel compiled for "
                         "this epilogue and a bf16 D; a tile's pieces add into a workspace slab in turn, the last "
                         "storing D)"
                       : " or fewer an SM (the ping-pong kernel compiled for this epilogue and a bf16 D; each piece "
                         "stores its partial into a workspace slab of its own, the last of a tile summing them in "
                         "order and storing D)");
    return true;
}

}  // namespace

const char* name(Type t) {
    for (const auto& r : kTypes)
        if (r.type == t) return r.name;
    return "?";
}

int type_bytes(Type t) {
    for (const auto& r : kTypes)
        if (r.type == t) return r.bytes;
    return 0;
}

const char* name(Epilogue e) { return row_of(e).name; }

EpilogueTraits traits(Epilogue e) {
    const EpilogueRow& r = row_of(e);
    return {.bias = r.bias, .aux_out = r.aux_out, .aux_in = r.aux_in, .bgrad = r.bgrad};
}

std::string layout_name(Op a, Op b) {
    return std::string(1, a == Op::n ? 'N' : 'T') + std::string(1, b == Op::n ? 'N' : 'T');
}

bool parse_type(const std::string& s, Type& out) {
    for (const auto& r : kTypes)
        if (s == r.name) return out = r.type, true;
    return false;
}

bool parse_epilogue(const std::string& s, Epilogue& out) {
    for (const auto& r : kEpilogues)
        if (s == r.name) return out = r.epilogue, true;
    return false;
}

bool parse_layout(const std::string& s, Op& a, Op& b) {
    auto op = [](char c, Op& o) {
        if (c == 'N' || c == 'n') return o = Op::n, true;
        if (c == 'T' || c == 't') return o = Op::t, true;
        return false;
    };
    Op pa{}, pb{};
    if (s.size() != 2 || !op(s[0], pa) || !op(s[1], pb)) return false;
    a = pa;
    b = pb;
    return true;
}

Desc with_packed_leading_dimensions(Desc d) {
    if (d.lda == 0) d.lda = stored_a(d).cols;
    if (d.ldb == 0) d.ldb = stored_b(d).cols;
    if (d.ldd == 0) d.ldd = d.n;
    if (d.ldc == 0) d.ldc = d.n;
    if (d.ldaux == 0) d.ldaux = d.n;
    return d;
}

std::string check(const Desc& desc) {
    const Desc d = with_packed_leading_dimensions(desc);
    if (d.m < 1 || d.n < 1 || d.k < 1) return "M, N and K must be at least 1";
    if (d.m > kMaxInt || d.n > kMaxInt || d.k > kMaxInt) return "M, N and K must be below 2^31";
    if (!is_16bit(d.a_type) && !is_fp8(d.a_type))
        return std::string("A's type must be bf16, f16, e4m3 or e5m2, not ") + name(d.a_type);
    if (d.a_type != d.b_type)
        return std::string("A and B must have one type (") + name(d.a_type) + " x " + name(d.b_type) +
               " is not a kernel rigel has)";
    if (d.d_type != Type::f32 && !is_16bit(d.d_type)) return std::string("D must be f32, bf16 or f16, not ") + name(d.d_type);
    if ((d.a_op != Op::n && d.a_op != Op::t) || (d.b_op != Op::n && d.b_op != Op::t))
        return "op(A) and op(B) must each be Op::n or Op::t";
    if (row_of(d.epilogue).epilogue != d.epilogue)
        return "the epilogue is none of rigel's (" + std::to_string(static_cast<int>(d.epilogue)) + ")";
    // Before any ld is multiplied by an element size: a huge ld must not overflow the checks below.
    for (std::int64_t ld : {d.lda, d.ldb, d.ldd, d.ldc, d.ldaux})
        if (ld > kMaxInt) return "leading dimensions must be below 2^31";
    if (is_fp8(d.a_type) && !(d.a_op == Op::n && d.b_op == Op::t))
        return "fp8 wgmma reads only K-major operands: fp8 takes layout NT (A stored M x K, B stored N x K), not " +
               layout_name(d.a_op, d.b_op);
    for (const auto& r : {check_operand_ld("a", stored_a(d), d.lda, d.a_type),
                          check_operand_ld("b", stored_b(d), d.ldb, d.b_type)})
        if (!r.empty()) return r;
    if (d.ldd < d.n) return "ldd " + std::to_string(d.ldd) + " is smaller than N = " + std::to_string(d.n);
    if (d.ldc < d.n) return "ldc " + std::to_string(d.ldc) + " is smaller than N = " + std::to_string(d.n);
    if (d.ldaux < d.n) return "ldaux " + std::to_string(d.ldaux) + " is smaller than N = " + std::to_string(d.n);
    if (ceil_div(d.m, kTileM) * ceil_div(d.n, kNarrowTileN) > kMaxInt)
        return "ceil(M/128) * ceil(N/128) output tiles exceed 2^31 - 1";
    return {};
}

// Rule 2's split count: as many splits as fill the SMs with one wave of (split, tile) units, at least
// kMinKTilesPerSplit k-tiles a split, at most kMaxSplits, and the fp32 slabs within kMaxWorkspaceBytes.
// 0 where the tiles alone fill the SMs.
static std::int64_t few_tile_splits(const Desc& d, std::int64_t tiles, std::int64_t k_tiles, int sms) {
    const std::int64_t splits = std::min<std::int64_t>({sms / tiles, k_tiles / kMinKTilesPerSplit, kMaxSplits});
    return std::min<std::int64_t>(splits, std::max<std::int64_t>(1, kMaxWorkspaceBytes / (d.m * d.n * 4)));
}

namespace {

// Rule 14: on a GPU whose DRAM peak is below kRowOrderMaxDramBytesPerSecond, a bf16 D with one of
// kWideEpilogues, any layout, M, N and K each at least kWideAtCapMinExtent: the cooperative 128 x 256 kernel
// compiled for the epilogue ("fixed_wide"), unsplit, ahead of rules 9, 3a and 4's ping-pong tiles. Calls with
// beta != 0 run on rule 4's kernel (Plan's residual plan). True where it took the product.
bool set_wide_at_cap(Choice& c, const Desc& d, int sms, double dram_bytes_per_s) {
    if (dram_bytes_per_s >= kRowOrderMaxDramBytesPerSecond || c.splits != 1 || !has_wide_kernel(d) ||
        std::min({d.m, d.n, d.k}) < kWideAtCapMinExtent)
        return false;
    const std::int64_t tiles = ceil_div(d.m, kTileM) * ceil_div(d.n, kWideTileN);
    c.pingpong = false;
    c.fixed_epilogue = true;
    c.tile_n = kWideTileN;
    c.ctas = static_cast<int>(std::min<std::int64_t>(tiles, sms));
    c.why = std::to_string(tiles) + " tiles of 128 x 256, M, N and K at least " +
            std::to_string(kWideAtCapMinExtent) + ", on a GPU whose DRAM peak is below " +
            tb_per_s(kRowOrderMaxDramBytesPerSecond) +
            ": the cooperative 128 x 256 kernel compiled for this epilogue and a bf16 D, its tiles leaving by TMA "
            "stores (N and the rows multiples of 8; calls with beta != 0 on rule 4's kernel that loads C by TMA)";
    return true;
}

// Rules 1 to 11 and 14: the kernel, its tiles and its splits.
Choice choose_kernel(const Desc& desc, int sms, double dram_bytes_per_s) {
    const Desc d = with_packed_leading_dimensions(desc);
    sms = std::max(sms, 1);
    Choice c;
    // A shape or kind no kernel has (an empty M or N leaves no tiles to divide the SMs by): rule 1's
    // defaults, named as refused; Plan's constructor then throws check()'s sentence. Descriptions check()
    // refuses for their leading dimensions alone are still modelled (the host tests ask for their rules).
    const auto known_op = [](Op op) { return op == Op::n || op == Op::t; };
    if (d.m < 1 || d.n < 1 || d.k < 1 || d.m > kMaxInt || d.n > kMaxInt || d.k > kMaxInt ||
        (!is_16bit(d.a_type) && !is_fp8(d.a_type)) || (d.d_type != Type::f32 && !is_16bit(d.d_type)) ||
        !known_op(d.a_op) || !known_op(d.b_op) || row_of(d.epilogue).epilogue != d.epilogue) {
        c.why = "refused: " + check(desc);
        return c;
    }
    c.tile_m = kTileM;
    c.tile_n = kNarrowTileN;
    const std::int64_t k_tile = is_fp8(d.a_type) ? 128 : 64;
    const std::int64_t k_tiles = ceil_div(d.k, k_tile);
    const std::int64_t tiles = ceil_div(d.m, kTileM) * ceil_div(d.n, kNarrowTileN);

    if (is_fp8(d.a_type)) {
        c.why = "fp8: the promoted kernel, 128 x 128 tiles (two accumulator sets in registers)";
    } else {
        c.pingpong = true;
        c.why = "ping-pong 128 x 128 tiles: one consumer's epilogue runs under the other's main loop";
    }
    // A bf16 D with a fixed epilogue and a short K stays unsplit (its kernel's TMA stores, one launch).
    const bool short_fixed = has_fixed_epilogue_kernel(d) && !is_fp8(d.a_type) && k_tiles < kMinKTilesFixedFewSplit;
    if (tiles * 2 < sms && k_tiles >= 2 * kMinKTilesPerSplit && !short_fixed) {
        const std::int64_t splits = few_tile_splits(d, tiles, k_tiles, sms);
        if (splits > 1) {
            c.splits = static_cast<int>(splits);
            c.pingpong = false;
            c.why = std::to_string(tiles) + " tiles of 128 x 128 fill under half the " + std::to_string(sms) +
                    " SMs: split K " + std::to_string(splits) + " ways (cooperative kernel, fp32 partials)";
        }
    }
    const bool few_tiles = c.splits > 1;  // rule 2's split
    // Rule 2a: long splits of a bf16 D with a fixed epilogue add in order inside the ping-pong kernel.
    if (few_tiles && has_fixed_epilogue_kernel(d) && k_tiles / c.splits >= kMinOrderedUnitKTiles) {
        c.pingpong = true;
        c.fixed_epilogue = true;
        c.ordered_split = true;
        c.ctas = static_cast<int>(tiles * c.splits);
        c.why = std::to_string(tiles) + " tiles of 128 x 128 fill under half the " + std::to_string(sms) +
                " SMs: split K " + std::to_string(c.splits) +
                " ways by the ping-pong kernel compiled for this epilogue and a bf16 D, one unit a CTA, each "
                "storing its partial into an fp32 workspace slab, the last of a tile summing them in split order "
                "and storing D";
        return c;
    }
    const auto waves = [&](std::int64_t units) { return static_cast<double>(ceil_div(units, sms)); };
    // Rule 14: on a GPU of an H100's DRAM, the largest products on the cooperative 128 x 256 kernel.
    if (set_wide_at_cap(c, d, sms, dram_bytes_per_s)) return c;
    // Rule 9: 128 x 176 or 128 x 192 tiles where they fill their waves better than 128 x 128 ones do.
    if (set_wide_n(c, d, tiles, k_tiles, sms)) return c;
    // Rule 3a: a part-empty last wave and a long K, with a bf16 D and a fixed epilogue: the tail split,
    // where it shortens the busiest SM's k-tiles by at least kMinTailGain.
    if (c.splits == 1 && has_fixed_epilogue_kernel(d) && set_tail_split(c, tiles, k_tiles, sms, true, kMinTailGain))
        return c;
    if (c.splits == 1 && static_cast<double>(tiles) / (waves(tiles) * sms) < kMinWaveUse &&
        k_tiles >= 2 * kMinSplitKTiles) {
        const double slab = 8.0 * static_cast<double>(d.m) * static_cast<double>(d.n) / kSlabBytesPerSecond;
        const double wave = 2.0 * kTileM * kNarrowTileN * static_cast<double>(d.k) / kFlopsPerSm;
        const double r = slab / wave;
        const double unsplit = waves(tiles);
        double best = unsplit;
        int best_splits = 1;
        const std::int64_t most = std::min<std::int64_t>(
            {kMaxWaveSplits, k_tiles / kMinSplitKTiles,
             std::max<std::int64_t>(1, kMaxWorkspaceBytes / (d.m * d.n * 4))});
        for (int s = 2; s <= most; ++s) {
            const double t = waves(tiles * s) / s + s * r;
            if (t < best) best = t, best_splits = s;
        }
        if (best_splits > 1 && best <= kMinWaveGain * unsplit) {
            c.splits = best_splits;
            c.pingpong = false;
            c.why = std::to_string(tiles) + " tiles of 128 x 128 leave the last of " +
                    std::to_string(static_cast<long long>(unsplit)) + " waves on " + std::to_string(sms) +
                    " SMs part-empty: split K " + std::to_string(best_splits) +
                    " ways (cooperative kernel, fp32 partials)";
        }
    }
    // Rules 5 and 6, where rules 2 or 3 split K and atomics are allowed: the ping-pong kernel runs the
    // units of (split, tile) instead, no slabs written and read back, no second kernel, one consumer's
    // reductions under the other's main loop. Rule 5, an fp32 D without epilogue: each unit added into D.
    // Rule 6, rule 3's split of a bf16 D with a fixed epilogue: each unit's partial added into the plan's
    // fp32 workspace, the last unit of each tile applying the epilogue and storing D (not rule 2's few
    // tiles: there its fences and L2 round trips cost more than the second pass it saves). Both add in an
    // order that varies from run to run.
    const bool into_d = !is_fp8(d.a_type) && d.d_type == Type::f32 && d.epilogue == Epilogue::none;
    const bool into_workspace = !few_tiles && has_fixed_epilogue_kernel(d);
    if (c.splits > 1 && d.allow_atomics && into_d && !few_tiles &&
        set_tail_split(c, tiles, k_tiles, sms, false, kMinTailGain))
        return c;
    if (c.splits > 1 && d.allow_atomics && (into_d || into_workspace)) {
        const int units = pingpong_splitk_units(tiles, k_tiles, sms);
        if (units > 1) {
            c.splits = units;
            c.pingpong = true;
            c.fixed_epilogue = into_workspace;
            c.why = std::to_string(tiles) + " tiles of 128 x 128, split K " + std::to_string(units) +
                    (into_d ? " ways by the ping-pong kernel, each unit added into the fp32 D by atomic reductions "
                              "(allow_atomics)"
                            : " ways by the ping-pong kernel compiled for this epilogue and a bf16 D: each unit's "
                              "partial added into an fp32 workspace, the last unit of a tile storing D");
            c.ctas = static_cast<int>(std::min<std::int64_t>(tiles * units, sms));
            return c;
        }
    }
    // Rule 5a: an fp32 D without epilogue left unsplit with its last wave part-empty, atomics allowed, on a
    // GPU with the H200's DRAM: every tile split so that the SMs' units even out (wave_splits), each unit
    // added into D.
    if (kDispatchWaveSplit && dram_bytes_per_s >= kWaveSplitMinDramBytesPerSecond && c.splits == 1 &&
        c.pingpong && d.allow_atomics && into_d) {
        const int s = wave_splits(tiles, k_tiles, sms);
        if (s > 1) {
            c.splits = s;
            c.ctas = static_cast<int>(std::min<std::int64_t>(tiles * s, sms));
            c.why = std::to_string(tiles) + " tiles of 128 x 128 leave the last wave on " + std::to_string(sms) +
                    " SMs part-empty: every tile split K " + std::to_string(s) +
                    " ways by the ping-pong kernel, the busiest SM's units times their k-tiles " +
                    std::to_string(wave_split_cost(tiles, k_tiles, sms, s)) + " against " +
                    std::to_string(wave_split_cost(tiles, k_tiles, sms, 1)) +
                    " unsplit, each unit added into the fp32 D by atomic reductions (allow_atomics; a GPU whose DRAM "
                    "peak reaches " + tb_per_s(kWaveSplitMinDramBytesPerSecond) + ")";
            return c;
        }
    }
    c.ctas = static_cast<int>(c.splits > 1 ? tiles * c.splits : std::min<std::int64_t>(tiles, sms));
    if (c.pingpong && has_fixed_epilogue_kernel(d)) {
        c.fixed_epilogue = true;
        c.why += "; the kernel compiled for this epilogue and a bf16 D";
        if (d.epilogue == Epilogue::none || d.epilogue == Epilogue::bias || d.epilogue == Epilogue::bias_gelu ||
            d.epilogue == Epilogue::bias_gelu_aux)
            c.why += ", its tiles leaving by TMA stores (N and the rows multiples of 8)";
        // Rule 7: few tiles and K not split: 64-row tiles where that kernel exists (no C-by-TMA form).
        if (c.splits == 1 && tiles * 2 < sms && has_short_tile_kernel(d)) {
            c.tile_m = kShortTileM;
            const std::int64_t short_tiles = ceil_div(d.m, kShortTileM) * ceil_div(d.n, kNarrowTileN);
            c.ctas = static_cast<int>(std::min<std::int64_t>(short_tiles, sms));
            c.why = std::to_string(tiles) + " tiles of 128 x 128 fill under half the " + std::to_string(sms) +
                    " SMs and K is short: ping-pong 64 x 128 tiles (" + std::to_string(short_tiles) +
                    "), the kernel compiled for this epilogue and a bf16 D, its tiles leaving by TMA stores (N and "
                    "the rows multiples of 8)";
        }
        // Rule 4's residual products (beta != 0): C by TMA into the staging box, through the kernel that
        // loads it (its own compilation; beta-0 calls keep the kernel without C's path). dGELU: aux by TMA
        // on that kernel, each tile's boxes loaded as its consumer takes it.
        if (c.splits == 1 && c.tile_m == kTileM && (d.epilogue == Epilogue::none || d.epilogue == Epilogue::bias)) {
            c.tma_load_c = true;
            c.why += "; calls with beta != 0 on the kernel that loads C by TMA";
        } else if (c.splits == 1 && c.tile_m == kTileM && d.epilogue == Epilogue::dgelu_bgrad) {
            c.tma_load_c = true;
            c.why += "; aux loaded by TMA a tile ahead where beta is 0 (the kernel that loads C)";
        }
        // Rule 8: the LM head's class of product on 128 x 192 tiles.
        if (c.splits == 1 && c.tile_m == kTileM && has_n192_kernel(d) && d.n % kN192TileN == 0 &&
            d.k <= kN192MaxK) {
            const std::int64_t wide_tiles = ceil_div(d.m, kTileM) * (d.n / kN192TileN);
            if (wide_tiles >= kN192MinWaves * sms) {
                c.tile_n = kN192TileN;
                c.tma_load_c = false;  // Plan's residual plan runs the calls with beta != 0
                c.ctas = sms;
                c.why = std::to_string(wide_tiles) + " tiles of 128 x 192 (N a multiple of 192, K at most " +
                        std::to_string(kN192MaxK) + ", at least " + std::to_string(kN192MinWaves) +
                        " waves): the ping-pong kernel with 192-column tiles compiled for this epilogue and a bf16 "
                        "D, its tiles leaving by TMA stores (N and the rows multiples of 8); calls with beta != 0 "
                        "on the 128 x 128 kernel that loads C by TMA";
            }
        }
        // Rule 10: the narrow tail where it evens out the last wave, A and B K-major.
        if (c.splits == 1 && c.tile_m == kTileM && c.tile_n == kNarrowTileN && has_tail_kernel(d) && d.a_op == Op::n && d.b_op == Op::t) {
            const NarrowTail t = plan_narrow_tail(static_cast<int>(ceil_div(d.m, kTileM)), d.n, kNarrowTileN,
                                                  kTailTileN, sms);
            if (t.narrow_cols > 0) {
                c.tail_n = kTailTileN;
                c.tma_load_c = false;  // Plan's residual plan runs the calls with beta != 0
                c.ctas = static_cast<int>(
                    std::min<std::int64_t>(ceil_div(d.m, kTileM) * (t.wide_cols + t.narrow_cols), sms));
                c.why = std::to_string(tiles) + " tiles of 128 x 128 leave the last wave part-empty: the last " +
                        std::to_string(ceil_div(d.n, kNarrowTileN) - t.wide_cols) + " tile columns re-cut into " +
                        std::to_string(t.narrow_cols) + " of " + std::to_string(kTailTileN) +
                        ", the busiest SM's work " + std::to_string(t.busiest_load) + " columns' worth against " +
                        std::to_string(t.uniform_load) +
                        " (the ping-pong kernel compiled for this epilogue and a bf16 D, its tiles leaving by TMA "
                        "stores; calls with beta != 0 on rule 4's kernel)";
            }
        }
    }
    // Rule 11: an fp32 D without epilogue on the unsplit ping-pong kernel leaves through shared memory and
    // TMA stores (k43's store path). On an H100, k43 against k42 (the same kernel storing from the
    // registers) at 4096^3: 1.031x against 0.833x cuBLAS, the tensor pipe active 85 % of the cycles
    // against 61 % (results/h100/2026-12-05_3adcd5c_*).
    if (kDispatchF32Tma && c.pingpong && c.splits == 1 && c.cluster_m == 1 && !c.fixed_epilogue &&
        c.tile_n == kNarrowTileN && c.tile_m == kTileM && has_f32_tma_kernel(d)) {
        c.f32_tma = true;
        c.why += "; the fp32 D leaving through shared memory and TMA stores on calls with beta 0, D 16-byte "
                 "aligned, N and ldd multiples of 4, added into D by the copy engine on such calls in place (beta "
                 "1, C the same as D; other calls on the staged stores of the kernel before)";
    }
    return c;
}

// Rules 12 and 13: the tile order of a ping-pong choice with no cluster and its own order, a K of at least
// kRowOrderMinK, on a GPU whose DRAM peak is below kRowOrderMaxDramBytesPerSecond. Rule 12 walks the tiles row
// by row where a few tile columns share each long panel of A; else rule 13 takes groups of kLargeProductGroupM
// tile rows for a product with many tile rows and columns.
void set_tile_order(Choice& c, const Desc& d, double dram_bytes_per_s) {
    if (!c.pingpong || c.cluster_m != 1 || c.group_m != 0 || dram_bytes_per_s >= kRowOrderMaxDramBytesPerSecond ||
        d.k < kRowOrderMinK)
        return;
    const std::int64_t rows = ceil_div(d.m, c.tile_m), cols = ceil_div(d.n, c.tile_n);
    const std::string dram_clause =
        "; a GPU whose DRAM peak is below " + tb_per_s(kRowOrderMaxDramBytesPerSecond) + ")";
    if (cols <= kRowOrderMaxTileCols && rows > cols) {
        c.group_m = 1;
        c.why += "; the tiles in order row by row (" + std::to_string(cols) +
                 " tile columns sharing each panel of A, K " + std::to_string(d.k) + dram_clause;
    } else if (rows >= kLargeProductMinTiles && cols >= kLargeProductMinTiles) {
        c.group_m = kLargeProductGroupM;
        c.why += "; the tiles in groups of " + std::to_string(kLargeProductGroupM) + " tile rows (" +
                 std::to_string(rows) + " x " + std::to_string(cols) + " tiles, K " + std::to_string(d.k) + dram_clause;
    }
}

}  // namespace

Choice choose(const Desc& desc, int sms, double dram_bytes_per_s) {
    Choice c = choose_kernel(desc, sms, dram_bytes_per_s);
    const Desc packed = with_packed_leading_dimensions(desc);  // a refused desc is no ping-pong choice
    set_tile_order(c, packed, dram_bytes_per_s);
    return c;
}

std::optional<Choice> residual_choice(const Desc& d, const Choice& c, double dram_bytes_per_s) {
    if (!wide_n_tiles(c) && c.tail_n == 0 && !wide_cooperative(c)) return std::nullopt;
    Choice with_c = c;
    with_c.tile_n = kNarrowTileN;
    with_c.tail_n = 0;
    with_c.pingpong = true;
    with_c.tma_load_c = has_tma_c_kernel(d);
    with_c.why = "rule 4's kernel for the calls with beta != 0 of a product on 128 x " + std::to_string(c.tile_n) +
                 " tiles" + (c.tail_n > 0 ? " with a narrow tail" : "") +
                 (wide_cooperative(c) ? " shared by both consumers" : "");
    // Rule 14's cooperative tiles have no order of their own: the 128 x 128 tiles take rules 12 and 13's
    // (on an H100, 16384^3 in groups of 4 tile rows, not the kernel's 8).
    set_tile_order(with_c, with_packed_leading_dimensions(d), dram_bytes_per_s);
    return with_c;
}

namespace {

struct NamedKernel {
    const char* name;
    int tile_n;
    bool pingpong;
    bool fp8;  // fp8 operands have it too
    int cluster_m = 1;
    bool fixed = false;       // the ping-pong kernel compiled for the product's epilogue (none where there is none)
    bool tma_store = true;    // with fixed: false keeps its staged stores
    // The ping-pong split-K in pingpong_splitk_units splits: units added into an fp32 D, or with fixed,
    // into the workspace, the last unit of a tile storing a bf16 D through the epilogue (rule 6's kernel).
    bool split_reduce = false;
    bool wave = false;          // with split_reduce, not fixed: wave_splits' splits instead (every SM as busy)
    bool ordered = false;       // with fixed and split_reduce: Choice::ordered_split
    bool tail = false;          // with ordered: only the last wave's tiles split (Choice::split_tiles)
    bool stream = false;        // with tail: the last wave's tiles streamed (Choice::stream_tail)
    bool gather = false;        // with tail: Choice::tail_gather
    bool one_wave = false;      // with ordered: as many splits as give every tile's units one CTA each, one unit a CTA
    bool tma_load_c = false;    // with fixed and tma_store: C by TMA, so that beta != 0 takes the TMA stores
    int tile_m = kTileM;        // kShortTileM: with fixed, the 64-row kernel (kShortTileEpilogues)
    int group_m = 0;            // Choice::group_m
    int tail_n = 0;             // with fixed: Choice::tail_n (kTailEpilogues)
    bool f32_tma = false;       // Choice::f32_tma (has_f32_tma_kernel)
};
// fixed with tile_n 256 (not ping-pong): the cooperative kernel compiled for kWideEpilogues.
constexpr std::array kNamedKernels{
    NamedKernel{.name = "128x256", .tile_n = kWideTileN, .pingpong = false, .fp8 = false},
    NamedKernel{.name = "128x128", .tile_n = kNarrowTileN, .pingpong = false, .fp8 = true},
    NamedKernel{.name = "pingpong", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false},
    NamedKernel{.name = "pingpong_cluster", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .cluster_m = 2},
    NamedKernel{.name = "fixed", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true},
    NamedKernel{.name = "fixed_staged", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .tma_store = false},
    NamedKernel{.name = "pingpong_splitk", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false,
                .split_reduce = true},
    // The same kernel in wave_splits' splits: every tile split so that each SM takes as many units as any other.
    NamedKernel{.name = "pingpong_wave_split", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false,
                .split_reduce = true, .wave = true},
    NamedKernel{.name = "fixed_tma_c", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .tma_load_c = true},
    NamedKernel{.name = "fixed_wide", .tile_n = kWideTileN, .pingpong = false, .fp8 = false, .fixed = true},
    NamedKernel{.name = "fixed_m64", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .tile_m = kShortTileM},
    NamedKernel{.name = "fixed_split", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .split_reduce = true},
    NamedKernel{.name = "fixed_split_ordered", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .split_reduce = true, .ordered = true},
    NamedKernel{.name = "fixed_split_tail", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .split_reduce = true, .ordered = true, .tail = true},
    // The tail split with its units gathered (a slab each, summed by the last of a tile) instead of added in
    // turn: where the units run after the whole tiles, nothing is left to hide a chain of turns under.
    NamedKernel{.name = "fixed_split_tail_gather", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false,
                .fixed = true, .split_reduce = true, .ordered = true, .tail = true, .gather = true},
    NamedKernel{.name = "fixed_split_stream", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .split_reduce = true, .ordered = true, .tail = true, .stream = true},
    NamedKernel{.name = "fixed_split_stream_gather", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false,
                .fixed = true, .split_reduce = true, .ordered = true, .tail = true, .stream = true, .gather = true},
    NamedKernel{.name = "fixed_split_wave", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .split_reduce = true, .ordered = true, .one_wave = true},
    NamedKernel{.name = "fixed_pair", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .cluster_m = 2,
                .fixed = true},
    NamedKernel{.name = "fixed_split_pair", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .cluster_m = 2,
                .fixed = true, .split_reduce = true, .ordered = true, .one_wave = true},
    NamedKernel{.name = "fixed_g16", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .group_m = 16},
    NamedKernel{.name = "fixed_g32", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .group_m = 32},
    NamedKernel{.name = "fixed_n192", .tile_n = kN192TileN, .pingpong = true, .fp8 = false, .fixed = true},
    // The 128 x 192 tiles in groups of 16 tile rows: the tiles in flight then span half as many columns of
    // B (fixed_n192's 8-row groups read 12 % more from DRAM than 128 x 128 tiles at 4096 x 12288 x 4096).
    NamedKernel{.name = "fixed_n192_g16", .tile_n = kN192TileN, .pingpong = true, .fp8 = false, .fixed = true,
                .group_m = 16},
    // 128 x 168 tiles: 11008 columns are 66 of them (65.5), so 4096 x 11008 makes 2,112 tiles, 16 full waves
    // on 132 SMs, as cuBLASLt's fastest kernels there cut it; a K-major B tile is 21 KB against 128 x 128's
    // 16 KB for 1.31 times the work.
    NamedKernel{.name = "fixed_n168", .tile_n = kN168TileN, .pingpong = true, .fp8 = false, .fixed = true},
    // 128 x 176 tiles: 12288 columns are 70 of them (69.8), so 4096 x 12288 (the 7B fwd_qkv) makes 2,240 tiles,
    // 16.97 waves on 132 SMs, the tile cuBLASLt's fastest kernel for that product runs (Nsight Compute names
    // it nvjet_sm90_tst_176x128_64x5_1x2_h_bz_TNN, in its column-major terms); 128 x 128 tiles make 23.3.
    NamedKernel{.name = "fixed_n176", .tile_n = kN176TileN, .pingpong = true, .fp8 = false, .fixed = true},
    // The narrow tail: the last tile columns re-cut 104 wide where that evens out the last wave (k40's
    // schedule in the library's kernel; src/gemm/narrow_tail.hpp plans it, the plan at its construction).
    NamedKernel{.name = "fixed_tail", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .fixed = true,
                .tail_n = kTailTileN},
    // The ping-pong kernel with an fp32 D written by TMA stores (rule 11's); "pingpong" keeps the staged stores.
    NamedKernel{.name = "pingpong_f32_tma", .tile_n = kNarrowTileN, .pingpong = true, .fp8 = false, .f32_tma = true},
};

}  // namespace

int pingpong_splitk_units(std::int64_t tiles, std::int64_t k_tiles, int sms) {
    // Rounds of 2 x sms consumers times the k-tiles of a unit (the longest), plus one k-tile per unit
    // for its reductions; the fewest splits among equals.
    const std::int64_t consumers = 2 * static_cast<std::int64_t>(std::max(sms, 1));
    const std::int64_t most = std::min<std::int64_t>(kMaxSplits, std::max<std::int64_t>(1, k_tiles / 4));
    std::int64_t best = 1, best_cost = std::numeric_limits<std::int64_t>::max();
    for (std::int64_t s = 1; s <= most; ++s) {
        const std::int64_t cost = ceil_div(tiles * s, consumers) * (ceil_div(k_tiles, s) + 1);
        if (cost < best_cost) best = s, best_cost = cost;
    }
    return static_cast<int>(best);
}

std::int64_t wave_split_cost(std::int64_t tiles, std::int64_t k_tiles, int sms, int splits) {
    // The units of the busiest SM (both consumers share its tensor pipe, so they count one after the other)
    // times the k-tiles of a unit, plus one for its start and its add into D.
    return ceil_div(tiles * splits, std::max(sms, 1)) * (ceil_div(k_tiles, splits) + 1);
}

int wave_splits(std::int64_t tiles, std::int64_t k_tiles, int sms) {
    const std::int64_t most = std::min<std::int64_t>(kMaxSplits, k_tiles / kMinSplitKTiles);
    const std::int64_t unsplit = wave_split_cost(tiles, k_tiles, sms, 1);
    std::int64_t best = 1, best_cost = unsplit;
    for (std::int64_t s = 2; s <= most; ++s) {
        const std::int64_t cost = wave_split_cost(tiles, k_tiles, sms, static_cast<int>(s));
        if (cost < best_cost) best = s, best_cost = cost;
    }
    return static_cast<double>(best_cost) <= kMinWaveSplitGain * static_cast<double>(unsplit) ? static_cast<int>(best) : 1;
}

std::optional<Choice> kernel_named(const Desc& desc, std::string_view kernel, int sms, double dram_bytes_per_s) {
    if (kernel == "auto") return choose(desc, sms, dram_bytes_per_s);
    const Desc d = with_packed_leading_dimensions(desc);
    for (const NamedKernel& k : kNamedKernels) {
        if (kernel != k.name) continue;
        if (is_fp8(d.a_type) && !k.fp8) return std::nullopt;
        const bool wide = k.fixed && k.tile_n == kWideTileN;
        // 168-, 176- and 192-column tiles: compiled for the same epilogues (kN192Epilogues), with 4 ring stages.
        const bool wide_n = k.fixed && (k.tile_n == kN192TileN || k.tile_n == kN176TileN || k.tile_n == kN168TileN);
        if (k.fixed && !(wide ? has_wide_kernel(d) : wide_n ? has_n192_kernel(d) : has_fixed_epilogue_kernel(d)))
            return std::nullopt;
        if (k.fixed && k.cluster_m > 1 && !k.split_reduce && !has_pair_kernel(d)) return std::nullopt;
        if (k.tma_load_c && !has_tma_c_kernel(d)) return std::nullopt;
        if (k.tile_m != kTileM && !has_short_tile_kernel(d)) return std::nullopt;
        if (k.tail_n > 0 && !has_tail_kernel(d)) return std::nullopt;
        if (k.split_reduce && !k.fixed && (d.d_type != Type::f32 || d.epilogue != Epilogue::none)) return std::nullopt;
        if (k.f32_tma && !has_f32_tma_kernel(d)) return std::nullopt;
        Choice c;
        c.tile_m = k.tile_m;
        c.tile_n = k.tile_n;
        c.pingpong = k.pingpong;
        c.cluster_m = k.cluster_m;
        c.fixed_epilogue = k.fixed;
        c.tma_store = k.tma_store;
        c.tma_load_c = k.tma_load_c;
        c.group_m = k.group_m;
        c.tail_n = k.tail_n;
        c.f32_tma = k.f32_tma;
        const std::int64_t tiles = ceil_div(d.m, k.tile_m) * ceil_div(d.n, k.tile_n);
        c.ctas = static_cast<int>(std::min<std::int64_t>(tiles, std::max(sms, 1)));
        if (k.tail) {
            const std::int64_t k_tiles = ceil_div(d.k, 64);
            if (k.stream ? set_stream_tail(c, tiles, k_tiles, std::max(sms, 1))
                         : set_tail_split(c, tiles, k_tiles, std::max(sms, 1), true, 0.0)) {
                c.why = "asked for: " + c.why;
                // As named: gathered ("_gather"), or added in turn (the dispatcher gathers a tail split whose
                // units run after the whole tiles).
                if (c.tail_gather != k.gather) {
                    c.tail_gather = k.gather;
                    c.why += k.gather ? "; the units gathered instead (a slab each, the last of a tile to arrive "
                                        "summing them in split order)"
                                      : "; the units added in turn instead (one slab, the arrival counter as a ticket)";
                }
            } else {
                c.why = std::string("asked for: the ") + (k.stream ? "streamed tail" : "tail split") + ", but " +
                        std::to_string(tiles) +
                        " tiles leave no last wave to split on " + std::to_string(std::max(sms, 1)) +
                        " SMs (or K is too short): the unsplit kernel compiled for this epilogue";
            }
            return c;
        }
        if (k.one_wave) {
            // Rule 2's split count (one wave of CTAs) on the ordered split fixed kernel, whatever K: one
            // unit a CTA on its first consumer, the fix-up in the kernel (rule 2a's kernel). The split pair
            // (cluster_m 2): the same units on 2 x 1 clusters sharing B; compiled for epilogue none only,
            // on an even number of tile rows, every tile split.
            c.splits = static_cast<int>(
                std::max<std::int64_t>(1, few_tile_splits(d, tiles, ceil_div(d.k, 64), std::max(sms, 1))));
            if (k.cluster_m > 1 && (d.epilogue != Epilogue::none || ceil_div(d.m, k.tile_m) % k.cluster_m != 0))
                return std::nullopt;
            c.ordered_split = c.splits > 1;
            c.ctas = static_cast<int>(std::min<std::int64_t>(tiles * c.splits, std::max(sms, 1)));
            c.why = "asked for: ping-pong split-K, " + std::to_string(tiles) + " tiles of 128 x 128 in " +
                    std::to_string(c.splits) + " splits, one unit a CTA" +
                    (k.cluster_m > 1 ? " (pairs of CTAs on the two tile rows of a unit, sharing B by TMA multicast)"
                                     : "") +
                    ", each storing its partial into a slab of its own, the last of a tile summing them in split "
                    "order and storing D through the kernel compiled for this epilogue";
            return c;
        }
        if (k.split_reduce) {
            c.splits = k.wave ? wave_splits(tiles, ceil_div(d.k, 64), std::max(sms, 1))
                              : pingpong_splitk_units(tiles, ceil_div(d.k, 64), sms);
            c.ordered_split = k.ordered && c.splits > 1;  // one unit a tile: the unsplit kernel
            c.ctas = static_cast<int>(std::min<std::int64_t>(tiles * c.splits, std::max(sms, 1)));
            c.why = "asked for: ping-pong split-K, " + std::to_string(tiles) + " tiles of 128 x 128 in " +
                    std::to_string(c.splits) + " splits, " +
                    (k.ordered ? "each unit storing its partial into a workspace slab of its own, the last of a "
                                 "tile summing them in split order and storing D through the kernel compiled for "
                                 "this epilogue"
                     : k.fixed ? "each unit added into the workspace, the last of a tile storing D through the "
                                 "kernel compiled for this epilogue"
                               : k.wave ? "each unit added into the fp32 D by reductions, the splits evening out "
                                          "the SMs' units (wave_splits)"
                                        : "each unit added into the fp32 D by reductions");
            return c;
        }
        c.why = std::string("asked for: ") + (k.pingpong ? "ping-pong " : "cooperative ") + std::to_string(k.tile_m) +
                " x " + std::to_string(k.tile_n) + " tiles" +
                (k.cluster_m > 1 ? ", pairs of CTAs sharing B by TMA multicast" : "") +
                (k.group_m > 0 ? ", groups of " + std::to_string(k.group_m) + " tile rows in the tile order" : "") +
                (k.tail_n > 0 ? ", the last tile columns re-cut " + std::to_string(k.tail_n) +
                                    " wide where that evens out the last wave" : "") +
                (k.fixed ? std::string(", the kernel compiled for this epilogue and a bf16 D") +
                               (wide ? ", 3 ring stages" : wide_n ? ", 4 ring stages" : "") +
                               (k.tma_store ? "" : ", staged stores") +
                               (k.tma_load_c ? ", C loaded by TMA where beta is not 0" : "")
                         : "") +
                ", K not split";
        return c;
    }
    return std::nullopt;
}

bool is_kernel_name(std::string_view kernel) {
    if (kernel == "auto") return true;
    for (const NamedKernel& k : kNamedKernels)
        if (kernel == k.name) return true;
    return false;
}

std::string kernel_names() {
    std::string out = "auto";
    for (const NamedKernel& k : kNamedKernels) out += std::string(", ") + k.name;
    return out;
}

// Why beta 0 and N a multiple of 8: with 289 columns the copies also wrote
// columns 289-295 of every row, the rest of the row's last 16 bytes, into the
// padding up to ldd (the verify suite at 1c7bd85); and with C read a pair at a
// time from global memory the residual products ran at 0.43x (fwd_attn_proj)
// and 0.71x (fwd_mlp_down) cuBLASLt against 0.75x and 0.94x staged. With
// c.tma_load_c (kernel_named "fixed_tma_c") C comes in by TMA instead, into
// the staging box D leaves from, and so does dgelu_bgrad's aux (beta 0); not
// yet the dispatcher's choice.
bool tma_stores(const Desc& d, const Choice& c, Epilogue kernel_epilogue, const Args& args) {
    const Epilogue e = kernel_epilogue;
    const auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    // fp32 D: boxes of 64 rows x 32 floats (f32_boxes_fit). Beta 1 with C the same matrix as D (adds_into_d:
    // a training step's dW +=): the boxes are added into D by the copy engine's reduce-add instead of
    // written over it.
    if (c.f32_tma)
        return has_f32_tma_kernel(d) && e == Epilogue::none && adds_into_d(d, args) && f32_boxes_fit(d, args);
    if (!c.fixed_epilogue || !c.tma_store || (c.splits != 1 && !c.pingpong) || d.d_type != Type::bf16) return false;
    if (args.beta != 0.0f && !(c.tma_load_c && aligned16(args.c) && d.ldc % 8 == 0)) return false;
    // dgelu_bgrad: aux comes in by TMA where C would (tma_load_c), so not beside C.
    const bool dgelu = e == Epilogue::dgelu_bgrad && c.tma_load_c && args.beta == 0.0f;
    if (e != Epilogue::none && e != Epilogue::bias && e != Epilogue::bias_gelu && e != Epilogue::bias_gelu_aux &&
        !dgelu)
        return false;
    if (!aligned16(args.d) || d.ldd % 8 != 0 || d.n % 8 != 0) return false;
    return (e != Epilogue::bias_gelu_aux && !dgelu) || (aligned16(args.aux) && d.ldaux % 8 == 0);
}

// D's rows must be 16-byte multiples, and so must N: as with bf16 above, a TMA store writes a row's last
// 16 bytes whole, and with 289 columns columns 289-291 of every row went into the padding up to ldd (the
// verify suite at 5de8963, on the H100).
bool f32_boxes_fit(const Desc& d, const Args& args) {
    return reinterpret_cast<std::uintptr_t>(args.d) % 16 == 0 && d.ldd % 4 == 0 && d.n % 4 == 0;
}

bool adds_into_d(const Desc& desc, const Args& args) {
    const Desc d = with_packed_leading_dimensions(desc);
    return args.beta == 0.0f || (args.beta == 1.0f && args.c == args.d && d.ldc == d.ldd);
}

std::string check_args(const Desc& desc, const Args& args) {
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueRow& e = row_of(d.epilogue);
    auto misaligned = [](const void* p, std::uintptr_t to) { return reinterpret_cast<std::uintptr_t>(p) % to != 0; };
    if (!args.a || !args.b || !args.d) return "A, B and D must not be null";
    if (misaligned(args.a, 16) || misaligned(args.b, 16)) return "A and B must start on 16-byte boundaries (TMA)";
    const std::uintptr_t out_align = static_cast<std::uintptr_t>(type_bytes(d.d_type));
    if (misaligned(args.d, out_align)) return std::string("D must be aligned to its ") + name(d.d_type) + " elements";
    if (!std::isfinite(args.alpha) || !std::isfinite(args.beta)) return "alpha and beta must be finite";
    if (args.beta != 0.0f) {
        if (!args.c) return "beta is not 0, so C must not be null";
        if (misaligned(args.c, out_align)) return std::string("C must be aligned to its ") + name(d.d_type) + " elements";
    }
    if (e.bias && !args.bias) return std::string("epilogue ") + e.name + " needs a bias";
    if (e.bias && misaligned(args.bias, out_align)) return "bias must be aligned to its elements";
    if ((e.aux_out || e.aux_in) && !args.aux) return std::string("epilogue ") + e.name + " needs aux";
    if ((e.aux_out || e.aux_in) && misaligned(args.aux, out_align)) return "aux must be aligned to its elements";
    if (e.bgrad && !args.bgrad) return std::string("epilogue ") + e.name + " needs bgrad";
    if (e.bgrad && misaligned(args.bgrad, 4)) return "bgrad must be aligned to 4 bytes";
    if (args.bgrad_accumulate && !e.bgrad)
        return std::string("bgrad_accumulate adds into bgrad, which epilogue ") + e.name + " does not write";

    const std::uint64_t a_bytes = span_bytes(stored_a(d), d.lda, d.a_type);
    const std::uint64_t b_bytes = span_bytes(stored_b(d), d.ldb, d.b_type);
    const std::uint64_t d_bytes = span_bytes({d.m, d.n}, d.ldd, d.d_type);
    if (overlap(args.d, d_bytes, args.a, a_bytes) || overlap(args.d, d_bytes, args.b, b_bytes))
        return "D overlaps A or B: the kernel would overwrite operands it is still reading";
    if (args.aux && e.aux_out) {
        const std::uint64_t aux_bytes = span_bytes({d.m, d.n}, d.ldaux, d.d_type);
        if (overlap(args.aux, aux_bytes, args.d, d_bytes) || overlap(args.aux, aux_bytes, args.a, a_bytes) ||
            overlap(args.aux, aux_bytes, args.b, b_bytes))
            return "aux overlaps D, A or B";
    }
    // What the epilogue reads while D is being written must not lie inside D (nor, for bias, inside aux,
    // which the same epilogue writes).
    const std::uint64_t bias_bytes = static_cast<std::uint64_t>(d.n) * type_bytes(d.d_type);
    if (e.bias && overlap(args.bias, bias_bytes, args.d, d_bytes)) return "bias overlaps D";
    if (e.bias && e.aux_out && overlap(args.bias, bias_bytes, args.aux, span_bytes({d.m, d.n}, d.ldaux, d.d_type)))
        return "bias overlaps aux";
    // bgrad is zeroed before the product (unless accumulated into) and summed into while tiles still read
    // A, B, C and aux.
    if (e.bgrad) {
        const std::uint64_t bgrad_bytes = static_cast<std::uint64_t>(d.n) * 4;
        const bool reads_c = args.beta != 0.0f && args.c;
        if (overlap(args.bgrad, bgrad_bytes, args.d, d_bytes) || overlap(args.bgrad, bgrad_bytes, args.a, a_bytes) ||
            overlap(args.bgrad, bgrad_bytes, args.b, b_bytes) ||
            (args.aux && overlap(args.bgrad, bgrad_bytes, args.aux, span_bytes({d.m, d.n}, d.ldaux, d.d_type))) ||
            (reads_c && overlap(args.bgrad, bgrad_bytes, args.c, span_bytes({d.m, d.n}, d.ldc, d.d_type))))
            return "bgrad overlaps A, B, C, D or aux";
    }
    if (e.aux_in && overlap(args.aux, span_bytes({d.m, d.n}, d.ldaux, d.d_type), args.d, d_bytes) &&
        !(args.aux == args.d && d.ldaux == d.ldd))
        return "aux partly overlaps D: it may be D itself (same pointer and ld), or apart from it";
    if (e.aux_out && args.beta != 0.0f && args.c &&
        overlap(args.aux, span_bytes({d.m, d.n}, d.ldaux, d.d_type), args.c, span_bytes({d.m, d.n}, d.ldc, d.d_type)))
        return "aux overlaps C";
    if (args.beta != 0.0f && args.c != args.d) {
        const std::uint64_t c_bytes = span_bytes({d.m, d.n}, d.ldc, d.d_type);
        if (overlap(args.c, c_bytes, args.d, d_bytes))
            return "C partly overlaps D: C may be D itself (same pointer and ld), or apart from it";
    }
    if (args.beta != 0.0f && args.c == args.d && d.ldc != d.ldd) return "C is D but ldc differs from ldd";
    return {};
}

std::string check_decomposed_args(const Desc& desc, const Args& args) {
    if (std::string why = check_args(desc, args); !why.empty()) return why;
    const Desc d = with_packed_leading_dimensions(desc);
    if (row_of(d.epilogue).aux_in &&
        overlap(args.aux, span_bytes({d.m, d.n}, d.ldaux, d.d_type), args.d, span_bytes({d.m, d.n}, d.ldd, d.d_type)))
        return "aux overlaps D: the decomposed path writes D before its epilogue reads aux (run() takes aux == D)";
    return {};
}

}  // namespace rigel::gemm
