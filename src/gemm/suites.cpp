// The suite tables. The shapes of the model suites are those of real training
// steps; the verify suite is generated (every layout x output type x epilogue
// on shapes that are multiples of no tile, fp8, split K), since a table of its
// 200-odd rows typed out would hide the one that is missing.
#include "gemm/suites.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace rigel::gemm {
namespace {

constexpr std::array kLayouts{std::pair{Op::n, Op::n}, std::pair{Op::n, Op::t}, std::pair{Op::t, Op::n},
                              std::pair{Op::t, Op::t}};
constexpr std::array kOutTypes{Type::f32, Type::bf16, Type::f16};
constexpr std::array kEpilogues{Epilogue::none,          Epilogue::bias,          Epilogue::bias_relu,
                                Epilogue::bias_gelu,     Epilogue::bias_gelu_erf, Epilogue::bias_gelu_aux,
                                Epilogue::dgelu_bgrad};

// GPT-2 124M: width 768, MLP 3072, the vocabulary padded to 50304 (a multiple
// of 128, as llm.c pads it), 12 layers, one step of 16384 tokens (B * T).
constexpr std::int64_t kGpt2Tokens = 16384, kGpt2Width = 768, kGpt2Mlp = 3072, kGpt2Vocab = 50304;
constexpr int kGpt2Layers = 12;
// A 7B-class model (Llama 2 7B): width 4096, MLP 11008 (gate and up, one each),
// Q, K and V fused to 12288, 32 layers, 4096 tokens per step.
constexpr std::int64_t kLlamaTokens = 4096, kLlamaWidth = 4096, kLlamaMlp = 11008, kLlamaQkv = 12288;
constexpr int kLlamaLayers = 32;

struct Product {
    const char* name;
    std::int64_t m, n, k;
    Op a_op, b_op;
    Epilogue epilogue = Epilogue::none;
    float beta = 0.0f;  // 1: the residual stream added through C
    int count = 1;
};

// bf16 in and out throughout: what a mixed-precision trainer's activations
// and gradients are. The weight gradients are bf16 too (a trainer that keeps
// fp32 master weights may want f32 dW; that is one d_type away).
GemmCase model_case(const Product& p) {
    return GemmCase{.name = p.name,
                    .desc = Desc{.m = p.m, .n = p.n, .k = p.k, .a_op = p.a_op, .b_op = p.b_op,
                                 .d_type = Type::bf16, .epilogue = p.epilogue},
                    .beta = p.beta,
                    .count = p.count};
}

// Every GEMM of one GPT-2 training step, each distinct product once. A linear
// layer Y = X W^T (W stored out x in) is NT forward; its input gradient
// dX = dY W is NN, its weight gradient dW = dY^T X is TN with M = out
// features, N = in features and K = the tokens. The MLP's down projection's
// dX is d(GELU output); fused with dgelu_bgrad it becomes the gradient of the
// MLP's pre-activation (times GELU'(aux), aux being the up projection's
// pre-activation kept by bias_gelu_aux) and the up projection's bias gradient.
std::vector<GemmCase> gpt2_cases() {
    constexpr std::int64_t t = kGpt2Tokens, d = kGpt2Width, h = kGpt2Mlp, v = kGpt2Vocab;
    constexpr int l = kGpt2Layers;
    const Product products[] = {
        {"fwd_qkv", t, 3 * d, d, Op::n, Op::t, Epilogue::bias, 0.0f, l},
        {"fwd_attn_proj", t, d, d, Op::n, Op::t, Epilogue::bias, 1.0f, l},
        {"fwd_mlp_up", t, h, d, Op::n, Op::t, Epilogue::bias_gelu_aux, 0.0f, l},
        {"fwd_mlp_down", t, d, h, Op::n, Op::t, Epilogue::bias, 1.0f, l},
        {"fwd_lm_head", t, v, d, Op::n, Op::t, Epilogue::none, 0.0f, 1},
        {"bwd_lm_head_dx", t, d, v, Op::n, Op::n, Epilogue::none, 0.0f, 1},
        {"bwd_lm_head_dw", v, d, t, Op::t, Op::n, Epilogue::none, 0.0f, 1},
        {"bwd_mlp_down_dx", t, h, d, Op::n, Op::n, Epilogue::dgelu_bgrad, 0.0f, l},
        {"bwd_mlp_down_dw", d, h, t, Op::t, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_mlp_up_dx", t, d, h, Op::n, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_mlp_up_dw", h, d, t, Op::t, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_attn_proj_dx", t, d, d, Op::n, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_attn_proj_dw", d, d, t, Op::t, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_qkv_dx", t, d, 3 * d, Op::n, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_qkv_dw", 3 * d, d, t, Op::t, Op::n, Epilogue::none, 0.0f, l},
    };
    std::vector<GemmCase> out;
    for (const Product& p : products) out.push_back(model_case(p));
    return out;
}

// GPT-2's weight gradients as rigel's trainer computes them (src/cuda/train):
// fp32 dW, added in place to what the step's earlier micro-batches left
// (beta 1, C the same matrix as D), bf16 operands, atomics allowed.
std::vector<GemmCase> gpt2_dw_cases() {
    std::vector<GemmCase> out;
    for (GemmCase c : gpt2_cases()) {
        if (!c.name.ends_with("_dw")) continue;
        c.desc.d_type = Type::f32;
        c.desc.allow_atomics = true;  // the trainer's default mode; its deterministic mode allows none
        c.beta = 1.0f;
        c.in_place = true;
        out.push_back(std::move(c));
    }
    return out;
}

// The 7B-class set: the MLP's gate and up projections (one shape, twice per
// layer), its down projection and the fused QKV projection, forward and
// backward; no biases.
std::vector<GemmCase> llama7b_cases() {
    constexpr std::int64_t t = kLlamaTokens, d = kLlamaWidth, h = kLlamaMlp, q = kLlamaQkv;
    constexpr int l = kLlamaLayers;
    const Product products[] = {
        {"fwd_gate_up", t, h, d, Op::n, Op::t, Epilogue::none, 0.0f, 2 * l},
        {"fwd_down", t, d, h, Op::n, Op::t, Epilogue::none, 0.0f, l},
        {"fwd_qkv", t, q, d, Op::n, Op::t, Epilogue::none, 0.0f, l},
        {"bwd_gate_up_dx", t, d, h, Op::n, Op::n, Epilogue::none, 0.0f, 2 * l},
        {"bwd_gate_up_dw", h, d, t, Op::t, Op::n, Epilogue::none, 0.0f, 2 * l},
        {"bwd_down_dx", t, h, d, Op::n, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_down_dw", d, h, t, Op::t, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_qkv_dx", t, d, q, Op::n, Op::n, Epilogue::none, 0.0f, l},
        {"bwd_qkv_dw", q, d, t, Op::t, Op::n, Epilogue::none, 0.0f, l},
    };
    std::vector<GemmCase> out;
    for (const Product& p : products) out.push_back(model_case(p));
    return out;
}

std::string size_text(std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

GemmCase square_case(const std::string& prefix, std::int64_t n, Op a, Op b, Epilogue e) {
    return GemmCase{.name = prefix + "_" + std::to_string(n),
                    .desc = Desc{.m = n, .n = n, .k = n, .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e}};
}

// The fused epilogue's gain against the size: from L2-resident (512^3) to
// where the O(n^3) product drowns the O(n^2) traffic fusion saves.
std::vector<GemmCase> fused_cases() {
    std::vector<GemmCase> out;
    for (std::int64_t n : {512, 1024, 2048, 4096, 8192, 16384})
        out.push_back(square_case("bias_gelu", n, Op::n, Op::t, Epilogue::bias_gelu));
    return out;
}

std::vector<GemmCase> layout_cases() {
    std::vector<GemmCase> out;
    for (const auto& [a, b] : kLayouts) out.push_back(square_case(layout_name(a, b), 4096, a, b, Epilogue::none));
    return out;
}

std::vector<GemmCase> small_cases() {
    std::vector<GemmCase> out;
    for (std::int64_t n : {512, 1024, 2048}) out.push_back(square_case("NT", n, Op::n, Op::t, Epilogue::none));
    return out;
}

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

// A leading dimension past the extent that TMA still takes: the next multiple
// of 16 bytes, plus 16 bytes.
std::int64_t padded_ld(std::int64_t extent, Type t) {
    const std::int64_t per_16_bytes = 16 / type_bytes(t);
    return round_up(extent, per_16_bytes) + per_16_bytes;
}

// Every leading dimension padded (D, C and aux by 8 elements in any type).
Desc padded(Desc d) {
    d.lda = padded_ld(d.a_op == Op::n ? d.k : d.m, d.a_type);
    d.ldb = padded_ld(d.b_op == Op::n ? d.n : d.k, d.b_type);
    d.ldd = d.ldc = d.ldaux = round_up(d.n, 8) + 8;
    return d;
}

struct VerifyShape {
    std::int64_t m, n, k;
    float alpha, beta;
    bool pad;
};

std::string number_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return buf;
}

GemmCase verify_case(const Desc& desc, float alpha, float beta, bool pad, const std::string& suffix = {},
                     const std::string& kernel = {}) {
    const Desc d = pad ? padded(desc) : desc;
    std::string name = layout_name(d.a_op, d.b_op) + "_" + gemm::name(d.a_type) + "_" + gemm::name(d.d_type) + "_" +
                       gemm::name(d.epilogue) + "_" + size_text(d.m, d.n, d.k) + (pad ? "_padded" : "");
    if (alpha != 1.0f || beta != 0.0f) name += "_alpha" + number_text(alpha) + "_beta" + number_text(beta);
    return GemmCase{.name = name + suffix, .desc = d, .alpha = alpha, .beta = beta, .kernel = kernel};
}

// The case with C the same matrix as D (same pointer and leading dimension).
GemmCase in_place(GemmCase c) {
    c.in_place = true;
    return c;
}

// The case whose dgelu_bgrad adds into a bgrad already holding values (Args::bgrad_accumulate).
GemmCase bgrad_accumulated(GemmCase c) {
    c.name += "_bgrad_accumulate";
    c.bgrad_accumulate = true;
    return c;
}

// Every combination the library takes, checked against float64 on shapes that
// are multiples of no tile (M vs 128, N vs 128 and 256, K vs 64 and 128).
std::vector<GemmCase> verify_cases() {
    std::vector<GemmCase> out;
    // bf16 operands on two shapes, f16 on one: each layout x output type x epilogue.
    const VerifyShape odd[] = {{300, 520, 136, 1.0f, 0.0f, true}, {129, 257, 264, -0.75f, 0.5f, true}};
    const VerifyShape odd_f16{300, 520, 136, 0.5f, 1.0f, true};
    // Each under the dispatcher's choice, then under every kernel of the table
    // by name (the ping-pong by name is the one for every epilogue and output
    // type; the dispatcher's, for bf16 D and a training step's epilogues, has
    // them compiled in; 520 columns end in a chunk of 8): the
    // pair kernel on 300 rows meets a tile row with no partner (its A left out)
    // and on 257 and 520 columns a last B tile whose second half lies past N.
    for (const auto& [ab, s] : {std::pair{Type::bf16, odd[0]}, std::pair{Type::bf16, odd[1]},
                                std::pair{Type::f16, odd_f16}})
        for (const auto& [a, b] : kLayouts)
            for (Type t : kOutTypes)
                for (Epilogue e : kEpilogues)
                    for (const std::string kernel : {"", "128x256", "128x128", "pingpong", "pingpong_cluster"})
                        out.push_back(verify_case(Desc{.m = s.m, .n = s.n, .k = s.k, .a_type = ab, .b_type = ab,
                                                       .a_op = a, .b_op = b, .d_type = t, .epilogue = e},
                                                  s.alpha, s.beta, s.pad, kernel.empty() ? "" : "_" + kernel, kernel));
    // dgelu_bgrad adding into a bias gradient that holds earlier sums, under the dispatcher's choice for
    // each output type (the fixed kernel for bf16, the generic epilogue for f32 and f16).
    for (Type t : kOutTypes)
        out.push_back(bgrad_accumulated(verify_case(Desc{.m = 300, .n = 520, .k = 136, .a_type = Type::bf16,
                                                          .b_type = Type::bf16, .a_op = Op::n, .b_op = Op::n,
                                                          .d_type = t, .epilogue = Epilogue::dgelu_bgrad},
                                                     1.0f, 0.0f, true)));
    // The fp32 D by TMA stores ("pingpong_f32_tma", the dispatcher's rule 11), bf16 and f16: 520 columns
    // with padded rows (TMA stores, the last box cut at N), 289 (no multiple of 4: the staged stores, whose
    // padding must stay untouched), D's rows 290 floats apart (no 16-byte multiple: the staged stores), C
    // added (beta 1: the staged stores); and 2104 x 2104 x 1000
    // with alpha -0.75 (289 tiles, so each consumer reuses its staging region tile after tile), by name and
    // under the dispatcher's choice.
    for (const auto& [a, b] : kLayouts)
        for (Type ab : {Type::bf16, Type::f16}) {
            const auto f32_desc = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
                return Desc{.m = m, .n = n, .k = k, .a_type = ab, .b_type = ab, .a_op = a, .b_op = b,
                            .d_type = Type::f32};
            };
            for (const auto& [n, beta] : {std::pair{std::int64_t{520}, 0.0f}, std::pair{std::int64_t{289}, 0.0f},
                                          std::pair{std::int64_t{296}, 1.0f}})
                out.push_back(verify_case(f32_desc(300, n, 136), 1.0f, beta, true, "_pingpong_f32_tma",
                                          "pingpong_f32_tma"));
            Desc odd_ld = padded(f32_desc(300, 289, 136));
            odd_ld.ldd = odd_ld.ldc = 290;
            out.push_back(verify_case(odd_ld, 1.0f, 0.0f, false, "_ldd290_pingpong_f32_tma", "pingpong_f32_tma"));
            for (const std::string kernel : {"", "pingpong_f32_tma"})
                out.push_back(verify_case(f32_desc(2104, 2104, 1000), -0.75f, 0.0f, false,
                                          kernel.empty() ? "_multitile" : "_multitile_pingpong_f32_tma", kernel));
            // In place (beta 1, C the same matrix as D: a training step's dW +=), the boxes added into D by
            // the copy engine: 296 columns with padded rows (the last box cut at N, the padding left alone),
            // and 2104 x 2104 x 1000 with alpha 0.5 (many tiles), by name and under the dispatcher's choice.
            out.push_back(in_place(verify_case(f32_desc(300, 296, 136), 1.0f, 1.0f, true, "_in_place_pingpong_f32_tma",
                                               "pingpong_f32_tma")));
            for (const std::string kernel : {"", "pingpong_f32_tma"})
                out.push_back(in_place(verify_case(f32_desc(2104, 2104, 1000), 0.5f, 1.0f, false,
                                                   kernel.empty() ? "_multitile_in_place" : "_multitile_in_place_pingpong_f32_tma",
                                                   kernel)));
        }
    // The kernels with a training step's epilogue compiled in (bf16 D), on
    // columns that end in a chunk of one (289 = 9 x 32 + 1), C added (beta 1:
    // the residual of a projection).
    // C added and N odd: the dispatcher's kernels take their staged stores
    // here (the TMA stores need beta 0 and N a multiple of 8), and so does
    // "fixed_staged" by name.
    for (const auto& [a, b] : kLayouts)
        for (Epilogue e : gemm::kFixedEpilogues)
            for (const std::string kernel : {"", "fixed_staged", "fixed_tma_c"}) {
                const Desc d{.m = 300, .n = 289, .k = 136, .a_type = Type::bf16, .b_type = Type::bf16, .a_op = a,
                             .b_op = b, .d_type = Type::bf16, .epilogue = e};
                if (kernel == "fixed_tma_c" && !gemm::has_tma_c_kernel(d)) continue;
                out.push_back(verify_case(d, 1.0f, 1.0f, true, kernel.empty() ? "" : "_" + kernel, kernel));
            }
    // C loaded by TMA ("fixed_tma_c", and the dispatcher's kernel for epilogues none and bias): 296
    // columns (a multiple of 8 whose last tile's second box lies past N and its first is cut at 40), C
    // added with beta 1 and scaled (alpha 1.5, beta -0.5), and beta 0 (alpha 0.5: the kernel without C's
    // path), where dgelu_bgrad by name loads its aux by TMA instead (with C it takes the staged path).
    for (const auto& [a, b] : kLayouts)
        for (Epilogue e : gemm::kTmaCEpilogues)
            for (const std::string kernel : {"", "fixed_tma_c"})
                for (const auto& [alpha, beta] :
                     {std::pair{1.0f, 1.0f}, std::pair{1.5f, -0.5f}, std::pair{0.5f, 0.0f}})
                    out.push_back(verify_case(Desc{.m = 300, .n = 296, .k = 136, .a_type = Type::bf16,
                                                   .b_type = Type::bf16, .a_op = a, .b_op = b,
                                                   .d_type = Type::bf16, .epilogue = e},
                                              alpha, beta, true, kernel.empty() ? "_tma_c" : "_fixed_tma_c",
                                              kernel));
    // The cooperative 128 x 256 kernel compiled per epilogue ("fixed_wide"): 296 columns (the last tile's
    // boxes 3 and 4 past N, its second cut at 40) with beta 0 (TMA stores) and 289 with C added (beta 1,
    // staged stores); 2104 x 2104 x 1000 (9 tile columns of 256, the last 56 wide; each consumer's staging
    // box reused tile after tile) with beta 0.
    for (const auto& [a, b] : kLayouts)
        for (Epilogue e : gemm::kWideEpilogues) {
            for (const auto& [n, beta] : {std::pair{std::int64_t{296}, 0.0f}, std::pair{std::int64_t{289}, 1.0f}})
                out.push_back(verify_case(Desc{.m = 300, .n = n, .k = 136, .a_type = Type::bf16, .b_type = Type::bf16,
                                               .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e},
                                          1.0f, beta, true, "_fixed_wide", "fixed_wide"));
            out.push_back(verify_case(Desc{.m = 2104, .n = 2104, .k = 1000, .a_type = Type::bf16,
                                           .b_type = Type::bf16, .a_op = a, .b_op = b, .d_type = Type::bf16,
                                           .epilogue = e},
                                      1.0f, 0.0f, false, "_multitile_fixed_wide", "fixed_wide"));
        }
    // The 64-row ping-pong kernel ("fixed_m64", the dispatcher's rule 7 for few tiles and a short K,
    // which the odd shapes above already take under "auto"): 289 columns with C added (staged stores),
    // and 2104 x 2104 x 1000, 561 tiles of 64 x 128 on the persistent CTAs, so that both consumers take
    // turns and reuse their staging boxes, with TMA stores.
    for (const auto& [a, b] : kLayouts)
        for (Epilogue e : gemm::kShortTileEpilogues)
            for (const auto& [m, n, k, beta] : {std::tuple{300, 289, 136, 1.0f}, std::tuple{2104, 2104, 1000, 0.0f}})
                out.push_back(verify_case(Desc{.m = m, .n = n, .k = k, .a_type = Type::bf16, .b_type = Type::bf16,
                                               .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e},
                                          1.0f, beta, m < 1000, m < 1000 ? "_fixed_m64" : "_multitile_fixed_m64",
                                          "fixed_m64"));
    // The TMA stores over many tiles: 2104 x 2104 (rows of a multiple of 8 in
    // every layout, the last tile 56 x 56) and K = 1000, so that each
    // consumer reuses its staging box tile after tile, with the bias and with
    // aux written beside D; and the bias with C added (beta 1), which the
    // same kernel stores staged.
    for (const auto& [a, b] : kLayouts)
        for (const auto& [e, beta] : {std::pair{Epilogue::bias, 0.0f}, std::pair{Epilogue::bias_gelu_aux, 0.0f},
                                      std::pair{Epilogue::bias, 1.0f}})
            out.push_back(verify_case(Desc{.m = 2104, .n = 2104, .k = 1000, .a_type = Type::bf16, .b_type = Type::bf16,
                                           .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e},
                                      1.0f, beta, false, "_multitile"));
    // The pair by name ("fixed_pair", K not split), each of gemm::kPairEpilogues in every layout: 1100 x 760 x
    // 1000, 9 tile rows (the last 76 deep, so the last pair's second CTA has no rows: its A left out, its
    // stores clipped) and 6 tile columns (the last 120 wide: its B's second half cut at 56 columns), the
    // last k-tile partial; with 760 columns the tiles leave by TMA stores, with 757 (beta 0.5) staged.
    for (const auto& [a, b] : kLayouts)
        for (Epilogue e : gemm::kPairEpilogues)
            for (const auto& [n, beta] : {std::pair{760, 0.0f}, std::pair{757, 0.5f}})
                out.push_back(verify_case(Desc{.m = 1100, .n = n, .k = 1000, .a_type = Type::bf16,
                                               .b_type = Type::bf16, .a_op = a, .b_op = b, .d_type = Type::bf16,
                                               .epilogue = e},
                                          1.0f, beta, true, "_fixed_pair", "fixed_pair"));
    // The split pair by name ("fixed_split_pair", epilogue none): 700 x 760 x 3000 in every layout, 6 x 6
    // tiles (the last row 60 rows deep, the last column 120 wide) in 3 splits of 15 k-tiles, the last 17
    // with its last k-tile partial; 54 pairs of CTAs, each loading its A and half of B.
    for (const auto& [a, b] : kLayouts)
        out.push_back(verify_case(Desc{.m = 700, .n = 760, .k = 3000, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = Epilogue::none},
                                  1.0f, 0.0f, true, "_fixed_split_pair", "fixed_split_pair"));
    // The wide-N tiles by name (epilogue none) in every layout, each on three shapes: a narrow N whose second
    // tile is cut inside a box, with TMA stores (beta 0); one column fewer (or 7) with C added (beta 1, the
    // staged stores); and 2104 x 2104 x 1000 on the persistent CTAs, each consumer's staging box reused tile
    // after tile.
    // "fixed_n192": 296 columns, the second tile 104 wide (its second box cut at 40, its third past N); 289;
    //   17 x 11 tiles, the last column 184 wide (its third box cut at 56).
    // "fixed_n168": 320 columns, the second tile 152 wide (its 40-column last box cut at 24); 313 (a tile's
    //   last 32-column chunk 8 wide); 17 x 13 tiles, the last column 88 wide (its second box cut at 24, its
    //   last box past N).
    // "fixed_n176": 336 columns, the second tile 160 wide (its 48-column last box cut at 32); 329 (a tile's
    //   last 32-column chunk 16 wide); 17 x 12 tiles, the last column 168 wide (its last box cut at 40).
    using WideN = std::tuple<const char*, std::int64_t, std::int64_t>;  // kernel, the narrow N, the N with C
    using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, float>;  // m, n, k, beta
    for (const auto& [kernel, narrow_n, c_n] :
         {WideN{"fixed_n192", 296, 289}, WideN{"fixed_n168", 320, 313}, WideN{"fixed_n176", 336, 329}}) {
        const std::string multitile = std::string("_multitile_") + kernel, short_suffix = std::string("_") + kernel;
        for (const auto& [a, b] : kLayouts)
            for (const auto& [m, n, k, beta] :
                 {Shape{300, narrow_n, 136, 0.0f}, Shape{300, c_n, 136, 1.0f}, Shape{2104, 2104, 1000, 0.0f}})
                out.push_back(verify_case(Desc{.m = m, .n = n, .k = k, .a_type = Type::bf16, .b_type = Type::bf16,
                                               .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = Epilogue::none},
                                          1.0f, beta, m < 1000, m < 1000 ? short_suffix : multitile,
                                          kernel));
    }
    // The narrow tail by name ("fixed_tail", epilogues none and bias + GELU) in every layout, on shapes
    // whose plan re-cuts the last columns (tests/host/test_narrow_tail.cpp): 3001 x 3001 x 296, 24 x 24
    // tiles of 128 whose last 8 columns (953, the last 57 wide) become 10 of 104, the last 17 wide (its
    // one box cut at 17, its 40-column box past N), the last tile row 57 deep, with TMA stores (beta 0);
    // 2500 x 2100 x 136 with C added (beta 1: the staged stores), 20 x 17 tiles whose last 4 columns
    // (436) become 5 of 104, the last 20 wide. Rows padded past the extents (N = 3001 stored rows need it).
    for (const auto& [a, b] : kLayouts)
        for (Epilogue e : gemm::kTailEpilogues)
            for (const auto& [m, n, k, beta] : {Shape{3001, 3001, 296, 0.0f}, Shape{2500, 2100, 136, 1.0f}})
                out.push_back(verify_case(Desc{.m = m, .n = n, .k = k, .a_type = Type::bf16, .b_type = Type::bf16,
                                               .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e},
                                          1.0f, beta, true, "_fixed_tail", "fixed_tail"));
    // The dispatcher's wide-N rules, each in two layouts with beta 0, and beta 1, which the plan runs on the
    // 128 x 128 kernel that loads C by TMA (its residual plan):
    // rule 8 (128 x 192 tiles for epilogue none, N a multiple of 192, K at most 1024, 16 waves at least):
    //   6000 x 8640 x 136, 47 x 45 tiles (16.02 waves on 132 SMs; the last tile row 112 deep, no dimension a
    //   multiple of 128), in NT and NN;
    // rule 9 (128 x 176 tiles where they fill the waves better): 1000 x 2056 x 2056, 8 x 12 tiles of
    //   128 x 176 (one wave; the last row 104 deep, the last column 120 wide) against 136 of 128 x 128 (a
    //   second wave of 4, split 2 ways), in NT and TT (B K-major); and where 128 x 192 tiles fill them
    //   better still: 776 x 3176 x 2056, 7 x 17 tiles of 128 x 192 (one wave, 1.5 in 128 x 128 tiles'
    //   worth; the last row 8 deep, the last column 104 wide) against 175 of 128 x 128 (a second wave of 43,
    //   split 2 ways: 1.67) and 133 of 128 x 176 (two waves: 2.75).
    struct RuleCase {
        const char* suffix;
        std::int64_t m, n, k;
        std::pair<Op, Op> layouts[2];
    };
    for (const RuleCase& r : {RuleCase{"_rule8", 6000, 8640, 136, {{Op::n, Op::t}, {Op::n, Op::n}}},
                              RuleCase{"_rule9", 1000, 2056, 2056, {{Op::n, Op::t}, {Op::t, Op::t}}},
                              RuleCase{"_rule9_n192", 776, 3176, 2056, {{Op::n, Op::t}, {Op::t, Op::t}}}})
        for (const auto& [a, b] : r.layouts)
            for (float beta : {0.0f, 1.0f})
                out.push_back(verify_case(Desc{.m = r.m, .n = r.n, .k = r.k, .a_type = Type::bf16,
                                               .b_type = Type::bf16, .a_op = a, .b_op = b, .d_type = Type::bf16,
                                               .epilogue = Epilogue::none},
                                          1.0f, beta, false, r.suffix));
    // Rule 10 (the narrow tail for K-major A and B) as the dispatcher takes it: 3001 x 3001 x 296 in NT, for
    // each of its epilogues, beta 0 (the tail's kernel) and beta 1 (the residual plan on rule 4's kernel).
    for (Epilogue e : gemm::kTailEpilogues)
        for (float beta : {0.0f, 1.0f})
            out.push_back(verify_case(Desc{.m = 3001, .n = 3001, .k = 296, .a_type = Type::bf16,
                                           .b_type = Type::bf16, .a_op = Op::n, .b_op = Op::t,
                                           .d_type = Type::bf16, .epilogue = e},
                                      1.0f, beta, true, "_rule10"));
    // The tile order in groups of 16 and 32 tile rows (fixed_g16, fixed_g32): 17 rows of tiles, so the
    // last group is a short one.
    for (const char* kernel : {"fixed_g16", "fixed_g32"})
        out.push_back(verify_case(Desc{.m = 2104, .n = 2104, .k = 1000, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::n, .b_op = Op::t, .d_type = Type::bf16,
                                       .epilogue = Epilogue::bias_gelu_aux},
                                  1.0f, 0.0f, false, std::string("_multitile_") + kernel, kernel));
    // The 128 x 192 tiles in groups of 16 tile rows (fixed_n192_g16, epilogue none): 17 rows of 11 tiles.
    out.push_back(verify_case(Desc{.m = 2104, .n = 2104, .k = 1000, .a_type = Type::bf16, .b_type = Type::bf16,
                                   .a_op = Op::n, .b_op = Op::t, .d_type = Type::bf16, .epilogue = Epilogue::none},
                              1.0f, 0.0f, false, "_multitile_fixed_n192_g16", "fixed_n192_g16"));
    // C by TMA over many tiles (each consumer's barrier for C through many phases): the residual bias
    // product in every layout, and in place (C is D) in NT, as a projection adds into its stream.
    for (const auto& [a, b] : kLayouts) {
        const Desc d{.m = 2104, .n = 2104, .k = 1000, .a_type = Type::bf16, .b_type = Type::bf16, .a_op = a,
                     .b_op = b, .d_type = Type::bf16, .epilogue = Epilogue::bias};
        out.push_back(verify_case(d, 1.0f, 1.0f, false, "_multitile_fixed_tma_c", "fixed_tma_c"));
        if (layout_name(a, b) == "NT") {
            out.push_back(in_place(verify_case(d, 1.0f, 1.0f, false, "_multitile_in_place_fixed_tma_c", "fixed_tma_c")));
        }
        // dgelu_bgrad's aux by TMA over many tiles, bgrad added across all of them.
        Desc dgelu = d;
        dgelu.epilogue = Epilogue::dgelu_bgrad;
        out.push_back(verify_case(dgelu, 1.0f, 0.0f, false, "_multitile_fixed_tma_c", "fixed_tma_c"));
        // C's and aux's boxes are loaded as a consumer takes its tile, on a barrier whose phase follows
        // the consumer's tile count: 31 x 29 tiles give each consumer 3 or 4 of them on 132 SMs (the
        // phase back where it began), the last row of tiles 56 rows deep (its second half past M).
        Desc many = d;
        many.m = 3896;
        many.n = 3704;
        many.k = 136;
        out.push_back(verify_case(many, 1.0f, 1.0f, false, "_many_tiles_fixed_tma_c", "fixed_tma_c"));
        many.epilogue = Epilogue::dgelu_bgrad;
        out.push_back(verify_case(many, 1.0f, 0.0f, false, "_many_tiles_fixed_tma_c", "fixed_tma_c"));
        if (layout_name(a, b) == "NN")  // a training step's dX layout, its bias gradient summed over micro-batches
            out.push_back(
                bgrad_accumulated(verify_case(many, 1.0f, 0.0f, false, "_many_tiles_fixed_tma_c", "fixed_tma_c")));
    }
    // Several tiles per CTA: 2100 x 2100 is 289 tiles of 128 x 128 (153 of
    // 128 x 256) for 132 persistent CTAs, and K = 1000 is 16 k-tiles, so the
    // ring wraps within each tile; the ping-pong consumers hand their turn
    // back and forth. Every layout, every unsplit kernel, the epilogues that
    // write the most (aux; bgrad summed across tiles).
    for (const auto& [a, b] : kLayouts)
        for (const auto& [ab, t, e] : {std::tuple{Type::bf16, Type::bf16, Epilogue::bias_gelu_aux},
                                       std::tuple{Type::f16, Type::f32, Epilogue::dgelu_bgrad}})
            for (const std::string kernel : {"", "128x256", "128x128", "pingpong", "pingpong_cluster"})
                out.push_back(verify_case(Desc{.m = 2100, .n = 2100, .k = 1000, .a_type = ab, .b_type = ab, .a_op = a,
                                               .b_op = b, .d_type = t, .epilogue = e},
                                          1.0f, 0.0f, true, "_multitile" + (kernel.empty() ? "" : "_" + kernel),
                                          kernel));
    // The ping-pong split-K (units added into an fp32 D by the copy engine's
    // reduce-add, or by reductions from the registers where N or D's rows are
    // no multiple of 4) on every layout and 16-bit type: D cleared first (beta
    // 0; 520 columns by the copy engine, 517 by reductions), and D holding C
    // (in place, beta 1, as a weight gradient accumulates) with alpha 0.5:
    // 1544 x 1032 x 6152 is 117 tiles in 9 splits of 10 or 11 k-tiles, 1053
    // units, about 4 rounds of the H200's 264 consumers.
    for (const auto& [a, b] : kLayouts)
        for (Type ab : {Type::bf16, Type::f16}) {
            for (std::int64_t n : {520, 517})
                out.push_back(verify_case(Desc{.m = 300, .n = n, .k = 2000, .a_type = ab, .b_type = ab, .a_op = a,
                                               .b_op = b, .d_type = Type::f32},
                                          1.0f, 0.0f, true, "_pingpong_splitk", "pingpong_splitk"));
            out.push_back(in_place(verify_case(Desc{.m = 1544, .n = 1032, .k = 6152, .a_type = ab, .b_type = ab,
                                                    .a_op = a, .b_op = b, .d_type = Type::f32},
                                               0.5f, 1.0f, false, "_in_place_pingpong_splitk", "pingpong_splitk")));
        }
    // The split fixed kernels (rule 6: a bf16 D, units added into the plan's workspace, the last unit of a
    // tile applying the epilogue): by name ("fixed_split") on 15 tiles of 32 k-tiles in every layout and
    // fixed epilogue, beta 0 (TMA stores), and with C added on 289 columns (staged stores); as the
    // dispatcher's choice on 1544 x 1400 x 6152 in TN with atomics allowed, a weight gradient's layout
    // (rule 3, 143 tiles in two waves), with and without dGELU. The verify run launches each case twice
    // before its check, so a workspace left dirty by the first launch shows.
    // "fixed_split_ordered" (the units adding in split order, the counter as a ticket) on the
    // same cases, and on the weight gradient's shape by name.
    for (const char* kernel : {"fixed_split", "fixed_split_ordered"}) {
        const std::string suffix = std::string("_") + (std::string(kernel) == "fixed_split" ? "split_fixed" : kernel);
        for (const auto& [a, b] : kLayouts)
            for (Epilogue e : gemm::kFixedEpilogues)
                out.push_back(verify_case(Desc{.m = 300, .n = 520, .k = 2000, .a_type = Type::bf16,
                                               .b_type = Type::bf16, .a_op = a, .b_op = b, .d_type = Type::bf16,
                                               .epilogue = e},
                                          1.0f, 0.0f, true, suffix, kernel));
        for (Epilogue e : {Epilogue::none, Epilogue::bias})
            out.push_back(verify_case(Desc{.m = 300, .n = 289, .k = 2000, .a_type = Type::bf16, .b_type = Type::bf16,
                                           .a_op = Op::n, .b_op = Op::t, .d_type = Type::bf16, .epilogue = e},
                                      1.5f, -0.5f, true, suffix, kernel));
    }
    for (Epilogue e : {Epilogue::none, Epilogue::dgelu_bgrad})
        out.push_back(verify_case(Desc{.m = 1544, .n = 1400, .k = 6152, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16, .epilogue = e},
                                  1.0f, 0.0f, false, "_fixed_split_ordered", "fixed_split_ordered"));
    for (Epilogue e : {Epilogue::none, Epilogue::dgelu_bgrad})
        out.push_back(verify_case(Desc{.m = 1544, .n = 1400, .k = 6152, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16, .epilogue = e,
                                       .allow_atomics = true},
                                  1.0f, 0.0f, false, "_atomics_split_fixed"));
    // "fixed_split_wave" (the ordered split with one unit a CTA): 300 x 520 x 2000 in TN, 15 tiles split
    // 8 ways (a ticket chain of 8), every fixed epilogue; and 776 x 760 x 4104, near GPT-2's
    // bwd_attn_proj_dw with a shorter K (42 tiles, 3 splits of 21 or 22 k-tiles).
    for (Epilogue e : gemm::kFixedEpilogues)
        out.push_back(verify_case(Desc{.m = 300, .n = 520, .k = 2000, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16, .epilogue = e},
                                  1.0f, 0.0f, true, "_fixed_split_wave", "fixed_split_wave"));
    out.push_back(verify_case(Desc{.m = 776, .n = 760, .k = 4104, .a_type = Type::bf16, .b_type = Type::bf16,
                                   .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16},
                              1.0f, 0.0f, false, "_fixed_split_wave", "fixed_split_wave"));
    // Rule 2a as the dispatcher's choice: 776 x 760 x 12360 in TN (42 tiles, 3 splits of 64 or 65
    // k-tiles), without epilogue and with dGELU (the bias gradient summed over the tiles' last units).
    for (Epilogue e : {Epilogue::none, Epilogue::dgelu_bgrad})
        out.push_back(verify_case(Desc{.m = 776, .n = 760, .k = 12360, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16, .epilogue = e},
                                  1.0f, 0.0f, false, "_split_wave"));
    // The tail split (rule 3a, the dispatcher's choice for this shape on 132 SMs, atomics allowed or
    // not): 1544 x 1400 is 143 tiles, the last 11 split 6 ways (16 or 17 of 97 k-tiles, K = 6152),
    // their 66 units after the other 132 tiles, whole (fewer units than CTAs: split_units_lead). The streamed tail ("fixed_split_stream", dispatch.cpp's note
    // 3b): 1544 x 2000 is 208 tiles, the last 76 streamed, their 76 x 48 k-tiles (K = 3016) in runs of
    // 27 or 28, so that a tile has the pieces of two or three CTAs and many a CTA's first piece is
    // empty. Each by name in every fixed epilogue, TN and NT; with C added (alpha 1.5, beta -0.5) on
    // one column more, which leaves by the staged stores.
    for (const auto& [kernel, suffix, n, k] :
         {std::tuple<const char*, const char*, std::int64_t, std::int64_t>{"fixed_split_tail", "_split_tail", 1400, 6152},
          {"fixed_split_stream", "_split_stream", 2000, 3016}}) {
        for (const auto& [a, b] : {std::pair{Op::t, Op::n}, std::pair{Op::n, Op::t}})
            for (Epilogue e : gemm::kFixedEpilogues)
                out.push_back(verify_case(Desc{.m = 1544, .n = n, .k = k, .a_type = Type::bf16, .b_type = Type::bf16,
                                               .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e},
                                          1.0f, 0.0f, false, suffix, kernel));
        for (Epilogue e : {Epilogue::none, Epilogue::bias})
            out.push_back(verify_case(Desc{.m = 1544, .n = n + 1, .k = k, .a_type = Type::bf16, .b_type = Type::bf16,
                                           .a_op = Op::n, .b_op = Op::t, .d_type = Type::bf16, .epilogue = e},
                                      1.5f, -0.5f, true, suffix, kernel));
    }
    // The tail split's units gathered instead of added in turn, on its shape above (11 tail tiles split 6
    // ways, 66 units after the whole tiles: "fixed_split_tail_gather").
    for (const auto& [a, b] : {std::pair{Op::t, Op::n}, std::pair{Op::n, Op::t}})
        for (Epilogue e : {Epilogue::none, Epilogue::bias_gelu, Epilogue::bias_gelu_aux, Epilogue::dgelu_bgrad})
            out.push_back(verify_case(Desc{.m = 1544, .n = 1400, .k = 6152, .a_type = Type::bf16, .b_type = Type::bf16,
                                           .a_op = a, .b_op = b, .d_type = Type::bf16, .epilogue = e},
                                      1.0f, 0.0f, false, "_split_tail_gather", "fixed_split_tail_gather"));
    // The pieces gathered instead of added in turn: on the same shape ("fixed_split_stream_gather");
    // and where every tile is streamed, which gathers: near GPT-2's bwd_qkv_dw (2296 x 760 x 4104 TN,
    // 108 tiles of 65 k-tiles, runs of 53 or 54), and with 4 or 5 pieces a tile (776 x 760 x 12360:
    // 42 tiles of 194 k-tiles, runs of 61 or 62).
    for (Epilogue e : {Epilogue::none, Epilogue::bias_gelu_aux, Epilogue::dgelu_bgrad})
        out.push_back(verify_case(Desc{.m = 1544, .n = 2000, .k = 3016, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16, .epilogue = e},
                                  1.0f, 0.0f, false, "_split_stream_gather", "fixed_split_stream_gather"));
    for (Epilogue e : {Epilogue::none, Epilogue::dgelu_bgrad})
        out.push_back(verify_case(Desc{.m = 2296, .n = 760, .k = 4104, .a_type = Type::bf16, .b_type = Type::bf16,
                                       .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16, .epilogue = e},
                                  1.0f, 0.0f, false, "_split_stream", "fixed_split_stream"));
    out.push_back(verify_case(Desc{.m = 776, .n = 760, .k = 12360, .a_type = Type::bf16, .b_type = Type::bf16,
                                   .a_op = Op::t, .b_op = Op::n, .d_type = Type::bf16},
                              1.0f, 0.0f, false, "_split_stream", "fixed_split_stream"));
    // The dispatcher under allow_atomics (rule 5): 15 tiles (rule 2's split) cleared first in every
    // layout; in TN (a weight gradient's), 143 tiles in two waves (rule 3's split) added in place, and
    // both shapes with beta 0.5 into another matrix, which cannot be added into D: there the plan runs
    // the split without atomics.
    for (const auto& [a, b] : kLayouts)
        out.push_back(verify_case(Desc{.m = 300, .n = 520, .k = 2000, .a_op = a, .b_op = b, .d_type = Type::f32,
                                       .allow_atomics = true},
                                  1.0f, 0.0f, true, "_atomics"));
    // 1544 x 1398 (N no multiple of 4, rows padded) in place keeps the reductions from the registers.
    for (const auto& [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{300, 520, 2000},
                                  {1544, 1400, 6152}, {1544, 1398, 6152}}) {
        const Desc tn{.m = m, .n = n, .k = k, .a_op = Op::t, .b_op = Op::n, .d_type = Type::f32, .allow_atomics = true};
        if (m > 1000) {
            out.push_back(in_place(verify_case(tn, 0.5f, 1.0f, n % 8 != 0, "_in_place_atomics")));  // rows padded for TMA
        }
        out.push_back(verify_case(tn, 0.5f, 0.5f, m < 1000 || n % 8 != 0, "_atomics"));  // padded rows for TMA
    }
    // "pingpong_wave_split" in place on 1544 x 1000 x 6152: 104 tiles, one part-empty wave, 5 splits of
    // every tile (wave_splits), each unit added into D by the copy engine; bf16 and f16.
    for (Type ab : {Type::bf16, Type::f16}) {
        out.push_back(in_place(verify_case(Desc{.m = 1544, .n = 1000, .k = 6152, .a_type = ab, .b_type = ab,
                                                .a_op = Op::t, .b_op = Op::n, .d_type = Type::f32},
                                           0.5f, 1.0f, false, "_in_place_pingpong_wave_split", "pingpong_wave_split")));
    }
    // Rule 12's tile order row by row (GemmCase::group_m 1; what an H100 dispatches for a few tile columns
    // and a long K) on 2900 x 700 x 8200 TN, 23 tile rows of 6 columns, 138 tiles: the dispatcher's kernels
    // for an fp32 D in place under atomics (rule 5's splits, or 5a's) and for a bf16 D with and without
    // bias + GELU (rule 3a's tail split); and 2900 x 1000 x 8200 NT on the narrow tail ("fixed_tail"), whose
    // narrow tiles follow the wide ones in the order.
    // The case with its tiles in groups of `group_m` tile rows (GemmCase::group_m), named for the order.
    const auto ordered = [](GemmCase c, int group_m, const char* tag) {
        c.group_m = group_m;
        c.name += tag;
        return c;
    };
    const auto row_order = [&](GemmCase c) { return ordered(std::move(c), 1, "_row_order"); };
    const Desc row_tn{.m = 2900, .n = 700, .k = 8200, .a_op = Op::t, .b_op = Op::n};
    Desc row_f32 = row_tn;
    row_f32.d_type = Type::f32;
    row_f32.allow_atomics = true;
    out.push_back(row_order(in_place(verify_case(row_f32, 0.5f, 1.0f, true))));
    for (Epilogue e : {Epilogue::none, Epilogue::bias_gelu}) {
        Desc d = row_tn;
        d.epilogue = e;
        out.push_back(row_order(verify_case(d, 1.0f, 0.0f, true)));
    }
    out.push_back(row_order(verify_case(Desc{.m = 2900, .n = 1000, .k = 8200, .b_op = Op::t}, 1.0f, 0.0f, true,
                                        "_tail", "fixed_tail")));
    // Rule 13's groups of 4 tile rows (what an H100 dispatches for 8192^3 and up): on 1800 x 1700 x 1048 NT,
    // 15 tile rows (three whole groups and one of 3) on the narrow tail, and on the tail split of 8192^3's
    // kernel (ordered splits of the last tiles, gathered) on 1544 x 1400 x 6152 NT, 13 tile rows; bf16 D
    // with and without bias + GELU.
    const auto groups_of_4 = [&](GemmCase c) { return ordered(std::move(c), kLargeProductGroupM, "_group4"); };
    for (Epilogue e : {Epilogue::none, Epilogue::bias_gelu}) {
        out.push_back(groups_of_4(
            verify_case(Desc{.m = 1800, .n = 1700, .k = 1048, .b_op = Op::t, .epilogue = e}, 1.0f, 0.0f, true)));
        out.push_back(groups_of_4(verify_case(Desc{.m = 1544, .n = 1400, .k = 6152, .b_op = Op::t, .epilogue = e},
                                              1.0f, 0.0f, false, "_split_tail_gather", "fixed_split_tail_gather")));
    }
    // fp8 (layout NT only), each type x output type x epilogue; one shape with
    // packed leading dimensions (D's row of 257 elements unaligned).
    const VerifyShape fp8[] = {{300, 520, 272, 1.0f, 0.0f, true}, {129, 257, 528, 2.0f, -1.0f, false}};
    for (const VerifyShape& s : fp8)
        for (Type ab : {Type::e4m3, Type::e5m2})
            for (Type t : kOutTypes)
                for (Epilogue e : kEpilogues)
                    out.push_back(verify_case(Desc{.m = s.m, .n = s.n, .k = s.k, .a_type = ab, .b_type = ab,
                                                   .a_op = Op::n, .b_op = Op::t, .d_type = t, .epilogue = e},
                                              s.alpha, s.beta, s.pad));
    // Split K: one tile of output and a long K, so that the dispatcher splits;
    // the reduction kernel applies every epilogue, with and without C.
    for (Type t : kOutTypes)
        for (std::size_t i = 0; i < kEpilogues.size(); ++i) {
            const bool scaled = i % 2 == 1;
            out.push_back(verify_case(Desc{.m = 100, .n = 136, .k = 4104, .a_op = Op::n, .b_op = Op::t, .d_type = t,
                                           .epilogue = kEpilogues[i]},
                                      scaled ? 1.5f : 1.0f, scaled ? 0.25f : 0.0f, true, "_splitk"));
        }
    for (const auto& [a, b] : kLayouts)
        if (layout_name(a, b) != "NT")
            out.push_back(verify_case(Desc{.m = 100, .n = 136, .k = 4104, .a_op = a, .b_op = b, .d_type = Type::bf16},
                                      1.0f, 0.0f, true, "_splitk"));
    for (Epilogue e : kEpilogues)
        out.push_back(verify_case(Desc{.m = 64, .n = 120, .k = 8192, .a_type = Type::e4m3, .b_type = Type::e4m3,
                                       .a_op = Op::n, .b_op = Op::t, .d_type = Type::bf16, .epilogue = e},
                                  1.0f, 0.0f, false, "_splitk"));
    // In place: C is D, the residual add of a trainer that overwrites its stream.
    out.push_back(in_place(verify_case(Desc{.m = 300, .n = 520, .k = 136, .a_op = Op::n, .b_op = Op::t,
                                            .d_type = Type::bf16, .epilogue = Epilogue::bias},
                                       1.0f, 1.0f, true, "_inplace")));
    return out;
}

const std::vector<GemmSuite>& table() {
    static const std::vector<GemmSuite> suites{
        GemmSuite{.name = "gpt2",
                  .purpose = "every GEMM of one GPT-2 124M training step at 16384 tokens, forward and backward in "
                             "their real layouts and epilogues, bf16 in and out",
                  .cases = gpt2_cases(),
                  .baselines = {Contender::cublaslt, Contender::rigel_decomposed}},
        GemmSuite{.name = "gpt2_dw",
                  .purpose = "GPT-2's five weight gradients as rigel's trainer runs them: fp32 dW accumulated in "
                             "place (beta 1), bf16 operands, atomics allowed (cuBLASLt in its default, "
                             "deterministic mode)",
                  .cases = gpt2_dw_cases(),
                  .baselines = {Contender::cublaslt}},
        GemmSuite{.name = "llama7b",
                  .purpose = "a 7B-class model's MLP and QKV products at 4096 tokens, forward and backward, bf16",
                  .cases = llama7b_cases(),
                  .baselines = {Contender::cublaslt}},
        GemmSuite{.name = "fused",
                  .purpose = "bias + GELU fused into the store against the decomposed path and cuBLASLt's "
                             "GELU_BIAS, square n = 512 to 16384",
                  .cases = fused_cases(),
                  .baselines = {Contender::cublaslt, Contender::rigel_decomposed}},
        GemmSuite{.name = "layouts",
                  .purpose = "every storage order of A and B at 4096^3, bf16 out, no epilogue",
                  .cases = layout_cases(),
                  .baselines = {Contender::cublaslt, Contender::cublas}},
        GemmSuite{.name = "small",
                  .purpose = "512^3 to 2048^3, where tiles leave SMs idle and launch cost shows, against cuBLAS",
                  .cases = small_cases(),
                  .baselines = {Contender::cublas, Contender::cublaslt}},
        GemmSuite{.name = "verify",
                  .purpose = "every layout x output type x epilogue on shapes that are multiples of no tile, fp8, "
                             "split K, alpha and beta, C in place: checked against float64, not timed",
                  .cases = verify_cases(),
                  .baselines = {}},
    };
    return suites;
}

constexpr std::array kContenders{std::pair{Contender::rigel, "rigel"},
                                 std::pair{Contender::rigel_decomposed, "rigel_decomposed"},
                                 std::pair{Contender::cublaslt, "cublaslt"}, std::pair{Contender::cublas, "cublas"}};

}  // namespace

const char* name(Contender c) {
    for (const auto& [k, n] : kContenders)
        if (k == c) return n;
    return "?";
}

std::span<const GemmSuite> gemm_suites() { return table(); }

const GemmSuite* find_gemm_suite(std::string_view name) {
    for (const GemmSuite& s : table())
        if (s.name == name) return &s;
    return nullptr;
}

std::vector<const GemmSuite*> bench_suites() {
    std::vector<const GemmSuite*> out;
    for (const GemmSuite& s : table())
        if (!s.baselines.empty()) out.push_back(&s);
    return out;
}

bool applies(Contender baseline, const GemmCase& c) {
    const Desc& d = c.desc;
    switch (baseline) {
        case Contender::rigel: return false;
        case Contender::rigel_decomposed: return d.epilogue != Epilogue::none;
        case Contender::cublaslt: return true;
        case Contender::cublas:
            // cublasGemmEx computes alpha op(A) op(B) + beta D: no epilogue, and C only as D itself.
            return d.epilogue == Epilogue::none && (c.beta == 0.0f || c.in_place) &&
                   (d.a_type == Type::bf16 || d.a_type == Type::f16) && (d.d_type == Type::f32 || d.d_type == d.a_type);
    }
    return false;
}

std::vector<std::string> check_gemm_suite(const GemmSuite& s) {
    std::vector<std::string> problems;
    const auto problem = [&](const std::string& what) { problems.push_back(what); };
    if (s.cases.empty()) problem("has no case");
    std::vector<std::string> names;
    for (const GemmCase& c : s.cases) {
        const std::string what = "case " + (c.name.empty() ? std::string("(unnamed)") : c.name) + ": ";
        if (c.name.empty()) problem(what + "has no name");
        if (std::find(names.begin(), names.end(), c.name) != names.end()) problem(what + "repeats a name");
        names.push_back(c.name);
        if (const std::string why = check(c.desc); !why.empty()) problem(what + why);
        if (c.count < 1) problem(what + "count " + std::to_string(c.count) + " is below 1");
        if (!c.kernel.empty() && !kernel_named(c.desc, c.kernel, 132))
            problem(what + "names kernel '" + c.kernel + "', which its operand type does not have (" + kernel_names() +
                    ")");
        if (c.in_place && c.beta == 0.0f) problem(what + "is in place but beta is 0, so C is never read");
        const Desc d = with_packed_leading_dimensions(c.desc);
        if (c.in_place && d.ldc != d.ldd) problem(what + "is in place but ldc differs from ldd");
        if (c.bgrad_accumulate && !traits(d.epilogue).bgrad)
            problem(what + "accumulates into bgrad, which its epilogue does not write");
    }
    for (Contender b : s.baselines) {
        if (b == Contender::rigel) problem("names rigel as a baseline of itself");
        else if (std::none_of(s.cases.begin(), s.cases.end(), [&](const GemmCase& c) { return applies(b, c); }))
            problem(std::string("baseline ") + name(b) + " applies to no case");
    }
    for (std::size_t i = 0; i < s.baselines.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (s.baselines[i] == s.baselines[j]) problem(std::string("baseline ") + name(s.baselines[i]) + " repeats");
    return problems;
}

std::vector<GemmCase> cases_matching(std::span<const GemmCase> cases, const std::string& filter,
                                     std::string_view suite) {
    if (filter.empty()) return {cases.begin(), cases.end()};
    const std::vector<std::string> texts = case_filter_texts(filter);
    for (const std::string& t : texts)
        if (std::none_of(cases.begin(), cases.end(), [&](const GemmCase& c) { return name_matches(c.name, {t}); }))
            throw std::invalid_argument("--cases: no case of suite " + std::string(suite) + " has '" + t +
                                        "' in its name (rigel gemm list --suite " + std::string(suite) + ")");
    std::vector<GemmCase> out;
    for (const GemmCase& c : cases)
        if (name_matches(c.name, texts)) out.push_back(c);
    return out;
}

std::string kernel_text(const Choice& c) {
    return std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + (c.pingpong ? " pingpong" : "") +
           (c.fixed_epilogue ? (c.tma_store ? " fixed-epilogue" : " fixed-epilogue staged") : "") +
           (c.f32_tma ? " f32-tma" : "") +
           (c.ordered_split ? " ordered" : "") +
           (c.cluster_m > 1 ? " cluster " + std::to_string(c.cluster_m) + "x1" : "") +
           (c.group_m > 0 ? " group " + std::to_string(c.group_m) : "") +
           (c.tail_n > 0 ? " tail " + std::to_string(c.tail_n) : "") + " splits " +
           std::to_string(c.splits) + (c.split_tiles > 0 ? " of the last " + std::to_string(c.split_tiles) + " tiles" : "") +
           (c.stream_tail ? " streamed" : "") + (c.tail_gather ? " gathered" : "");
}

std::optional<Choice> case_choice(const GemmCase& c, int sms, double dram_bytes_per_s) {
    std::optional<Choice> k = kernel_named(c.desc, c.kernel.empty() ? "auto" : c.kernel, sms, dram_bytes_per_s);
    if (!k || c.group_m == 0) return k;
    // The order is the ping-pong kernels'; a kernel named for the case must be one, the dispatcher's
    // other choices keep their own.
    if (k->pingpong) {
        k->group_m = c.group_m;
    } else if (!c.kernel.empty()) {
        throw std::invalid_argument("case " + c.name + ": --group-m orders the ping-pong kernels' tiles; " +
                                    kernel_text(*k) + " is not one");
    }
    return k;
}

std::span<const RefusalCase> refusal_cases() {
    // 256^3 bf16 NT: every buffer several kilobytes, so that a pointer moved
    // 256 bytes into one still lies inside it.
    constexpr Desc base{.m = 256, .n = 256, .k = 256, .a_op = Op::n, .b_op = Op::t};
    const auto with = [&](auto&& change) {
        Desc d = base;
        change(d);
        return d;
    };
    static const std::vector<RefusalCase> cases{
        {.name = "fp8_layout_NN",
         .desc = with([](Desc& d) { d.a_type = d.b_type = Type::e4m3; d.b_op = Op::n; }),
         .expect = "fp8 takes layout NT"},
        {.name = "lda_below_extent", .desc = with([](Desc& d) { d.lda = 248; }),
         .expect = "lda 248 is smaller than the 256 elements"},
        {.name = "ldb_not_16_bytes", .desc = with([](Desc& d) { d.ldb = 260; }),
         .expect = "must be a multiple of 16 (TMA row strides)"},
        {.name = "ldd_below_extent", .desc = with([](Desc& d) { d.ldd = 255; }),
         .expect = "ldd 255 is smaller than N = 256"},
        {.name = "mixed_operand_types", .desc = with([](Desc& d) { d.b_type = Type::f16; }),
         .expect = "A and B must have one type"},
        {.name = "fp8_output", .desc = with([](Desc& d) { d.d_type = Type::e4m3; }),
         .expect = "D must be f32, bf16 or f16"},
        {.name = "empty_shape", .desc = with([](Desc& d) { d.k = 0; }), .expect = "M, N and K must be at least 1"},
        {.name = "misaligned_a", .desc = base, .breakage = Breakage::misaligned_a,
         .expect = "A and B must start on 16-byte boundaries"},
        {.name = "misaligned_b", .desc = with([](Desc& d) { d.epilogue = Epilogue::bias_gelu; }),
         .breakage = Breakage::misaligned_b, .expect = "A and B must start on 16-byte boundaries"},
        {.name = "null_d", .desc = base, .breakage = Breakage::null_d, .expect = "A, B and D must not be null"},
        {.name = "d_aliases_a", .desc = base, .breakage = Breakage::d_aliases_a, .expect = "D overlaps A or B"},
        {.name = "d_aliases_b", .desc = with([](Desc& d) { d.d_type = Type::f32; }),
         .breakage = Breakage::d_aliases_b, .expect = "D overlaps A or B"},
        {.name = "c_missing", .desc = base, .breakage = Breakage::c_missing, .beta = 1.0f,
         .expect = "beta is not 0, so C must not be null"},
        {.name = "c_overlaps_d", .desc = base, .breakage = Breakage::c_overlaps_d, .beta = 1.0f,
         .expect = "C partly overlaps D"},
        {.name = "bias_missing", .desc = with([](Desc& d) { d.epilogue = Epilogue::bias_gelu; }),
         .breakage = Breakage::bias_missing, .expect = "epilogue bias_gelu needs a bias"},
        {.name = "aux_missing", .desc = with([](Desc& d) { d.epilogue = Epilogue::bias_gelu_aux; }),
         .breakage = Breakage::aux_missing, .expect = "epilogue bias_gelu_aux needs aux"},
        {.name = "bgrad_missing", .desc = with([](Desc& d) { d.epilogue = Epilogue::dgelu_bgrad; }),
         .breakage = Breakage::bgrad_missing, .expect = "epilogue dgelu_bgrad needs bgrad"},
        {.name = "accumulate_without_bgrad", .desc = with([](Desc& d) { d.epilogue = Epilogue::bias_gelu_aux; }),
         .breakage = Breakage::accumulate_without_bgrad,
         .expect = "bgrad_accumulate adds into bgrad, which epilogue bias_gelu_aux does not write"},
    };
    return cases;
}

RefusalLayout refusal_layout(const Desc& desc, float beta, Breakage breakage, std::uintptr_t base) {
    RefusalLayout out;
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueTraits e = traits(d.epilogue);
    const auto rows_of = [](Op op, std::int64_t n_rows, std::int64_t t_rows) { return op == Op::n ? n_rows : t_rows; };
    const auto matrix = [](std::int64_t rows, std::int64_t ld, Type t) {
        return static_cast<std::size_t>(rows * ld * type_bytes(t));
    };
    const std::size_t out_bytes = static_cast<std::size_t>(type_bytes(d.d_type));
    // Each buffer on its own 256-byte boundary, with 256 bytes to spare past its end.
    std::size_t at = 0;
    const auto place = [&](std::size_t bytes) {
        const std::size_t start = at;
        at += (bytes + 256 + 255) / 256 * 256;
        return reinterpret_cast<void*>(base + start);
    };
    out.args.a = place(matrix(rows_of(d.a_op, d.m, d.k), d.lda, d.a_type));
    out.args.b = place(matrix(rows_of(d.b_op, d.k, d.n), d.ldb, d.b_type));
    out.args.d = place(matrix(d.m, d.ldd, d.d_type));
    if (beta != 0.0f) out.args.c = place(matrix(d.m, d.ldc, d.d_type));
    if (e.bias) out.args.bias = place(static_cast<std::size_t>(d.n) * out_bytes);
    if (e.aux_in || e.aux_out) out.args.aux = place(matrix(d.m, d.ldaux, d.d_type));
    if (e.bgrad) out.args.bgrad = static_cast<float*>(place(static_cast<std::size_t>(d.n) * 4));
    out.args.beta = beta;
    out.bytes = at;

    const auto moved = [](const void* p, std::size_t by) {
        return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) + by);
    };
    switch (breakage) {
        case Breakage::none: break;
        case Breakage::misaligned_a: out.args.a = moved(out.args.a, 2); break;
        case Breakage::misaligned_b: out.args.b = moved(out.args.b, 2); break;
        case Breakage::null_d: out.args.d = nullptr; break;
        case Breakage::d_aliases_a: out.args.d = moved(out.args.a, 256); break;
        case Breakage::d_aliases_b: out.args.d = moved(out.args.b, 256); break;
        case Breakage::c_missing: out.args.c = nullptr; break;
        case Breakage::c_overlaps_d: out.args.c = moved(out.args.d, 256); break;
        case Breakage::bias_missing: out.args.bias = nullptr; break;
        case Breakage::aux_missing: out.args.aux = nullptr; break;
        case Breakage::bgrad_missing: out.args.bgrad = nullptr; break;
        case Breakage::accumulate_without_bgrad: out.args.bgrad_accumulate = true; break;
    }
    return out;
}

}  // namespace rigel::gemm
