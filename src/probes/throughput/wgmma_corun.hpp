// The host half of the probe "wgmma_corun" (src/cuda/probes/throughput_wgmma_corun.cu): which
// work of other warps on the same SM slows a running wgmma chain, and by how much.
//
// The question comes from the library's ping-pong kernel: one consumer's epilogue runs while the
// other consumer's main loop keeps the tensor cores busy, and the timeline probe put each tile of
// the bias + GELU kernel about 850 cycles behind the kernel without epilogue math, with the
// epilogue itself far shorter than the main loop beside it. So the probe runs one warpgroup's
// wgmma chain (m64n128k16 bf16, two commit groups in flight, as a main loop keeps them) and beside
// it, on the same four SM sub-partitions, a second warpgroup that issues one kind of instruction
// for as long as the chain runs. The tensor cycles a co-runner instruction costs are the chain's
// extra cycles over the co-runner's instructions issued meanwhile.
//
// Host-tested by tests/host/test_probes_throughput.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace rigel::probes::corun {

// What the second warpgroup issues. ffma and fadd chains count (each step adds 1, so their sums are
// checked exactly); the others' results only keep the work from being dropped. (An integer add chain
// is not among them: ptxas folds two adds of one register into one IMAD, so its steps are not the
// instructions issued.)
enum class Kind : int {
    none, ffma, fadd, ex2, f2fp, gelu, sleep, stmatrix, ldg, ffma_16k, ffma_32k, ffma_48k, ffma_64k, stg, stg128
};

struct KindInfo {
    Kind kind;
    std::string_view name;
    std::string_view what;  // the co-runner's step, in words
    bool counts;            // every step adds exactly 1 to its chain
    int unroll = 8;         // steps of each chain a loop iteration (its code: 8 chains x unroll steps)
    bool ffma_step = false; // the step is ffma's (one FFMA)
};

inline constexpr int kChains = 8;
inline constexpr std::array<KindInfo, 15> kKinds{{
    {Kind::none, "none", "nothing (the second warpgroup exits at once)", false},
    {Kind::ffma, "ffma", "fma.rn.f32 r, r, a, b (FFMA, a and b in registers marked for the operand reuse cache)",
     true, 8, true},
    {Kind::fadd, "fadd", "add.f32 r, r, a (FADD, a in a uniform register)", true},
    {Kind::ex2, "ex2", "ex2.approx.ftz.f32 r, -r (MUFU.EX2)", false},
    {Kind::f2fp, "f2fp", "cvt.rn.bf16x2.f32 (F2FP, the epilogue's packing of two fp32 into bf16 x 2)", false},
    {Kind::gelu, "gelu",
     "x = alpha r + bias, r = x / (1 + exp2(x (c1 + c3 x^2))): the GELU epilogue's math for one element "
     "(cuda/gelu.cuh; 8 instructions: 3 FMUL, 2 FFMA, 1 FADD, MUFU.EX2 and MUFU.RCP)",
     false},
    {Kind::sleep, "sleep", "nanosleep 256 and a flag read (a warp that waits)", false},
    {Kind::stmatrix, "stmatrix",
     "stmatrix.x4 (512 bytes a warp into shared memory, conflict-free, as the epilogue stages D) of registers "
     "that an FADD chain moves",
     false},
    {Kind::ldg, "ldg",
     "ld.global.nc.f32 from 12 KB of ones that stay in L1 (128 bytes a warp, as the bias epilogues load their "
     "words), added to the chain by an FADD",
     true},
    {Kind::ffma_16k, "ffma_16k", "ffma's step in a loop of 1,024 FFMA (16 KB of straight-line code)", true, 128, true},
    {Kind::ffma_32k, "ffma_32k", "ffma's step in a loop of 2,048 FFMA (32 KB of straight-line code)", true, 256, true},
    {Kind::ffma_48k, "ffma_48k", "ffma's step in a loop of 3,072 FFMA (48 KB of straight-line code)", true, 384, true},
    {Kind::ffma_64k, "ffma_64k",
     "ffma's step in a loop of 4,096 FFMA (64 KB of straight-line code, as a long unrolled epilogue streams "
     "through the instruction caches)",
     true, 512, true},
    {Kind::stg, "stg",
     "st.global.v2.f32 beside an FADD chain, in the rows the ladder's ping-pong rungs store their fp32 C from "
     "the registers (lane l: row l / 4, columns 2 (l % 4); 8 rows of 32 bytes a warp, rows 4 KB apart), into a "
     "32 KB window of its own that stays in L2",
     true},
    {Kind::stg128, "stg128",
     "st.global.v4.f32 beside an FADD chain, 8 rows of 64 bytes a warp in the same window (half as many store "
     "instructions as stg for the same bytes and rows)",
     true},
}};
// The stg co-runners' windows: 8 rows of kStgRowFloats floats (4 KB) a warp, 32 KB; each store instruction
// covers the 8 rows, 8 columns (stg) or 16 (stg128) a row, the next instruction the next columns, and
// after kStgSlots of them the row's start again (stg fills the first half of each row).
inline constexpr int kStgRowFloats = 1024;
inline constexpr int kStgSlots = 64;
inline constexpr int kStgWarpFloats = 8 * kStgRowFloats;
static_assert(kStgSlots * 16 == kStgRowFloats, "stg128's slots fill a row exactly");

// Each co-runner thread keeps kChains chains and steps each unroll(kind) times an iteration of its loop.
inline constexpr int unroll(Kind k) { return kKinds[static_cast<int>(k)].unroll; }
inline constexpr bool is_ffma(Kind k) { return kKinds[static_cast<int>(k)].ffma_step; }
inline constexpr int steps_per_iteration(Kind k) { return kChains * unroll(k); }

// The wgmma chain: kGroupWgmmas m64n128k16 (B, then B negated) a commit group, kIterations groups,
// then one more B; at the tensor cores' rate one instruction is
// 64 x 128 x 16 / 2048 = 64 cycles (2048 dense bf16 FMA a clock per SM: twice A100's 1024).
inline constexpr int kGroupWgmmas = 8;
inline constexpr long long kIterations = 2000;
inline constexpr double kIdealCyclesPerWgmma = 64.0 * 128.0 * 16.0 / 2048.0;
inline constexpr long long wgmmas(long long iterations) { return iterations * kGroupWgmmas + 1; }

// One co-runner thread's chain sum for counting kinds: chain j starts at j and gains unroll(kind) a
// loop iteration.
inline constexpr double counted_sum(Kind k, long long iterations) {
    return kChains * (kChains - 1) / 2.0 + static_cast<double>(steps_per_iteration(k)) * static_cast<double>(iterations);
}

// The tensor cycles one co-runner step costs: the chain's cycles beside it less its cycles alone,
// over the steps one co-runner warp (one per sub-partition) issued meanwhile.
inline double cycles_lost_per_step(double cycles_alone, double cycles_beside, double steps_per_warp) {
    return steps_per_warp > 0 ? (cycles_beside - cycles_alone) / steps_per_warp : 0.0;
}

}  // namespace rigel::probes::corun
