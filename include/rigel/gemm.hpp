// rigel's GEMM as a library: the one header a program includes.
//
//     D = epilogue(alpha * op(A) op(B) + beta * C)
//
// on the H200 machine's tensor cores (sm_90a), with rigel's own Hopper kernels
// (the k32 pipeline of the ladder: TMA producer, wgmma consumers, persistent
// CTAs), any storage order of A and B, f32/bf16/f16 output and the epilogues a
// transformer needs, fused into the kernel's store.
//
//     #include <rigel/gemm.hpp>
//     rigel::gemm::Desc desc{.m = 16384, .n = 3072, .k = 768, .b_op = rigel::gemm::Op::t,
//                            .epilogue = rigel::gemm::Epilogue::bias_gelu};   // a GPT-2 MLP up-projection
//     rigel::gemm::Plan plan(desc);            // checks the shape, picks the kernel; throws on refusal
//     plan.run({.a = x, .b = w, .d = h, .bias = b}, stream);
//
// Storage. Every matrix is stored row-major with a row stride ("leading
// dimension") in elements; an operand's op says how it is used:
//   A  op n: A is stored M x K (lda >= K);   op t: A is stored K x M (lda >= M), and used transposed
//   B  op n: B is stored K x N (ldb >= N);   op t: B is stored N x K (ldb >= K), and used transposed
//   D, C and aux are M x N (ld >= N); bias and bgrad have N elements (one per column of D).
// So torch.nn.Linear's forward, Y = X W^T with W stored out x in, is (a_op n, b_op t); its input
// gradient dX = dY W is (n, n); its weight gradient dW = dY^T X is (t, n). The layout is named
// by the two letters, a_op then b_op: "NT" is the forward.
//
// Types. A and B: bf16, f16, e4m3 or e5m2, both the same (mixed fp8 pairs have no kernel yet). fp8 wgmma reads only
// K-major operands, so fp8 takes only the "NT" layout; any other is refused (no hidden transpose).
// fp8 partial sums are promoted into fp32 every 128 of K (DeepSeek-V3's remedy, scales 1).
// D, C and aux: f32, bf16 or f16 (C has D's type); bf16 and f16 outputs round to nearest even.
// bias: D's type when D is bf16 or f16, f32 when D is f32. bgrad: always f32.
//
// Epilogues, with pre = alpha * op(A) op(B) + beta * C (+ bias[col] where named):
//   none            D = pre
//   bias            D = pre + bias
//   bias_relu       D = max(pre + bias, 0)
//   bias_gelu       D = gelu_tanh(pre + bias)      GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   bias_gelu_erf   D = gelu_erf(pre + bias)       the exact form: 0.5 x (1 + erf(x / sqrt(2)))
//   bias_gelu_aux   D = gelu_tanh(pre + bias), aux = pre + bias (kept for the backward pass)
//   dgelu_bgrad     D = pre * gelu_tanh'(aux), bgrad[col] = sum over rows of D (as computed in fp32,
//                   before D's rounding); the backward of bias_gelu_aux
// Residual add: beta = 1 with C the residual (D may be C itself: in-place is allowed for C, never
// for A or B). alpha and beta are per call; C is read only when beta != 0.
// bgrad is accumulated with fp32 atomic adds (its order, and so its last bits, may vary from run to
// run); Plan::run zeroes it first, on the stream, unless Args::bgrad_accumulate asks it to add the
// column sums into what bgrad holds (a training step's bias gradient summed over micro-batches).
//
// Refusals. Plan's constructor refuses, with one sentence in std::invalid_argument, what the
// kernels cannot take (rigel::gemm::check says why without throwing); Plan::run refuses null,
// misaligned or aliasing pointers before anything is launched. Nothing is launched for a refused call.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct CUstream_st;

namespace rigel::gemm {

using Stream = CUstream_st*;  // a cudaStream_t; nullptr is the legacy default stream

enum class Type : std::uint8_t { f32, bf16, f16, e4m3, e5m2 };
enum class Op : std::uint8_t { n, t };
enum class Epilogue : std::uint8_t {
    none,
    bias,
    bias_relu,
    bias_gelu,
    bias_gelu_erf,
    bias_gelu_aux,
    dgelu_bgrad,
};

// The shape, types, layouts and epilogue of one GEMM: everything a plan is built for.
// A leading dimension of 0 means "packed" (the stored matrix's row length).
struct Desc {
    std::int64_t m = 0, n = 0, k = 0;
    Type a_type = Type::bf16, b_type = Type::bf16;
    Op a_op = Op::n, b_op = Op::n;
    Type d_type = Type::bf16;  // also C's and aux's type
    Epilogue epilogue = Epilogue::none;
    std::int64_t lda = 0, ldb = 0, ldd = 0, ldc = 0, ldaux = 0;
    // true lets the dispatcher pick a kernel that adds partial tiles by atomic reductions, into D
    // (the ping-pong split-K, for an f32 D without epilogue) or into a workspace whose sum the last
    // unit of a tile stores through the epilogue (a bf16 D with a fixed epilogue), whose order of
    // fp32 additions varies from run to run: results equal to rounding, not bit for bit. false (the default): every run
    // of a plan on the same inputs gives the same D (and aux), as cuBLAS does unless atomics are allowed. One
    // exception whatever this says: dgelu_bgrad's bgrad is always summed by fp32 atomic adds (one a column
    // and warp), so its last bits vary from run to run; D's do not.
    bool allow_atomics = false;
};

// The pointers and scalars of one call (device memory).
struct Args {
    const void* a = nullptr;
    const void* b = nullptr;
    void* d = nullptr;
    const void* c = nullptr;     // read when beta != 0
    const void* bias = nullptr;  // every epilogue named bias_*
    void* aux = nullptr;         // bias_gelu_aux writes it; dgelu_bgrad reads it
    float* bgrad = nullptr;      // dgelu_bgrad writes it
    float alpha = 1.0f, beta = 0.0f;
    // dgelu_bgrad only: add the column sums into bgrad as it stands (not zeroed first), as a step that
    // sums its bias gradient over micro-batches needs; false: bgrad holds this call's sums alone.
    bool bgrad_accumulate = false;
};

// Whether `d` has bf16 operands, a bf16 D and one of `epilogues`: the products a kernel compiled per
// epilogue (the lists below) takes.
template <std::size_t N>
constexpr bool bf16_with_epilogue_in(const Desc& d, const std::array<Epilogue, N>& epilogues) {
    if (d.a_type != Type::bf16 || d.b_type != Type::bf16 || d.d_type != Type::bf16) return false;
    for (Epilogue e : epilogues)
        if (e == d.epilogue) return true;
    return false;
}
// The epilogues the library also compiles into a ping-pong kernel of their own, for bf16 operands and
// a bf16 D: those of a transformer's training step, and bias + GELU without aux, as an inference
// forward runs it (Choice::fixed_epilogue).
inline constexpr std::array<Epilogue, 5> kFixedEpilogues{Epilogue::none, Epilogue::bias, Epilogue::bias_gelu,
                                                         Epilogue::bias_gelu_aux, Epilogue::dgelu_bgrad};
constexpr bool has_fixed_epilogue_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kFixedEpilogues); }
// The epilogues also compiled into the cooperative 128 x 256 kernel with TMA stores ("fixed_wide"), for
// bf16 operands and a bf16 D: a consumer's 64 x 256 share leaves through a 32 KB staging box, so the
// ring keeps 3 stages (aux, a second box, would leave 2).
inline constexpr std::array<Epilogue, 3> kWideEpilogues{Epilogue::none, Epilogue::bias, Epilogue::bias_gelu};
constexpr bool has_wide_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kWideEpilogues); }
// Those of the fixed epilogues also compiled with C (and dgelu_bgrad's aux) loaded by TMA
// (Choice::tma_load_c): a residual's product with or without its bias, and the MLP's dGELU product.
inline constexpr std::array<Epilogue, 3> kTmaCEpilogues{Epilogue::none, Epilogue::bias, Epilogue::dgelu_bgrad};
constexpr bool has_tma_c_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kTmaCEpilogues); }
// Those of the fixed epilogues also compiled into the ping-pong kernel with 64-row tiles (Choice::tile_m
// 64, "fixed_m64"): a consumer's tile one m64n128 accumulator, for products of so few 128 x 128 tiles
// that they would leave most SMs idle (512^3: 16 tiles on 132 SMs); bias and bias + GELU too, which a
// small fused product would otherwise run on 128-row tiles (aux needs a second staging box: not here).
inline constexpr std::array<Epilogue, 3> kShortTileEpilogues{Epilogue::none, Epilogue::bias, Epilogue::bias_gelu};
constexpr bool has_short_tile_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kShortTileEpilogues); }
// Those of the fixed epilogues also compiled into the ping-pong pair ("fixed_pair": 2 x 1 clusters, each
// CTA loading its A and half of B multicast to both, K not split): the plain product and bias + GELU, the
// forms cuBLASLt's picks for 4096^3 run on 128 x 128 tiles in pairs.
inline constexpr std::array<Epilogue, 2> kPairEpilogues{Epilogue::none, Epilogue::bias_gelu};
constexpr bool has_pair_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kPairEpilogues); }
// Those of the fixed epilogues also compiled into the ping-pong kernel with 128 x 192 tiles ("fixed_n192":
// a consumer's tile two m64n192 accumulators, 192 registers a thread; single CTAs, K not split): the
// plain product, for the wide products whose fastest cuBLASLt kernels take N-tiles of 144-192, asking
// less of L2 per flop than 128 x 128 tiles; the dispatcher's choice for an LM head's shape (rule 8,
// docs/gemm.md). The ping-pong kernels with 128 x 168 and 128 x 176 tiles ("fixed_n168", "fixed_n176", by
// name only) are compiled for the same epilogues.
inline constexpr std::array<Epilogue, 1> kN192Epilogues{Epilogue::none};
constexpr bool has_n192_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kN192Epilogues); }
// Those of the fixed epilogues also compiled into the ping-pong kernel with a narrow tail ("fixed_tail",
// Choice::tail_n): the plain product and bias + GELU, whose 4096^3 forms leave the last wave of
// 128 x 128 tiles three quarters full.
inline constexpr std::array<Epilogue, 2> kTailEpilogues{Epilogue::none, Epilogue::bias_gelu};
constexpr bool has_tail_kernel(const Desc& d) { return bf16_with_epilogue_in(d, kTailEpilogues); }

// 16-bit operands, an fp32 D and no epilogue: the products whose ping-pong kernel writes D through shared
// memory and TMA stores (Choice::f32_tma, "pingpong_f32_tma"; the ladder's k43 store path).
constexpr bool has_f32_tma_kernel(const Desc& d) {
    return (d.a_type == Type::bf16 || d.a_type == Type::f16) && d.b_type == d.a_type && d.d_type == Type::f32 &&
           d.epilogue == Epilogue::none;
}

// Whether the dispatcher takes that kernel for those products (its rule 11): on once the kernel's verify
// cases (`rigel gemm verify --cases pingpong_f32_tma`) passed on a GPU; false puts it back to by name only.
inline constexpr bool kDispatchF32Tma = true;
// Whether the dispatcher takes "pingpong_wave_split" (its rule 5a) where atomics are allowed: on since the
// H200 machine ran GPT-2's bwd_qkv_dw faster on it than unsplit; false puts it back to by name only.
inline constexpr bool kDispatchWaveSplit = true;
// ... on GPUs whose DRAM peak reaches this: the H200 machine (4.8 TB/s) ran it faster than unsplit in one
// call, an H100 (3.35 TB/s) slower in two.
inline constexpr double kWaveSplitMinDramBytesPerSecond = 4.0e12;
// The dispatcher's rule 12 (docs/gemm.md): a ping-pong choice walks its tiles row by row (Choice::group_m 1)
// where D has at most this many tile columns, more tile rows than columns, and K of at least kRowOrderMinK
// (measured with 6 columns and K from 16384 to 50304) ...
inline constexpr int kRowOrderMaxTileCols = 8;
inline constexpr std::int64_t kRowOrderMinK = 8192;
// ... on GPUs whose DRAM peak is below this: measured on an H100 (3.35 TB/s), not yet on the H200 machine.
inline constexpr double kRowOrderMaxDramBytesPerSecond = 4.0e12;
// The dispatcher's rule 13 (docs/gemm.md): on those GPUs too, a ping-pong choice of a product with at least
// this many tile rows and tile columns and K of at least kRowOrderMinK walks its tiles in groups of
// kLargeProductGroupM tile rows instead of 8 (measured at 8192^3 and 16384^3 on an H100).
inline constexpr int kLargeProductMinTiles = 64;
inline constexpr int kLargeProductGroupM = 4;
// The dispatcher's rule 14 (docs/gemm.md): on those GPUs too, a product with a bf16 D and one of
// kWideEpilogues, any layout, and M, N and K each at least this runs unsplit on the cooperative 128 x 256
// kernel ("fixed_wide") instead of the ping-pong one: on an H100 it kept cuBLASLt's rate from 9216^3 up, where
// the ping-pong tiles fell under the power cap, and tied them at 8192^3 (the figures: rule 14 in dispatch.cpp).
inline constexpr std::int64_t kWideAtCapMinExtent = 9216;

// How a plan computes: the kernel the dispatcher chose for the shape.
struct Choice {
    int tile_m = 128, tile_n = 256;  // output tile of one CTA (of one consumer, ping-pong); tile_m 64: kShortTileEpilogues
    int splits = 1;                  // > 1: split-K, partial tiles in fp32, then a reduction that applies the epilogue
    // The two consumer warpgroups of a CTA take turns on tiles of their own (128 x 128, f16/bf16
    // only), so that one's epilogue runs under the other's main loop; false: they share each tile.
    // With splits > 1: the ping-pong split-K, whose units add into D (kernel_named "pingpong_splitk").
    bool pingpong = false;
    // CTAs per thread-block cluster, stacked along M (ping-pong only): 2 shares each B tile between
    // a pair through TMA multicast, halving B's traffic from L2.
    int cluster_m = 1;
    // The ping-pong kernel compiled for this product's epilogue and a bf16 D (bf16 operands; none,
    // bias, bias_gelu, bias_gelu_aux, dgelu_bgrad): no switch over epilogues and output types in its code,
    // 2,200 to 5,000 SASS instructions against the 43,500 of the kernel that takes every epilogue
    // and output type (false). With tile_n 256 and pingpong false: the cooperative 128 x 256 kernel
    // compiled so (kWideEpilogues, "fixed_wide").
    bool fixed_epilogue = false;
    // With fixed_epilogue and the epilogue none, bias, bias_gelu or bias_gelu_aux: the tile leaves through shared
    // memory in bf16 and TMA stores (a copy per 64 x 64 box) on every call with beta 0, N a multiple of
    // 8 and D (and aux) 16-byte aligned with rows of a multiple of 8 elements; other calls, or false:
    // the staged 16-byte stores of the other kernels.
    bool tma_store = true;
    // With tma_store: calls with beta != 0 take the TMA stores too, C's boxes loaded by TMA into the
    // staging box that D's leave from (C 16-byte aligned, ldc a multiple of 8), and so do dgelu_bgrad's
    // with beta 0, its aux loaded the same way; false: those calls take the staged stores.
    // A kernel of its own (has_tma_c_kernel), which the plan runs only for those calls: beta-0 calls of
    // other epilogues keep the kernel without C's path. The dispatcher's choice for epilogues none and
    // bias (rule 4's residual products); kernel_named "fixed_tma_c" also takes it for dgelu_bgrad.
    bool tma_load_c = false;
    // The ping-pong kernel (128 x 128, K not split, no fixed epilogue) for has_f32_tma_kernel's products,
    // its fp32 D staged in shared memory (64 x 32 boxes, 128B swizzle) and written by TMA stores on calls
    // with beta 0, D 16-byte aligned, ldd and N multiples of 4 (tma_stores), or added into D by the copy
    // engine on the same calls with beta 1 and C the same matrix as D (in place). Other calls: the dispatcher's
    // plan runs them on the kernel without this flag; a plan built with it by name, on the staged stores of
    // FixedEpilogue's float path.
    bool f32_tma = false;
    // With splits > 1, pingpong and fixed_epilogue: the units' partials of a tile are summed in split
    // order, so runs repeat bit for bit (kernel_named "fixed_split_ordered"): where every tile is split,
    // each unit stores its partial into a workspace slab of its own and the last to arrive sums them;
    // under a tail split (split_tiles > 0) they add into one slab in turn, the arrival counter as a
    // ticket. false: the units add into the slab by atomic reductions, in no fixed order.
    bool ordered_split = false;
    // With splits > 1, pingpong and fixed_epilogue: > 0 splits only the last split_tiles tiles (in the
    // kernel's tile order), whose units run first, and runs the others whole (the tail split: a last
    // wave of few tiles spread over every SM, kernel_named "fixed_split_tail"); 0: every tile is split.
    int split_tiles = 0;
    // With split_tiles and ordered_split: the streamed tail (stream-K's idea on the last wave). The split
    // tiles' k-tiles, end to end, are cut into one run of equal length per CTA (ctas of them, each
    // covering the end of one tile and the start of the next), the runs' pieces adding into a tile's slab
    // in turn; splits is then 2, the pieces per CTA. For a last wave more than half full, which a split
    // of whole tiles cannot spread (4096^3: 1,024 tiles, the last 100 on 132 SMs): kernel_named
    // "fixed_split_stream" only; the dispatcher does not choose it (slower on the H200, dispatch.cpp).
    bool stream_tail = false;
    // With split_tiles and ordered_split: the tail's units (a tail split's, or a streamed tail's pieces)
    // store into a slab each, the last of a tile to arrive summing them in split order (as where every
    // tile is split), instead of adding into one slab in turn; no unit waits for another. kernel_named
    // "fixed_split_tail_gather" and "fixed_split_stream_gather".
    bool tail_gather = false;
    // Ping-pong kernels: tile rows of a group in the persistent tile order (the tiles in flight share
    // those rows of A and a few columns of B in L2); 0: the kernel's own, 8. kernel_named "fixed_g16"
    // and "fixed_g32" take 16 and 32.
    int group_m = 0;
    // With pingpong, fixed_epilogue and 128 x 128 tiles, K not split: > 0 re-cuts the last tile columns
    // into tiles tail_n wide where that evens out the last wave of tiles on the SMs by 1 % or more (the
    // narrow tail, src/gemm/narrow_tail.hpp: 4096^3's last 4 columns of 128 as 5 of 104), else runs
    // the uniform tiles. kernel_named "fixed_tail" (104); the dispatcher does not choose it.
    int tail_n = 0;
    int ctas = 0;                    // CTAs launched by the GEMM kernel (a cluster kernel: at most this many)
    std::string why;                 // one sentence: why this kernel for this shape
};

// Descriptive names: "bf16", "NT", "bias_gelu". parse_* return false on an unknown name.
const char* name(Type t);
const char* name(Epilogue e);
std::string layout_name(Op a, Op b);
bool parse_type(const std::string& s, Type& out);
bool parse_epilogue(const std::string& s, Epilogue& out);
bool parse_layout(const std::string& s, Op& a, Op& b);
int type_bytes(Type t);
// What an epilogue reads and writes besides A, B, C and D.
struct EpilogueTraits {
    bool bias = false;     // reads bias
    bool aux_out = false;  // writes aux (the pre-activation)
    bool aux_in = false;   // reads aux
    bool bgrad = false;    // writes bgrad
};
EpilogueTraits traits(Epilogue e);

// The desc with every leading dimension of 0 replaced by the packed one.
Desc with_packed_leading_dimensions(Desc d);
// Empty when a plan can be built for `d`, else one sentence saying why not.
std::string check(const Desc& d);
// The DRAM peak the dispatcher assumes where the caller names none: the H200 machine's (HBM3e).
inline constexpr double kH200DramBytesPerSecond = 4.8e12;
// The dispatcher: which kernel computes `d` on a GPU with `sms` SMs and a DRAM peak of
// `dram_bytes_per_s` (see dispatch.cpp for the rules; rule 5a reads the bandwidth). Pure host code; `d`
// must pass check().
Choice choose(const Desc& d, int sms, double dram_bytes_per_s = kH200DramBytesPerSecond);
// The ping-pong kernel's 168-, 176- and 192-column tiles ("fixed_n168", "fixed_n176", "fixed_n192"; rules 9
// and 8 take the 176 and 192 ones): compiled for kN192Epilogues alone, with no path for C by TMA.
constexpr bool wide_n_tiles(const Choice& c) {
    return c.pingpong && (c.tile_n == 192 || c.tile_n == 176 || c.tile_n == 168);
}
// The cooperative 128 x 256 kernel compiled for a fixed epilogue ("fixed_wide", rule 14): no path for C by
// TMA either.
constexpr bool wide_cooperative(const Choice& c) { return c.fixed_epilogue && !c.pingpong && c.tile_n == 256; }
// The plan's residual choice: where `c`'s kernel has no path for C by TMA (wide_n_tiles, a narrow tail,
// wide_cooperative), the choice that runs a plan's calls with beta != 0: rule 4's 128 x 128 ping-pong kernel,
// loading C by TMA where has_tma_c_kernel(d), `c`'s tile order kept where it has one, else the one rules 12 and
// 13 give those tiles on a GPU of `dram_bytes_per_s`. nullopt where `c`'s kernel takes every call.
std::optional<Choice> residual_choice(const Desc& d, const Choice& c, double dram_bytes_per_s = kH200DramBytesPerSecond);
// A kernel asked for by name instead of the dispatcher's: "128x256" and "128x128" (cooperative),
// "pingpong" (128 x 128, ping-pong, any epilogue and output type), "pingpong_cluster" (the same in
// 2 x 1 clusters sharing B by TMA multicast), "fixed" (the ping-pong kernel compiled for d's epilogue
// and a bf16 D, as the dispatcher picks it), "fixed_staged" (the same with its staged stores
// instead of TMA stores), "fixed_tma_c" (the same with C loaded by TMA, so that calls with
// beta != 0 take the TMA stores too) and "fixed_wide" (the cooperative 128 x 256 kernel compiled
// for d's epilogue and a bf16 D, TMA stores: kWideEpilogues) and "fixed_m64" (the fixed kernel with 64 x 128
// tiles: kShortTileEpilogues), none of them split; "fixed_split" (the
// fixed kernel split as pingpong_splitk, its units added into the plan's workspace and the last unit
// of a tile storing D: the dispatcher's rule 6); "fixed_split_ordered" (the same, the partials summed in
// split order: bit-reproducible; Choice::ordered_split); "fixed_split_wave" (the same with rule 2's
// split count, one unit a CTA); and "pingpong_splitk" (an fp32 D without epilogue:
// the ping-pong kernel over units of (split, tile) in pingpong_splitk_units splits, each unit added
// into D by reductions in L2, whose order is not fixed; beta 0, or 1 with C the same matrix as D);
// "pingpong_wave_split" (the same kernel in wave_splits' splits).
// "auto" is choose(). nullopt when the name is unknown or d has no such kernel (fp8: 128x128 only;
// fixed, fixed_split: has_fixed_epilogue_kernel(d); fixed_wide: has_wide_kernel(d); fixed_m64: has_short_tile_kernel(d); fixed_n192, fixed_n168, fixed_n176: has_n192_kernel(d); pingpong_splitk, pingpong_wave_split and pingpong_f32_tma: 16-bit operands, an f32 D, no epilogue).
std::optional<Choice> kernel_named(const Desc& d, std::string_view kernel, int sms,
                                   double dram_bytes_per_s = kH200DramBytesPerSecond);
// The splits of pingpong_splitk for `tiles` output tiles of 128 x 128 and `k_tiles` k-tiles of 64:
// the fewest that minimize (rounds of 2 x sms consumers) x (k-tiles of a unit + 1), at most 16 and
// at least 4 k-tiles a unit.
int pingpong_splitk_units(std::int64_t tiles, std::int64_t k_tiles, int sms);
// The model of "pingpong_wave_split" (dispatch.cpp, 5a): the busiest SM's share of `splits` units of each of `tiles` tiles, counted one after the
// other (an SM's two consumers share its tensor pipe), times (k-tiles of a unit + 1).
std::int64_t wave_split_cost(std::int64_t tiles, std::int64_t k_tiles, int sms, int splits);
// Its splits: those of 2 to 16 (at least 16 k-tiles a unit) with the lowest wave_split_cost, the fewest
// among equals, where that cost is at most 0.92 of the unsplit one; else 1. GPT-2's bwd_qkv_dw
// (108 tiles, 256 k-tiles, 132 SMs): 6 (5 units of 43 k-tiles on the busiest SM, 220 against 257). The
// dispatcher takes them on GPUs whose DRAM reaches kWaveSplitMinDramBytesPerSecond (docs/gemm.md, rule 5a).
int wave_splits(std::int64_t tiles, std::int64_t k_tiles, int sms);
// The names kernel_named takes, for help texts: "auto, 128x256, 128x128, pingpong, ...".
std::string kernel_names();
// Whether `kernel` is one of those names (whatever product it is asked for).
bool is_kernel_name(std::string_view kernel);
// Empty when `args` suits `d` (pointers present, 16-byte aligned for TMA, D not aliasing A or B),
// else one sentence saying why not.
std::string check_args(const Desc& d, const Args& args);
// check_args, and what Plan::run_decomposed adds: its GEMM writes D before the epilogue kernel reads
// aux, so dgelu_bgrad's aux, which run() may take in place (aux == D), must lie apart from D there.
std::string check_decomposed_args(const Desc& d, const Args& args);
// Whether a call of a plan with choice `c` on `args` leaves its tiles through TMA stores, its kernel
// compiled for `kernel_epilogue` (the plan's epilogue; none for the GEMM of run_decomposed): a
// fixed-epilogue kernel (c.fixed_epilogue and c.tma_store) with none, bias, bias_gelu or bias_gelu_aux,
// a bf16 D,
// beta 0 (or any beta with c.tma_load_c, C then 16-byte aligned with ldc a multiple of 8), N a
// multiple of 8, and D (and aux) 16-byte aligned with leading dimensions of a multiple of 8 elements.
// With c.f32_tma (an fp32 D, no epilogue): beta 0, or 1 in place (adds_into_d), and f32_boxes_fit.
// `d` with its leading dimensions filled in (with_packed_leading_dimensions).
bool tma_stores(const Desc& d, const Choice& c, Epilogue kernel_epilogue, const Args& args);
// Whether the copy engine's fp32 boxes (64 rows x 32 floats: rule 11's stores, the split-K's reduce-adds)
// can address D: D 16-byte aligned, ldd and N multiples of 4 (a box writes the last 16 bytes of a row
// whole, so an N of 289 wrote columns 289-291 into the padding). `d` as for tma_stores.
bool f32_boxes_fit(const Desc& d, const Args& args);
// Whether the ping-pong split-K can take a call with `args`: its units add into D, so D must be
// cleared first (beta 0) or already hold C (beta 1, C the same matrix as D). A plan whose
// dispatcher chose it under allow_atomics runs other calls on the choice without atomics.
bool adds_into_d(const Desc& d, const Args& args);

// A plan: the checked desc, the dispatcher's choice and the kernel's launch configuration, built
// once per shape; tensor maps are encoded on the first run and kept while the operand pointers
// stay the same, so a repeated call does no host work beyond the launch.
class Plan {
public:
    explicit Plan(const Desc& d);  // throws std::invalid_argument with check()'s sentence
    Plan(const Desc& d, const Choice& forced);  // a chosen kernel instead of the dispatcher's (benchmarks, tests)
    ~Plan();
    Plan(Plan&&) noexcept;
    Plan& operator=(Plan&&) noexcept;

    const Desc& desc() const { return desc_; }
    const Choice& choice() const { return choice_; }
    // The choice that runs these args: choice(), or that of the plan kept for the calls the chosen kernel
    // cannot take (beta != 0 on kernels without C's path, an fp32 D its TMA stores cannot take, C apart
    // from D under atomics), which run() hands them to. What a benchmark row names as the kernel.
    const Choice& choice_for(const Args& args) const;
    // Enqueues the GEMM on `stream` (asynchronous). Throws std::invalid_argument for bad args
    // (check_args), std::runtime_error if built without CUDA or a CUDA call fails. A split plan reuses
    // its workspace (and, split on the ping-pong kernel with a bf16 D, its per-tile counters, which
    // every run leaves at zero) from run to run: runs of one plan must be ordered on one stream, or
    // each stream must have a plan of its own.
    void run(const Args& args, Stream stream = nullptr);
    // The decomposed path, for comparison: the same GEMM with no epilogue writing D (in D's type),
    // then a separate elementwise kernel that reads D back and applies the epilogue (and writes aux,
    // bgrad). What a program without fused epilogues does; equal to run() up to the rounding of the
    // intermediate D.
    void run_decomposed(const Args& args, Stream stream = nullptr);
    // Workspace the plan holds on the device (split-K partials), in bytes.
    std::size_t workspace_bytes() const;

    struct State;  // the kernels, tensor maps and workspace (src/cuda/gemm/plan.cu)

private:
    Desc desc_;
    Choice choice_;
    std::unique_ptr<State> state_;
};

}  // namespace rigel::gemm
