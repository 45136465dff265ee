// The GEMM suites: every case a plan can be built for, the verify suite
// covering every combination the library promises, the model suites holding
// the products of a real training step, and every refusal refused by the
// host checks for the reason the GPU test expects.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "gemm/suites.hpp"

using namespace rigel::gemm;

namespace {

constexpr int kH200Sms = 132;

const GemmSuite& suite(const char* name) {
    const GemmSuite* s = find_gemm_suite(name);
    if (!s) throw std::logic_error(std::string("no suite ") + name);
    return *s;
}

const GemmCase* find_case(const GemmSuite& s, const std::string& name) {
    for (const GemmCase& c : s.cases)
        if (c.name == name) return &c;
    return nullptr;
}

double flops(const GemmCase& c) { return 2.0 * c.desc.m * c.desc.n * c.desc.k; }

// The kernel a case runs on the H200: the one it names, or the dispatcher's.
Choice kernel_of(const GemmCase& c) {
    const auto k = kernel_named(c.desc, c.kernel.empty() ? "auto" : c.kernel, kH200Sms);
    if (!k) throw std::logic_error("case " + c.name + " names a kernel its type does not have");
    return *k;
}

}  // namespace

TEST(GemmSuites, EverySuiteHolds) {
    for (const GemmSuite& s : gemm_suites()) {
        EXPECT_FALSE(s.purpose.empty()) << s.name;
        const auto problems = check_gemm_suite(s);
        EXPECT_TRUE(problems.empty()) << s.name << ": " << problems.front();
    }
    EXPECT_EQ(find_gemm_suite("nonsense"), nullptr);
    std::vector<std::string> bench;
    for (const GemmSuite* s : bench_suites()) bench.emplace_back(s->name);
    EXPECT_EQ(bench, (std::vector<std::string>{"gpt2", "gpt2_dw", "llama7b", "fused", "layouts", "small"}));
}

TEST(GemmSuites, Gpt2DwIsTheTrainersWeightGradients) {
    // The gpt2 suite's five TN weight gradients, as src/cuda/train runs them: f32 D accumulated in place.
    const GemmSuite& dw = suite("gpt2_dw");
    std::vector<std::string> names;
    for (const GemmCase& c : dw.cases) {
        names.push_back(c.name);
        EXPECT_EQ(c.desc.d_type, Type::f32) << c.name;
        EXPECT_TRUE(c.in_place && c.beta == 1.0f) << c.name;
        EXPECT_EQ(layout_name(c.desc.a_op, c.desc.b_op), "TN") << c.name;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"bwd_lm_head_dw", "bwd_mlp_down_dw", "bwd_mlp_up_dw", "bwd_attn_proj_dw",
                                               "bwd_qkv_dw"}));
    // The split ping-pong takes each of them.
    for (const GemmCase& c : dw.cases) EXPECT_TRUE(kernel_named(c.desc, "pingpong_splitk", kH200Sms)) << c.name;
}

TEST(GemmSuites, TheCheckFindsWhatIsWrong) {
    GemmSuite s{.name = "t", .purpose = "p",
                .cases = {GemmCase{.name = "a", .desc = Desc{.m = 8, .n = 8, .k = 8}},
                          GemmCase{.name = "a", .desc = Desc{.m = 8, .n = 8, .k = 0}},
                          GemmCase{.name = "c", .desc = Desc{.m = 8, .n = 8, .k = 8}, .in_place = true, .count = 0},
                          GemmCase{.name = "d", .desc = Desc{.m = 8, .n = 8, .k = 8, .ldc = 16}, .beta = 1,
                                   .in_place = true},
                          GemmCase{.name = "e", .desc = Desc{.m = 8, .n = 8, .k = 8}, .kernel = "64x64"},
                          GemmCase{.name = "f",
                                   .desc = Desc{.m = 64, .n = 64, .k = 64, .a_type = Type::e4m3, .b_type = Type::e4m3,
                                                .b_op = Op::t},
                                   .kernel = "pingpong"}},
                .baselines = {Contender::rigel, Contender::rigel_decomposed, Contender::cublaslt,
                              Contender::cublaslt}};
    const auto p = check_gemm_suite(s);
    const auto has = [&](const std::string& part) {
        return std::any_of(p.begin(), p.end(), [&](const std::string& x) { return x.find(part) != x.npos; });
    };
    EXPECT_TRUE(has("case a: repeats a name"));
    EXPECT_TRUE(has("case a: M, N and K must be at least 1"));
    EXPECT_TRUE(has("case c: count 0 is below 1"));
    EXPECT_TRUE(has("case c: is in place but beta is 0"));
    EXPECT_TRUE(has("case d: is in place but ldc differs from ldd"));
    EXPECT_TRUE(has("names rigel as a baseline of itself"));
    EXPECT_TRUE(has("baseline rigel_decomposed applies to no case"));
    EXPECT_TRUE(has("baseline cublaslt repeats"));
    EXPECT_TRUE(has("case e: names kernel '64x64'"));
    EXPECT_TRUE(has("case f: names kernel 'pingpong', which its operand type does not have"));
    EXPECT_EQ(p.size(), 10u);
    EXPECT_FALSE(check_gemm_suite(GemmSuite{.name = "empty"}).empty());
}

TEST(GemmSuites, VerifyCoversEveryCombinationOnShapesOfNoTile) {
    const GemmSuite& v = suite("verify");
    EXPECT_TRUE(v.baselines.empty());
    std::set<std::tuple<std::string, Type, Type, Epilogue>> seen;
    bool scaled = false, in_place = false;
    for (const GemmCase& c : v.cases) {
        const Desc d = with_packed_leading_dimensions(c.desc);
        seen.insert({layout_name(d.a_op, d.b_op), d.a_type, d.d_type, d.epilogue});
        scaled |= c.alpha != 1.0f && c.beta != 0.0f && !c.in_place;
        in_place |= c.in_place && c.beta != 0.0f;
        if (c.name.find("_splitk") != std::string::npos) continue;
        // Multiples of no tile: M of 128, N of 128, K of 64.
        EXPECT_NE(d.m % 128, 0) << c.name;
        EXPECT_NE(d.n % 128, 0) << c.name;
        EXPECT_NE(d.k % 64, 0) << c.name;
    }
    for (const char* layout : {"NN", "NT", "TN", "TT"})
        for (Type ab : {Type::bf16, Type::f16})
            for (Type out : {Type::f32, Type::bf16, Type::f16})
                for (int e = 0; e <= static_cast<int>(Epilogue::dgelu_bgrad); ++e)
                    EXPECT_TRUE(seen.count({layout, ab, out, static_cast<Epilogue>(e)}))
                        << layout << " " << name(ab) << " -> " << name(out) << " " << name(static_cast<Epilogue>(e));
    for (Type ab : {Type::e4m3, Type::e5m2})
        for (Type out : {Type::f32, Type::bf16, Type::f16})
            for (int e = 0; e <= static_cast<int>(Epilogue::dgelu_bgrad); ++e)
                EXPECT_TRUE(seen.count({"NT", ab, out, static_cast<Epilogue>(e)}));
    EXPECT_TRUE(scaled);
    EXPECT_TRUE(in_place);
}

TEST(GemmSuites, VerifyHasLeadingDimensionsPastTheExtentsThatTmaTakes) {
    int padded = 0;
    for (const GemmCase& c : suite("verify").cases) {
        const Desc d = c.desc;
        if (d.lda == 0) continue;
        ++padded;
        const std::int64_t a_cols = d.a_op == Op::n ? d.k : d.m, b_cols = d.b_op == Op::n ? d.n : d.k;
        EXPECT_GT(d.lda, a_cols) << c.name;
        EXPECT_GT(d.ldb, b_cols) << c.name;
        EXPECT_GT(d.ldd, d.n) << c.name;
        EXPECT_EQ(d.lda * type_bytes(d.a_type) % 16, 0) << c.name;
        EXPECT_EQ(d.ldb * type_bytes(d.b_type) % 16, 0) << c.name;
        // D's rows 290 floats apart: the fp32-D TMA kernel's case for rows its copies cannot take.
        if (c.name.find("_ldd290_") == std::string::npos) {
            EXPECT_EQ(d.ldd % 8, 0) << c.name;
        }
    }
    EXPECT_GT(padded, 200);
}

TEST(GemmSuites, VerifyRunsEveryEpilogueSplitAndWhole) {
    std::set<std::pair<Type, Epilogue>> split, whole;
    for (const GemmCase& c : suite("verify").cases) {
        const Choice ch = kernel_of(c);
        if (c.name.find("_splitk") != std::string::npos) {
            EXPECT_GT(ch.splits, 1) << c.name << ": " << ch.why;
        }
        (ch.splits > 1 ? split : whole).insert({c.desc.a_type, c.desc.epilogue});
    }
    for (Type ab : {Type::bf16, Type::f16, Type::e4m3, Type::e5m2})
        for (int e = 0; e <= static_cast<int>(Epilogue::dgelu_bgrad); ++e) {
            EXPECT_TRUE(whole.count({ab, static_cast<Epilogue>(e)})) << name(ab) << " " << e;
            if (ab != Type::f16) {
                EXPECT_TRUE(split.count({ab, static_cast<Epilogue>(e)})) << name(ab) << " " << e;
            }
        }
}

TEST(GemmSuites, VerifyRunsEveryHalfPrecisionKernelOnEveryCombination) {
    // (layout, operand type, output type, epilogue, kernel): each of the
    // table's unsplit 16-bit kernels checked on every combination.
    std::set<std::tuple<std::string, Type, Type, Epilogue, std::string>> seen;
    for (const GemmCase& c : suite("verify").cases) {
        const Choice ch = kernel_of(c);
        if (ch.splits > 1) continue;
        seen.insert({layout_name(c.desc.a_op, c.desc.b_op), c.desc.a_type, c.desc.d_type, c.desc.epilogue,
                     kernel_text(ch)});
    }
    for (const char* kernel : {"128x256 splits 1", "128x128 splits 1", "128x128 pingpong splits 1"})
        for (const char* layout : {"NN", "NT", "TN", "TT"})
            for (Type ab : {Type::bf16, Type::f16})
                for (Type out : {Type::f32, Type::bf16, Type::f16})
                    for (int e = 0; e <= static_cast<int>(Epilogue::dgelu_bgrad); ++e)
                        EXPECT_TRUE(seen.count({layout, ab, out, static_cast<Epilogue>(e), kernel}))
                            << kernel << " " << layout << " " << name(ab) << " -> " << name(out) << " "
                            << name(static_cast<Epilogue>(e));
}

TEST(GemmSuites, VerifyRunsEveryFixedEpilogueKernel) {
    // The dispatcher's compiled-in kernels on every layout, each with a last chunk of columns inside N
    // (520: 8 columns, paired) and one of a single column (289), beside chunks of 32 (16-byte path).
    std::set<std::tuple<std::string, Epilogue, std::int64_t>> seen;  // (layout, epilogue, N)
    for (const GemmCase& c : suite("verify").cases)
        if (kernel_of(c).fixed_epilogue) seen.insert({layout_name(c.desc.a_op, c.desc.b_op), c.desc.epilogue, c.desc.n});
    for (const char* layout : {"NN", "NT", "TN", "TT"})
        for (Epilogue e : kFixedEpilogues)
            for (std::int64_t n : {520, 289})
                EXPECT_TRUE(seen.count({layout, e, n})) << layout << " " << name(e) << " N " << n;
}

TEST(GemmSuites, VerifyRunsBothStorePathsOfTheFixedKernels) {
    // TMA stores (the dispatcher's fixed kernels with none, bias or bias_gelu_aux, beta 0, N and ldd
    // multiples of 8: plan.cu's rule) and staged stores (any other call, and "fixed_staged"), each on
    // every layout and fixed epilogue that has both; the TMA stores also over many tiles.
    // The verify runs allocate every matrix on a 256-byte boundary.
    const auto tma = [](const GemmCase& c, const Choice& ch) {
        void* const at = reinterpret_cast<void*>(std::uintptr_t{256});
        return tma_stores(with_packed_leading_dimensions(c.desc), ch, c.desc.epilogue,
                          Args{.a = at, .b = at, .d = at, .c = at, .bias = at, .aux = at, .beta = c.beta});
    };
    std::set<std::tuple<std::string, Epilogue, bool>> seen;  // (layout, epilogue, TMA stores)
    std::set<std::pair<std::string, Epilogue>> many;         // TMA stores on more tiles than SMs
    for (const GemmCase& c : suite("verify").cases) {
        const Choice ch = kernel_of(c);
        if (!ch.fixed_epilogue) continue;
        const std::string layout = layout_name(c.desc.a_op, c.desc.b_op);
        seen.insert({layout, c.desc.epilogue, tma(c, ch)});
        if (tma(c, ch) && (c.desc.m / 128) * (c.desc.n / 128) > 132) many.insert({layout, c.desc.epilogue});
    }
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
        for (Epilogue e : {Epilogue::none, Epilogue::bias, Epilogue::bias_gelu_aux})
            for (bool t : {true, false}) EXPECT_TRUE(seen.count({layout, e, t})) << layout << " " << name(e) << t;
        EXPECT_TRUE(seen.count({layout, Epilogue::dgelu_bgrad, false})) << layout;
        EXPECT_TRUE(many.count({layout, Epilogue::bias})) << layout;
        EXPECT_TRUE(many.count({layout, Epilogue::bias_gelu_aux})) << layout;
    }
}

TEST(GemmSuites, VerifyRunsThePingPongSplitKEverywhere) {
    // Every layout and 16-bit type, split into several units: with D cleared (beta 0) and in place
    // (C is D, beta 1).
    std::set<std::tuple<std::string, Type, bool>> seen;  // (layout, type, in place)
    for (const GemmCase& c : suite("verify").cases) {
        if (c.kernel != "pingpong_splitk") continue;
        const Choice ch = kernel_of(c);
        EXPECT_GT(ch.splits, 1) << c.name;
        if (ch.splits > 1) seen.insert({layout_name(c.desc.a_op, c.desc.b_op), c.desc.a_type, c.in_place});
        EXPECT_TRUE(c.beta == 0.0f || (c.in_place && c.beta == 1.0f)) << c.name;
    }
    for (const char* layout : {"NN", "NT", "TN", "TT"})
        for (Type t : {Type::bf16, Type::f16})
            for (bool in_place : {false, true})
                EXPECT_TRUE(seen.count({layout, t, in_place})) << layout << " " << name(t) << " " << in_place;
}

TEST(GemmSuites, CasesMatchingKeepsTheNamedCasesInOrder) {
    const GemmSuite& g = suite("gpt2");
    EXPECT_EQ(cases_matching(g.cases, "", "gpt2").size(), g.cases.size());
    const auto two = cases_matching(g.cases, "fwd_lm_head,fwd_qkv", "gpt2");
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].name, "fwd_qkv");  // the suite's order, not the filter's
    EXPECT_EQ(two[1].name, "fwd_lm_head");
    // A text is a part of a name: every forward product.
    for (const GemmCase& c : cases_matching(g.cases, "fwd_", "gpt2")) EXPECT_EQ(c.name.rfind("fwd_", 0), 0u) << c.name;
    // A text that names nothing, or an empty one, is refused in one sentence.
    const auto refused = [&](const std::string& filter, const std::string& says) {
        try {
            (void)cases_matching(g.cases, filter, "gpt2");
            ADD_FAILURE() << filter << " was taken";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused("fwd_qkv,nope", "no case of suite gpt2 has 'nope'");
    refused("fwd_qkv,", "empty text");
    refused(",fwd_qkv", "empty text");
    EXPECT_TRUE(rigel::name_matches("bwd_qkv_dw", rigel::case_filter_texts("x,qkv_d")));
    EXPECT_FALSE(rigel::name_matches("bwd_qkv_dw", rigel::case_filter_texts("x,y")));
}

TEST(GemmSuites, VerifyGivesPersistentCtasSeveralTilesOnEveryKernel) {
    // A ping-pong CTA's second consumer works only from its CTA's second tile on.
    std::set<std::pair<std::string, std::string>> seen;  // (layout, kernel)
    for (const GemmCase& c : suite("verify").cases) {
        const Choice ch = kernel_of(c);
        const std::int64_t tiles = (c.desc.m + ch.tile_m - 1) / ch.tile_m * ((c.desc.n + ch.tile_n - 1) / ch.tile_n);
        if (ch.splits == 1 && tiles > kH200Sms) seen.insert({layout_name(c.desc.a_op, c.desc.b_op), kernel_text(ch)});
    }
    for (const char* kernel : {"128x256 splits 1", "128x128 splits 1", "128x128 pingpong splits 1",
                               "128x128 pingpong fixed-epilogue splits 1"})
        for (const char* layout : {"NN", "NT", "TN", "TT"}) EXPECT_TRUE(seen.count({layout, kernel})) << layout << " " << kernel;
}

// The kernel that loads C or aux a tile ahead waits on a barrier whose phase follows each consumer's tile
// count: in every layout, with C (bias, beta 1) and with aux (dGELU), a case whose every consumer takes at
// least 3 tiles on 132 SMs (2 x 3 a CTA), so that the phase comes back to where it began.
TEST(GemmSuites, VerifyGivesTheLoadingKernelsConsumersThreeTilesOrMore) {
    std::set<std::pair<std::string, Epilogue>> seen;  // (layout, epilogue)
    for (const GemmCase& c : suite("verify").cases) {
        const Choice ch = kernel_of(c);
        if (!ch.tma_load_c || ch.splits != 1 || (c.beta == 0.0f) != (c.desc.epilogue == Epilogue::dgelu_bgrad)) continue;
        const std::int64_t tiles = (c.desc.m + ch.tile_m - 1) / ch.tile_m * ((c.desc.n + ch.tile_n - 1) / ch.tile_n);
        if (tiles >= 2 * 3 * kH200Sms) seen.insert({layout_name(c.desc.a_op, c.desc.b_op), c.desc.epilogue});
    }
    for (Epilogue e : {Epilogue::bias, Epilogue::dgelu_bgrad})
        for (const char* layout : {"NN", "NT", "TN", "TT"}) EXPECT_TRUE(seen.count({layout, e})) << layout << " " << name(e);
}

TEST(GemmSuites, Gpt2HoldsEveryProductOfOneTrainingStep) {
    const GemmSuite& g = suite("gpt2");
    EXPECT_EQ(g.cases.size(), 15u);
    for (const GemmCase& c : g.cases) {
        EXPECT_EQ(c.desc.a_type, Type::bf16) << c.name;
        EXPECT_EQ(c.desc.d_type, Type::bf16) << c.name;
    }
    const GemmCase* up = find_case(g, "fwd_mlp_up");
    ASSERT_TRUE(up);
    EXPECT_EQ(std::tie(up->desc.m, up->desc.n, up->desc.k), std::make_tuple(16384, 3072, 768));
    EXPECT_EQ(up->desc.epilogue, Epilogue::bias_gelu_aux);
    EXPECT_EQ(layout_name(up->desc.a_op, up->desc.b_op), "NT");
    // The down projection's input gradient is where dgelu_bgrad belongs: its
    // N is the MLP width, the shape of the aux the up projection kept.
    const GemmCase* dgelu = find_case(g, "bwd_mlp_down_dx");
    ASSERT_TRUE(dgelu);
    EXPECT_EQ(dgelu->desc.epilogue, Epilogue::dgelu_bgrad);
    EXPECT_EQ(std::tie(dgelu->desc.m, dgelu->desc.n), std::tie(up->desc.m, up->desc.n));
    EXPECT_EQ(layout_name(dgelu->desc.a_op, dgelu->desc.b_op), "NN");
    const GemmCase* head_dw = find_case(g, "bwd_lm_head_dw");
    ASSERT_TRUE(head_dw);
    EXPECT_EQ(std::tie(head_dw->desc.m, head_dw->desc.n, head_dw->desc.k), std::make_tuple(50304, 768, 16384));
    EXPECT_EQ(layout_name(head_dw->desc.a_op, head_dw->desc.b_op), "TN");
    for (const char* residual : {"fwd_attn_proj", "fwd_mlp_down"}) {
        const GemmCase* c = find_case(g, residual);
        ASSERT_TRUE(c);
        EXPECT_EQ(c->beta, 1.0f);
        EXPECT_EQ(c->desc.epilogue, Epilogue::bias);
    }
    // One step's flops: 6 x tokens x parameters in the linear layers (2 forward,
    // 4 backward), 12 layers of 12 d^2 plus the tied 50304 x 768 head.
    double step = 0;
    for (const GemmCase& c : g.cases) step += flops(c) * c.count;
    const double params = 12.0 * 12 * 768 * 768 + 50304.0 * 768;
    EXPECT_DOUBLE_EQ(step, 6.0 * 16384 * params);
}

TEST(GemmSuites, Llama7bHoldsItsThreeShapesForwardAndBackward) {
    const GemmSuite& l = suite("llama7b");
    std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::string>> shapes;
    for (const GemmCase& c : l.cases)
        shapes.insert({c.desc.m, c.desc.n, c.desc.k, layout_name(c.desc.a_op, c.desc.b_op)});
    for (const auto& f : {std::make_tuple(4096, 11008, 4096), std::make_tuple(4096, 4096, 11008),
                          std::make_tuple(4096, 12288, 4096)}) {
        const auto [m, n, k] = f;
        EXPECT_TRUE(shapes.count({m, n, k, "NT"})) << m << "x" << n << "x" << k;
        EXPECT_TRUE(shapes.count({m, k, n, "NN"})) << "dX of " << n;  // dX = dY W: M x K from K = N
        EXPECT_TRUE(shapes.count({n, k, m, "TN"})) << "dW of " << n;  // dW = dY^T X: N x K over the tokens
    }
    EXPECT_EQ(l.cases.size(), 9u);
}

TEST(GemmSuites, TheTimedSuitesAreWhatTheIssueNames) {
    std::vector<std::int64_t> fused;
    for (const GemmCase& c : suite("fused").cases) {
        EXPECT_EQ(c.desc.epilogue, Epilogue::bias_gelu);
        EXPECT_TRUE(c.desc.m == c.desc.n && c.desc.n == c.desc.k);
        fused.push_back(c.desc.n);
    }
    EXPECT_EQ(fused, (std::vector<std::int64_t>{512, 1024, 2048, 4096, 8192, 16384}));
    std::set<std::string> layouts;
    for (const GemmCase& c : suite("layouts").cases) layouts.insert(layout_name(c.desc.a_op, c.desc.b_op));
    EXPECT_EQ(layouts.size(), 4u);
    for (const GemmCase& c : suite("small").cases) EXPECT_TRUE(applies(Contender::cublas, c)) << c.name;
    EXPECT_NE(std::find(suite("small").baselines.begin(), suite("small").baselines.end(), Contender::cublas),
              suite("small").baselines.end());
}

TEST(GemmSuites, BaselinesApplyWhereTheyComputeTheSameThing) {
    const GemmCase plain{.name = "p", .desc = Desc{.m = 64, .n = 64, .k = 64}};
    GemmCase gelu = plain;
    gelu.desc.epilogue = Epilogue::bias_gelu;
    GemmCase residual = plain;
    residual.beta = 1.0f;
    GemmCase in_place = residual;
    in_place.in_place = true;
    GemmCase fp8 = plain;
    fp8.desc.a_type = fp8.desc.b_type = Type::e4m3;
    GemmCase f16_out = plain;
    f16_out.desc.d_type = Type::f16;
    EXPECT_FALSE(applies(Contender::rigel, plain));
    EXPECT_FALSE(applies(Contender::rigel_decomposed, plain));
    EXPECT_TRUE(applies(Contender::rigel_decomposed, gelu));
    EXPECT_TRUE(applies(Contender::cublaslt, gelu));
    EXPECT_TRUE(applies(Contender::cublas, plain));
    EXPECT_FALSE(applies(Contender::cublas, gelu));
    EXPECT_FALSE(applies(Contender::cublas, residual));
    EXPECT_TRUE(applies(Contender::cublas, in_place));
    EXPECT_FALSE(applies(Contender::cublas, fp8));
    EXPECT_FALSE(applies(Contender::cublas, f16_out));  // bf16 in, f16 out: no cublasGemmEx type set
    EXPECT_STREQ(name(Contender::rigel_decomposed), "rigel_decomposed");
    Choice split;
    split.splits = 3;
    EXPECT_EQ(kernel_text(split), "128x256 splits 3");
}

TEST(GemmSuites, EveryRefusalIsRefusedForItsReason) {
    std::set<std::string> names;
    int calls = 0;
    // A fake device address: the layout only computes addresses.
    constexpr std::uintptr_t base = std::uintptr_t{1} << 40;
    for (const RefusalCase& r : refusal_cases()) {
        EXPECT_TRUE(names.insert(r.name).second) << r.name;
        ASSERT_FALSE(r.expect.empty()) << r.name;
        const std::string by_desc = check(r.desc);
        if (r.breakage == Breakage::none) {
            EXPECT_NE(by_desc.find(r.expect), std::string::npos) << r.name << ": " << by_desc;
            continue;
        }
        ++calls;
        EXPECT_EQ(by_desc, "") << r.name;
        const RefusalLayout l = refusal_layout(r.desc, r.beta, r.breakage, base);
        EXPECT_GT(l.bytes, 0u);
        const std::string by_args = check_args(r.desc, l.args);
        EXPECT_NE(by_args.find(r.expect), std::string::npos) << r.name << ": '" << by_args << "'";
        // The same call unbroken is accepted: the breakage alone is refused.
        const RefusalLayout intact = refusal_layout(r.desc, r.beta, Breakage::none, base);
        EXPECT_EQ(check_args(r.desc, intact.args), "") << r.name;
        EXPECT_EQ(intact.bytes, l.bytes) << r.name;
        // Every pointer the call passes lies inside the allocation.
        for (const void* p : {l.args.a, l.args.b, static_cast<const void*>(l.args.d), l.args.c, l.args.bias,
                              static_cast<const void*>(l.args.aux), static_cast<const void*>(l.args.bgrad)})
            if (p) {
                const auto at = reinterpret_cast<std::uintptr_t>(p);
                EXPECT_GE(at, base) << r.name;
                EXPECT_LT(at, base + l.bytes) << r.name;
            }
    }
    EXPECT_GE(calls, 8);
    for (const char* must : {"misaligned_a", "lda_below_extent", "d_aliases_a", "fp8_layout_NN"})
        EXPECT_TRUE(names.count(must)) << must;
}
