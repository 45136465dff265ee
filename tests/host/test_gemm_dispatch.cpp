// The library's host half (src/gemm/dispatch.cpp): names, the shape check,
// the argument check and the dispatcher, on any machine.
#include <gtest/gtest.h>

#include <utility>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "gemm/narrow_tail.hpp"
#include "gemm/suites.hpp"
#include "rigel/gemm.hpp"

namespace rigel::gemm {
namespace {

constexpr Type kTypes[] = {Type::f32, Type::bf16, Type::f16, Type::e4m3, Type::e5m2};
constexpr Epilogue kEpilogues[] = {Epilogue::none,          Epilogue::bias,          Epilogue::bias_relu,
                                   Epilogue::bias_gelu,     Epilogue::bias_gelu_erf, Epilogue::bias_gelu_aux,
                                   Epilogue::dgelu_bgrad};
constexpr int kH200Sms = 132;
constexpr double kH100Dram = 3.35e12;  // an H100 SXM's DRAM peak, bytes/s: below the 4 TB/s rules 5a, 12 and 13 ask

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A bf16 product with a bf16 D, its leading dimensions packed.
Desc bf16_product(std::int64_t m, std::int64_t n, std::int64_t k, Op a_op, Op b_op, Epilogue e = Epilogue::none) {
    return with_packed_leading_dimensions(Desc{.m = m, .n = n, .k = k, .a_type = Type::bf16, .b_type = Type::bf16,
                                               .a_op = a_op, .b_op = b_op, .d_type = Type::bf16, .epilogue = e});
}

Desc square(std::int64_t n, Type t = Type::bf16) {
    return {.m = n, .n = n, .k = n, .a_type = t, .b_type = t, .a_op = Op::n, .b_op = Op::t};
}

TEST(GemmNames, TypesEpiloguesAndLayoutsRoundTrip) {
    std::vector<std::string> seen;
    for (Type t : kTypes) {
        Type back = Type::f32;
        ASSERT_TRUE(parse_type(name(t), back)) << name(t);
        EXPECT_EQ(back, t);
        seen.emplace_back(name(t));
    }
    for (Epilogue e : kEpilogues) {
        Epilogue back = Epilogue::none;
        ASSERT_TRUE(parse_epilogue(name(e), back)) << name(e);
        EXPECT_EQ(back, e);
        seen.emplace_back(name(e));
    }
    for (Op a : {Op::n, Op::t})
        for (Op b : {Op::n, Op::t}) {
            Op pa = a == Op::n ? Op::t : Op::n, pb = b == Op::n ? Op::t : Op::n;
            ASSERT_TRUE(parse_layout(layout_name(a, b), pa, pb));
            EXPECT_EQ(pa, a);
            EXPECT_EQ(pb, b);
            seen.push_back(layout_name(a, b));
        }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "every name is distinct";
    EXPECT_EQ(layout_name(Op::n, Op::t), "NT");  // a_op, then b_op
    EXPECT_EQ(type_bytes(Type::f32), 4);
    EXPECT_EQ(type_bytes(Type::bf16), 2);
    EXPECT_EQ(type_bytes(Type::f16), 2);
    EXPECT_EQ(type_bytes(Type::e4m3), 1);
    EXPECT_EQ(type_bytes(Type::e5m2), 1);
}

TEST(GemmNames, UnknownNamesAreRefusedAndLeaveTheOutputAlone) {
    Type t = Type::f16;
    EXPECT_FALSE(parse_type("fp16", t));
    EXPECT_FALSE(parse_type("", t));
    EXPECT_EQ(t, Type::f16);
    Epilogue e = Epilogue::bias;
    EXPECT_FALSE(parse_epilogue("gelu", e));
    EXPECT_FALSE(parse_epilogue("bias_gelu ", e));
    EXPECT_EQ(e, Epilogue::bias);
    Op a = Op::t, b = Op::t;
    for (const char* bad : {"", "N", "NTN", "NX", "XT", "tn "}) EXPECT_FALSE(parse_layout(bad, a, b)) << bad;
    EXPECT_EQ(a, Op::t);
    EXPECT_EQ(b, Op::t);
    ASSERT_TRUE(parse_layout("tn", a, b));  // either case
    EXPECT_EQ(a, Op::t);
    EXPECT_EQ(b, Op::n);
}

TEST(GemmNames, EpilogueTraitsSayWhatEachReadsAndWrites) {
    for (Epilogue e : kEpilogues) {
        const EpilogueTraits t = traits(e);
        const std::string n = name(e);
        EXPECT_EQ(t.bias, n.rfind("bias", 0) == 0) << n;
        EXPECT_EQ(t.aux_out, e == Epilogue::bias_gelu_aux) << n;
        EXPECT_EQ(t.aux_in, e == Epilogue::dgelu_bgrad) << n;
        EXPECT_EQ(t.bgrad, e == Epilogue::dgelu_bgrad) << n;
    }
}

TEST(GemmCheck, PackedLeadingDimensionsFollowTheStoredShape) {
    Desc d{.m = 30, .n = 50, .k = 70, .a_op = Op::t, .b_op = Op::t};
    Desc p = with_packed_leading_dimensions(d);
    EXPECT_EQ(p.lda, 30);  // A op t: stored K x M
    EXPECT_EQ(p.ldb, 70);  // B op t: stored N x K
    EXPECT_EQ(p.ldd, 50);
    EXPECT_EQ(p.ldc, 50);
    EXPECT_EQ(p.ldaux, 50);
    d.a_op = d.b_op = Op::n;
    d.ldd = 64;
    p = with_packed_leading_dimensions(d);
    EXPECT_EQ(p.lda, 70);
    EXPECT_EQ(p.ldb, 50);
    EXPECT_EQ(p.ldd, 64);  // given ones stay
}

TEST(GemmCheck, AcceptsEveryLayoutOutputAndEpilogueOnPaddedOddShapes) {
    for (Type in : {Type::bf16, Type::f16})
        for (Type out : {Type::f32, Type::bf16, Type::f16})
            for (Epilogue e : kEpilogues)
                for (Op a : {Op::n, Op::t})
                    for (Op b : {Op::n, Op::t}) {
                        Desc d{.m = 37, .n = 45, .k = 29, .a_type = in, .b_type = in, .a_op = a, .b_op = b,
                               .d_type = out, .epilogue = e};
                        d.lda = d.ldb = 48;  // 96 bytes: a multiple of 16, above every stored row
                        d.ldd = d.ldc = d.ldaux = 47;
                        EXPECT_EQ(check(d), "") << name(in) << " " << layout_name(a, b) << " " << name(e);
                    }
    for (Type fp8 : {Type::e4m3, Type::e5m2}) EXPECT_EQ(check(square(4096, fp8)), "");
}

TEST(GemmCheck, RefusesFp8OutsideNtWithASentenceNamingNt) {
    for (Op a : {Op::n, Op::t})
        for (Op b : {Op::n, Op::t}) {
            if (a == Op::n && b == Op::t) continue;
            Desc d = square(256, Type::e4m3);
            d.a_op = a;
            d.b_op = b;
            const std::string why = check(d);
            EXPECT_TRUE(contains(why, "NT")) << why;
            EXPECT_TRUE(contains(why, layout_name(a, b))) << why;
            EXPECT_TRUE(contains(why, "K-major")) << why;
        }
}

TEST(GemmCheck, RefusesTypesNoKernelTakes) {
    Desc d = square(256);
    d.a_type = d.b_type = Type::f32;
    EXPECT_TRUE(contains(check(d), "A's type")) << check(d);
    d = square(256);
    d.b_type = Type::f16;
    EXPECT_TRUE(contains(check(d), "one type")) << check(d);
    // Mixed fp8 too: the library's fp8 kernels are e4m3 x e4m3 and e5m2 x e5m2
    // (src/cuda/gemm/gemm_fp8.cu).
    d = square(256, Type::e4m3);
    d.b_type = Type::e5m2;
    EXPECT_TRUE(contains(check(d), "one type")) << check(d);
    d = square(256);
    d.d_type = Type::e4m3;
    EXPECT_TRUE(contains(check(d), "D must be f32, bf16 or f16")) << check(d);
}

// Values outside the enumerations (a caller's cast, a stale struct) are refused, not read as a neighbour.
TEST(GemmCheck, RefusesValuesOutsideTheEnumerations) {
    Desc d = square(256);
    d.d_type = static_cast<Type>(97);
    EXPECT_TRUE(contains(check(d), "D must be f32, bf16 or f16")) << check(d);
    d = square(256);
    d.epilogue = static_cast<Epilogue>(97);
    EXPECT_TRUE(contains(check(d), "none of rigel's")) << check(d);
    d = square(256);
    d.b_op = static_cast<Op>(7);
    EXPECT_TRUE(contains(check(d), "Op::n or Op::t")) << check(d);
    // A leading dimension far past 2^31 is refused before it is multiplied by an element size.
    d = square(256);
    d.lda = std::int64_t{1} << 62;
    EXPECT_EQ(check(d), "leading dimensions must be below 2^31");
}

// The dispatcher never divides by an empty shape: what check() refuses, choose() names as refused
// (Plan's constructor then throws check()'s sentence). An expert of a mixture that got no tokens has M = 0.
TEST(GemmChoose, RefusedDescriptionsGetNoKernelAndNoCrash) {
    std::vector<Desc> refused;
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{0, 14336, 4096}, {4096, 0, 4096}, {-1, 768, 768},
                           {0, 768, 768}, {768, 768, 0}})
        refused.push_back(bf16_product(m, n, k, Op::n, Op::t));
    Desc f32_out = bf16_product(0, 768, 768, Op::n, Op::t);
    f32_out.d_type = Type::f32;
    refused.push_back(f32_out);
    Desc bad_type = square(512);
    bad_type.d_type = static_cast<Type>(97);
    refused.push_back(bad_type);
    for (const Desc& d : refused) {
        ASSERT_FALSE(check(d).empty());
        const Choice c = choose(d, kH200Sms);
        EXPECT_EQ(c.why, "refused: " + check(d));
    }
}

TEST(GemmCheck, RefusesShapesAndLeadingDimensionsTmaCannotTake) {
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{0, 8, 8}, {8, 0, 8}, {8, 8, 0}, {-1, 8, 8}}) {
        Desc d = square(8);
        d.m = m;
        d.n = n;
        d.k = k;
        EXPECT_EQ(check(d), "M, N and K must be at least 1");
    }
    Desc d = square(64);
    d.k = std::int64_t{1} << 31;
    EXPECT_EQ(check(d), "M, N and K must be below 2^31");

    // lda smaller than A's stored row (A op n: K elements).
    d = square(64);
    d.b_op = Op::n;
    d.lda = 56;
    EXPECT_TRUE(contains(check(d), "lda 56 is smaller than the 64 elements of a stored row of A")) << check(d);
    // A op t stores K x M: lda is measured against M.
    d = Desc{.m = 64, .n = 64, .k = 200, .a_op = Op::t, .lda = 64};
    EXPECT_EQ(check(d), "");
    d.lda = 63;
    EXPECT_TRUE(contains(check(d), "lda 63")) << check(d);
    d = square(64);
    d.ldb = 32;  // B op t: stored N x K
    EXPECT_TRUE(contains(check(d), "ldb 32 is smaller")) << check(d);

    // Row strides of A and B must be multiples of 16 bytes: a packed odd K is refused.
    d = Desc{.m = 37, .n = 45, .k = 29};
    EXPECT_TRUE(contains(check(d), "lda x 2 bytes must be a multiple of 16")) << check(d);
    EXPECT_TRUE(contains(check(d), "pad the stored rows to a multiple of 8 elements")) << check(d);
    d.lda = 36;  // 72 bytes
    EXPECT_TRUE(contains(check(d), "lda x 2 bytes")) << check(d);
    d.lda = 40;  // 80 bytes
    d.ldb = 45;
    EXPECT_TRUE(contains(check(d), "ldb x 2 bytes")) << check(d);
    d.ldb = 48;
    EXPECT_EQ(check(d), "");
    Desc f8 = square(64, Type::e4m3);
    f8.lda = 72;  // 72 bytes
    EXPECT_TRUE(contains(check(f8), "lda x 1 bytes must be a multiple of 16")) << check(f8);

    for (auto member : {&Desc::ldd, &Desc::ldc, &Desc::ldaux}) {
        d = Desc{.m = 32, .n = 40, .k = 32};
        d.*member = 39;
        EXPECT_TRUE(contains(check(d), "is smaller than N = 40")) << check(d);
    }
    d = Desc{.m = 32, .n = 40, .k = 32, .ldd = std::int64_t{1} << 31};
    EXPECT_EQ(check(d), "leading dimensions must be below 2^31");
}

Desc f32_out(Desc d) {
    d.d_type = Type::f32;
    return d;
}

TEST(GemmChoose, SmallSquareOnTheH200SplitsKOnTheCooperativeKernel) {
    // 512^3 with an f32 D: 4 x 4 = 16 tiles of 128 x 128, under half of 132 SMs, and
    // K = 512 holds 8 k-tiles of 64: split 4 ways (2 k-tiles per split), 64 CTAs.
    const Choice c = choose(f32_out(square(512)), kH200Sms);
    EXPECT_EQ(c.tile_m, 128);
    EXPECT_EQ(c.tile_n, 128);
    EXPECT_EQ(c.splits, 4);
    EXPECT_FALSE(c.pingpong);
    EXPECT_EQ(c.ctas, 64);
    EXPECT_TRUE(contains(c.why, "split K 4 ways")) << c.why;
    // 1024^3: 8 x 8 = 64 tiles, under 66; 16 k-tiles: split 2 ways (132 / 64).
    const Choice c1 = choose(f32_out(square(1024)), kH200Sms);
    EXPECT_EQ(c1.tile_n, 128);
    EXPECT_EQ(c1.splits, 2);
    EXPECT_EQ(c1.ctas, 128);
}

TEST(GemmChoose, BfloatLastWaveOfFewTilesTakesTheTailSplit) {
    // Rule 3a: a bf16 D with a fixed epilogue, more tiles than SMs and a last wave under 75 % used, long
    // K: the last wave's tiles split so that each SM takes one unit of them, the others whole, in split
    // order (with or without allow_atomics). GPT-2's bf16 dW, 768 x 3072 x 16384: 144 tiles on 132
    // SMs, the last 12 split 11 ways (23 of 256 k-tiles a unit).
    for (Epilogue e : kFixedEpilogues)
        for (bool atomics : {false, true}) {
            Desc dw{.m = 768, .n = 3072, .k = 16384, .a_op = Op::t, .b_op = Op::n, .allow_atomics = atomics};
            dw.epilogue = e;
            const Choice w = choose(dw, kH200Sms);
            EXPECT_TRUE(w.pingpong && w.fixed_epilogue && w.ordered_split) << name(e);
            EXPECT_FALSE(w.tail_gather) << name(e);  // its units run first, under the whole tiles
            EXPECT_EQ(w.splits, 11) << name(e);
            EXPECT_EQ(w.split_tiles, 12) << name(e);
            EXPECT_EQ(w.ctas, kH200Sms);
            EXPECT_EQ(kernel_text(w), "128x128 pingpong fixed-epilogue ordered splits 11 of the last 12 tiles");
            EXPECT_TRUE(contains(w.why, "leave the last of 2 waves on 132 SMs 12 tiles")) << w.why;
        }
    // K too short for 2 splits of 16 k-tiles: 31 k-tiles, rule 3 does not split either.
    EXPECT_EQ(choose(bf16_product(768, 3072, 1984, Op::t, Op::n), kH200Sms).splits, 1);
    // A full last wave (132 x 2 tiles) has no tail; a last wave 75 % used or more is left alone.
    EXPECT_EQ(choose(bf16_product(128 * 12, 128 * 22, 16384, Op::t, Op::n), kH200Sms).splits, 1);
    EXPECT_EQ(choose(bf16_product(128 * 16, 128 * 15, 16384, Op::t, Op::n), kH200Sms).splits, 1);
    // By name, on a product whose tiles fill the SMs in whole waves: the unsplit fixed kernel.
    const auto whole = kernel_named(bf16_product(128 * 12, 128 * 22, 16384, Op::t, Op::n), "fixed_split_tail", kH200Sms);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->splits, 1);
    EXPECT_EQ(whole->split_tiles, 0);
    EXPECT_TRUE(contains(whole->why, "no last wave")) << whole->why;
    // A last wave 27 % used over 24 waves: 7B's 4096 x 12288 (3072 tiles, 36 in the 24th wave) splits
    // those 3 ways (64 k-tiles: at least 16 a unit), 1493 k-tiles on the busiest SM instead of 1536 (the
    // 1 % rule 3a asks); by name the same. Its 108 units run after the whole tiles, so the dispatcher
    // gathers them (a slab each), as "fixed_split_tail_gather" does; "fixed_split_tail" adds them in turn.
    for (const auto& [a, b] : {std::pair{Op::n, Op::t}, std::pair{Op::t, Op::n}}) {
        const Desc qkv = bf16_product(a == Op::n ? 4096 : 12288, a == Op::n ? 12288 : 4096, 4096, a, b);
        // NT (B K-major) takes rule 9's 128 x 176 tiles instead (test N176); the tail split by name.
        const std::optional<Choice> chosen = a == Op::n ? kernel_named(qkv, "fixed_split_tail_gather", kH200Sms)
                                                        : std::optional<Choice>(choose(qkv, kH200Sms));
        const auto in_turn = kernel_named(qkv, "fixed_split_tail", kH200Sms);
        const auto gathered = kernel_named(qkv, "fixed_split_tail_gather", kH200Sms);
        for (const std::optional<Choice>& c : {chosen, in_turn, gathered}) {
            ASSERT_TRUE(c);
            EXPECT_EQ(c->splits, 3);
            EXPECT_EQ(c->split_tiles, 36);
            EXPECT_TRUE(c->ordered_split);
            EXPECT_FALSE(c->stream_tail);
        }
        EXPECT_TRUE(chosen->tail_gather);
        EXPECT_TRUE(contains(chosen->why, "run after the whole tiles")) << chosen->why;
        if (a == Op::t) {
            EXPECT_TRUE(contains(chosen->why, "slab of its own")) << chosen->why;
        }
        EXPECT_FALSE(in_turn->tail_gather);
        EXPECT_TRUE(contains(in_turn->why, "added in turn instead")) << in_turn->why;
        EXPECT_TRUE(gathered->tail_gather);
        EXPECT_EQ(kernel_text(*gathered), "128x128 pingpong fixed-epilogue ordered splits 3 of the last 36 tiles gathered");
        EXPECT_EQ(kernel_text(*chosen), kernel_text(*gathered));
    }
    // Under 1 %: 16384^2 (16,384 tiles, 16 in the 125th wave; 8 ways would save 0.7 %) stays unsplit;
    // 8192^2 (4,096 tiles, 4 in the 32nd; 8 ways save 2.7 %) splits.
    EXPECT_EQ(choose(bf16_product(16384, 16384, 16384, Op::n, Op::t), kH200Sms).splits, 1);
    const Choice big = choose(bf16_product(8192, 8192, 8192, Op::n, Op::t, Epilogue::bias_gelu), kH200Sms);
    EXPECT_EQ(big.splits, 8);
    EXPECT_EQ(big.split_tiles, 4);
    // K too short for two units of 16 k-tiles (GPT-2's forward products, 12 k-tiles): unsplit.
    EXPECT_EQ(choose(bf16_product(16384, 2304, 768, Op::n, Op::t, Epilogue::bias), kH200Sms).splits, 1);
}

TEST(GemmKernelNamed, TheStreamedTailCutsTheLastWaveIntoOneRunPerSm) {
    // "fixed_split_stream": 4096^3 is 1,024 tiles, the last 100 on 132 SMs; no split of whole tiles
    // gives each SM one unit, so their 6,400 k-tiles go in runs of 48 or 49, one an SM: 498 k-tiles on
    // the busiest SM (one for the fix-ups) against 512. Every fixed epilogue, every layout. The
    // dispatcher does not take it (it measured slower: dispatch.cpp's note 3b).
    for (Epilogue e : kFixedEpilogues)
        for (const auto& [a, b] : {std::pair{Op::n, Op::t}, std::pair{Op::t, Op::n}, std::pair{Op::n, Op::n},
                                   std::pair{Op::t, Op::t}}) {
            const Desc d = bf16_product(4096, 4096, 4096, a, b, e);
            const auto c = kernel_named(d, "fixed_split_stream", kH200Sms);
            ASSERT_TRUE(c);
            EXPECT_TRUE(c->stream_tail) << name(e);
            EXPECT_TRUE(c->pingpong && c->fixed_epilogue && c->ordered_split) << name(e);
            EXPECT_EQ(c->splits, 2);
            EXPECT_EQ(c->split_tiles, 100);
            EXPECT_EQ(c->ctas, kH200Sms);
            EXPECT_EQ(kernel_text(*c), "128x128 pingpong fixed-epilogue ordered splits 2 of the last 100 tiles streamed");
            EXPECT_TRUE(contains(c->why, "6400 k-tiles streamed, one run of 49 or fewer an SM")) << c->why;
            EXPECT_FALSE(choose(d, kH200Sms).stream_tail);
            EXPECT_EQ(choose(d, kH200Sms).splits, 1);
        }
    // Fewer tiles than SMs: all of them streamed. GPT-2's bwd_qkv_dw (2304 x 768 x 16384 TN, 108 tiles
    // of 256 k-tiles): runs of 210; bwd_attn_proj_dw (36 tiles): runs of 70.
    const auto qkv_dw = kernel_named(bf16_product(2304, 768, 16384, Op::t, Op::n), "fixed_split_stream", kH200Sms);
    ASSERT_TRUE(qkv_dw);
    EXPECT_TRUE(qkv_dw->stream_tail);
    EXPECT_EQ(qkv_dw->split_tiles, 108);
    EXPECT_TRUE(contains(qkv_dw->why, "108 tiles of 128 x 128 fill 108 of 132 SMs: their 27648 k-tiles streamed, one "
                                      "run of 210 or fewer an SM")) << qkv_dw->why;
    const auto proj_dw = kernel_named(bf16_product(768, 768, 16384, Op::t, Op::n), "fixed_split_stream", kH200Sms);
    ASSERT_TRUE(proj_dw);
    EXPECT_TRUE(proj_dw->stream_tail);
    EXPECT_EQ(proj_dw->split_tiles, 36);
    EXPECT_EQ(proj_dw->ctas, kH200Sms);
    // The verify suite's shape: 208 tiles, 76 in the last wave, 48 k-tiles, runs of 27 or 28. Where the
    // tail split would apply: 8192^3 (4 tiles in the last wave, 128 k-tiles: runs of 4, under 16) is
    // left whole; 1544 x 1400 x 16384 (143 tiles, 11 in the last wave, 256 k-tiles: runs of 22) is
    // streamed.
    const auto named = kernel_named(bf16_product(1544, 2000, 3016, Op::n, Op::t), "fixed_split_stream", kH200Sms);
    ASSERT_TRUE(named);
    EXPECT_TRUE(named->stream_tail);
    EXPECT_EQ(named->split_tiles, 76);
    EXPECT_FALSE(kernel_named(bf16_product(8192, 8192, 8192, Op::n, Op::t), "fixed_split_stream", kH200Sms)->stream_tail);
    const auto dw = kernel_named(bf16_product(1544, 1400, 16384, Op::t, Op::n), "fixed_split_stream", kH200Sms);
    EXPECT_TRUE(dw->stream_tail);
    EXPECT_EQ(dw->split_tiles, 11);
    EXPECT_FALSE(dw->tail_gather);
    const auto gathered = kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t), "fixed_split_stream_gather", kH200Sms);
    ASSERT_TRUE(gathered);
    EXPECT_TRUE(gathered->stream_tail && gathered->tail_gather);
    EXPECT_EQ(kernel_text(*gathered), "128x128 pingpong fixed-epilogue ordered splits 2 of the last 100 tiles streamed gathered");
    // Runs under 16 k-tiles (GPT-2's forward products, K = 768: 108 tail tiles of 12 k-tiles), or no
    // tail to stream: the unsplit kernel, saying why. Not for the generic kernel (an f32 D, f16).
    for (const Desc& d : {bf16_product(16384, 768, 768, Op::n, Op::t, Epilogue::bias),
                          bf16_product(128 * 12, 128 * 22, 16384, Op::t, Op::n)}) {
        const auto whole = kernel_named(d, "fixed_split_stream", kH200Sms);
        ASSERT_TRUE(whole);
        EXPECT_FALSE(whole->stream_tail);
        EXPECT_EQ(whole->splits, 1);
        EXPECT_TRUE(contains(whole->why, "streamed tail, but")) << whole->why;
    }
    EXPECT_FALSE(kernel_named(f32_out(square(4096)), "fixed_split_stream", kH200Sms));
    EXPECT_FALSE(kernel_named(square(4096, Type::f16), "fixed_split_stream", kH200Sms));
}

TEST(GemmChoose, BfloatSplitsOfOneWaveRunOnTheSplitFixedKernel) {
    // Rule 6: a bf16 D with a fixed epilogue, where rule 3 splits a single part-empty wave (72 tiles
    // on 132 SMs, long K) and atomics are allowed: the ping-pong units (pingpong_splitk_units), the
    // last unit of each tile applying the epilogue.
    for (Epilogue e : kFixedEpilogues) {
        Desc dw{.m = 1152, .n = 1024, .k = 16384, .a_op = Op::t, .b_op = Op::n, .allow_atomics = true};
        dw.epilogue = e;
        const Choice w = choose(dw, kH200Sms);
        EXPECT_TRUE(w.pingpong && w.fixed_epilogue) << name(e);
        EXPECT_FALSE(w.ordered_split) << name(e);
        EXPECT_EQ(w.splits, pingpong_splitk_units(72, 256, kH200Sms)) << name(e);
        EXPECT_EQ(w.ctas, kH200Sms);
        EXPECT_TRUE(contains(w.why, "the last unit of a tile storing D")) << w.why;
    }
    // Without allow_atomics (the default: bit-reproducible runs), rule 3's split on the slabs.
    const Choice plain = choose(Desc{.m = 1152, .n = 1024, .k = 16384, .a_op = Op::t, .b_op = Op::n}, kH200Sms);
    EXPECT_GT(plain.splits, 1);
    EXPECT_FALSE(plain.pingpong);
    // Rule 2's few tiles keep the cooperative split (the split fixed kernel lost there on the H200)
    // from 32 k-tiles: 1024 x 1024 x 2048, 64 tiles.
    const Choice few = choose(Desc{.m = 1024, .n = 1024, .k = 2048, .b_op = Op::t}, kH200Sms);
    EXPECT_EQ(few.splits, 2);
    EXPECT_FALSE(few.pingpong);
    // Below 32 k-tiles the unsplit fixed kernel: 512^3 and 1024^3 (8 and 16 k-tiles).
    for (std::int64_t n : {512, 1024}) {
        const Choice sq = choose(square(n), kH200Sms);
        EXPECT_EQ(sq.splits, 1) << n;
        EXPECT_TRUE(sq.pingpong && sq.fixed_epilogue) << n;
    }
    // An f32 D has no fixed kernel: rule 2 splits it as before (SmallSquareOnTheH200SplitsKOnTheCooperativeKernel).
    // By name, "fixed_split" runs it anywhere the fixed kernel exists: 512^3 is 16 tiles of 8 k-tiles,
    // at least 4 a unit: 2 splits, 32 units.
    const auto named = kernel_named(square(512), "fixed_split", kH200Sms);
    ASSERT_TRUE(named);
    EXPECT_TRUE(named->pingpong && named->fixed_epilogue);
    EXPECT_EQ(named->splits, 2);
    EXPECT_EQ(named->ctas, 32);
    EXPECT_EQ(kernel_text(*named), "128x128 pingpong fixed-epilogue splits 2");
    EXPECT_FALSE(named->ordered_split);
    // "fixed_split_ordered": the same units, their partials summed in split order.
    const auto ordered = kernel_named(square(512), "fixed_split_ordered", kH200Sms);
    ASSERT_TRUE(ordered);
    EXPECT_TRUE(ordered->pingpong && ordered->fixed_epilogue && ordered->ordered_split);
    EXPECT_EQ(ordered->splits, 2);
    EXPECT_EQ(kernel_text(*ordered), "128x128 pingpong fixed-epilogue ordered splits 2");
    EXPECT_TRUE(contains(ordered->why, "split order")) << ordered->why;
    Desc relu = square(512);
    relu.epilogue = Epilogue::bias_relu;
    EXPECT_FALSE(kernel_named(relu, "fixed_split", kH200Sms));
    EXPECT_FALSE(kernel_named(relu, "fixed_split_ordered", kH200Sms));
    // Not for an epilogue without a fixed kernel, an f16 D or f16 operands: rule 3 as before.
    Desc dw_relu{.m = 768, .n = 3072, .k = 16384, .a_op = Op::t, .b_op = Op::n, .epilogue = Epilogue::bias_relu,
                 .allow_atomics = true};
    EXPECT_FALSE(choose(dw_relu, kH200Sms).pingpong);
    Desc dw_f16{.m = 768, .n = 3072, .k = 16384, .a_type = Type::f16, .b_type = Type::f16, .a_op = Op::t,
                .b_op = Op::n, .d_type = Type::f16, .allow_atomics = true};
    EXPECT_FALSE(choose(dw_f16, kH200Sms).pingpong);
}

TEST(GemmChoose, FewTilesAndAShortKTakeSixtyFourRowTiles) {
    // Rule 7: 512^3 and 1024^3 with a bf16 D and no epilogue stay unsplit (rule 2's short K) and take
    // 64 x 128 tiles: 32 and 128 CTAs instead of 16 and 64; no C by TMA (that kernel has no such form).
    for (auto [n, ctas] : {std::pair<std::int64_t, int>{512, 32}, {1024, 128}}) {
        const Choice c = choose(square(n), kH200Sms);
        EXPECT_EQ(c.tile_m, 64) << n;
        EXPECT_EQ(c.tile_n, 128) << n;
        EXPECT_EQ(c.splits, 1) << n;
        EXPECT_TRUE(c.pingpong && c.fixed_epilogue) << n;
        EXPECT_FALSE(c.tma_load_c) << n;
        EXPECT_EQ(c.ctas, ctas) << n;
        EXPECT_TRUE(contains(c.why, "64 x 128 tiles")) << c.why;
        EXPECT_EQ(kernel_text(c), "64x128 pingpong fixed-epilogue splits 1");
    }
    // Odd shapes count their partial tiles: 300 x 289 is 3 x 3 tiles of 128 x 128, 5 x 3 of 64 x 128.
    const Choice odd = choose(Desc{.m = 300, .n = 289, .k = 136}, kH200Sms);
    EXPECT_EQ(odd.tile_m, 64);
    EXPECT_EQ(odd.ctas, 15);
    // The same for bias and bias + GELU (the fused suite's 512^3 and 1024^3).
    for (Epilogue e : {Epilogue::bias, Epilogue::bias_gelu}) {
        Desc fused = square(512);
        fused.epilogue = e;
        const Choice f = choose(fused, kH200Sms);
        EXPECT_EQ(f.tile_m, 64) << name(e);
        EXPECT_EQ(f.ctas, 32) << name(e);
        EXPECT_TRUE(f.fixed_epilogue && f.splits == 1) << name(e);
    }
    // Not from half the SMs' tiles on (2048^3: 256 tiles), not for an epilogue without the 64-row
    // kernel (bias + GELU with aux), an f32 D or a K long enough for rule 2's split (1024 x 1024 x 2048).
    EXPECT_EQ(choose(square(2048), kH200Sms).tile_m, 128);
    Desc aux = square(512);
    aux.epilogue = Epilogue::bias_gelu_aux;
    EXPECT_EQ(choose(aux, kH200Sms).tile_m, 128);
    EXPECT_EQ(choose(f32_out(square(512)), kH200Sms).tile_m, 128);
    EXPECT_EQ(choose(Desc{.m = 1024, .n = 1024, .k = 2048, .b_op = Op::t}, kH200Sms).tile_m, 128);
    // By name, "fixed_m64" anywhere its kernel exists, one CTA per tile below the SM count.
    const auto named = kernel_named(square(4096), "fixed_m64", kH200Sms);
    ASSERT_TRUE(named);
    EXPECT_EQ(named->tile_m, 64);
    EXPECT_EQ(named->ctas, kH200Sms);
    EXPECT_TRUE(contains(named->why, "ping-pong 64 x 128 tiles")) << named->why;
    EXPECT_FALSE(kernel_named(aux, "fixed_m64", kH200Sms));
    EXPECT_FALSE(kernel_named(f32_out(square(512)), "fixed_m64", kH200Sms));
}

TEST(GemmKernelNamed, SplitWaveGivesEachUnitACta) {
    // GPT-2's bwd_attn_proj_dw: 36 tiles on 132 SMs, 3 splits, 108 CTAs of one unit each.
    const Desc dw{.m = 768, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::bf16};
    const auto c = kernel_named(dw, "fixed_split_wave", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->splits, 3);
    EXPECT_TRUE(c->ordered_split);
    EXPECT_EQ(c->ctas, 108);
    // More tiles than SMs: not split.
    const auto whole = kernel_named(square(4096), "fixed_split_wave", kH200Sms);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->splits, 1);
    EXPECT_FALSE(whole->ordered_split);
}

TEST(GemmChoose, LongSplitsOfAFixedEpilogueAddInOrder) {
    // Rule 2a: GPT-2's bwd_attn_proj_dw, 36 tiles, 3 splits of 85 or 86 k-tiles, in the ping-pong kernel.
    const Desc dw{.m = 768, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::bf16};
    const Choice c = choose(dw, kH200Sms);
    EXPECT_EQ(c.splits, 3);
    EXPECT_TRUE(c.pingpong);
    EXPECT_TRUE(c.fixed_epilogue);
    EXPECT_TRUE(c.ordered_split);
    EXPECT_EQ(c.split_tiles, 0);
    EXPECT_EQ(c.ctas, 108);
    EXPECT_TRUE(contains(c.why, "in split order")) << c.why;
    // Splits of fewer k-tiles (K = 8192: 43 a split) keep the cooperative split and its slabs, and so
    // does an fp32 D.
    Desc shorter = dw;
    shorter.k = 8192;
    EXPECT_FALSE(choose(shorter, kH200Sms).ordered_split);
    EXPECT_FALSE(choose(shorter, kH200Sms).pingpong);
    EXPECT_FALSE(choose(f32_out(dw), kH200Sms).ordered_split);
}

TEST(GemmChoose, HalfPrecisionWithoutSplitTakesPingPong) {
    const Choice c = choose(square(4096), kH200Sms);
    EXPECT_EQ(c.tile_m, 128);
    EXPECT_EQ(c.tile_n, 128);
    EXPECT_TRUE(c.pingpong);
    EXPECT_EQ(c.splits, 1);
    EXPECT_EQ(c.ctas, kH200Sms);  // persistent: one CTA per SM for 1024 tiles
    EXPECT_TRUE(contains(c.why, "ping-pong")) << c.why;
    // GPT-2's attention projection: 128 x 6 tiles, K = 768.
    const Choice g = choose(Desc{.m = 16384, .n = 768, .k = 768, .b_op = Op::t}, kH200Sms);
    EXPECT_TRUE(g.pingpong);
    EXPECT_EQ(g.splits, 1);
    EXPECT_EQ(g.ctas, kH200Sms);
    // Fewer tiles than SMs: one CTA per tile.
    EXPECT_EQ(choose(Desc{.m = 128 * 70, .n = 128, .k = 64}, kH200Sms).ctas, 70);
}

TEST(GemmChoose, BfloatTrainingEpiloguesTakeTheirCompiledKernel) {
    // bf16 operands and D, each epilogue of kFixedEpilogues: the ping-pong kernel compiled for it.
    for (Epilogue e : kFixedEpilogues) {
        Desc d = square(4096);
        d.epilogue = e;
        const Choice c = choose(d, kH200Sms);
        EXPECT_TRUE(c.pingpong) << name(e);
        EXPECT_TRUE(c.fixed_epilogue) << name(e);
        EXPECT_TRUE(contains(c.why, "compiled for this epilogue")) << c.why;
        // 4096^3 NT: rule 10's narrow tail for the epilogues it is compiled for.
        const bool tail = std::find(kTailEpilogues.begin(), kTailEpilogues.end(), e) != kTailEpilogues.end();
        EXPECT_EQ(kernel_text(c), tail ? "128x128 pingpong fixed-epilogue tail 104 splits 1"
                                       : "128x128 pingpong fixed-epilogue splits 1");
    }
    // Any other epilogue, output type or operand type: the kernel that takes them all.
    const auto generic = [](Desc d) { return !choose(d, kH200Sms).fixed_epilogue; };
    Desc relu = square(4096);
    relu.epilogue = Epilogue::bias_relu;
    EXPECT_TRUE(generic(relu));
    Desc f32_out = square(4096);
    f32_out.d_type = Type::f32;
    EXPECT_TRUE(generic(f32_out));
    EXPECT_TRUE(generic(square(4096, Type::f16)));
    EXPECT_TRUE(generic(square(4096, Type::e4m3)));
    // Split K over few tiles (rule 2, cooperative kernel): not the ping-pong, so not compiled in either.
    const Choice small = choose(Desc{.m = 512, .n = 512, .k = 4096, .b_op = Op::t}, kH200Sms);
    EXPECT_GT(small.splits, 1);
    EXPECT_FALSE(small.fixed_epilogue);
    // The ping-pong by name is the one for every epilogue, for comparison.
    Desc bias = square(4096);
    bias.epilogue = Epilogue::bias;
    EXPECT_FALSE(kernel_named(bias, "pingpong", kH200Sms)->fixed_epilogue);
    EXPECT_TRUE(kernel_named(bias, "auto", kH200Sms)->fixed_epilogue);
}

TEST(GemmChoose, SplitRulesAtTheirBoundaries) {
    // 66 tiles = half of 132 SMs: not rule 2's; with a short K, no split.
    const Choice c = choose(Desc{.m = 128 * 66, .n = 128, .k = 1024, .d_type = Type::f32}, kH200Sms);
    EXPECT_EQ(c.splits, 1);
    EXPECT_TRUE(c.pingpong);
    EXPECT_EQ(c.ctas, 66);
    // With a long K, the last-wave rule: one wave half used, split 2 ways fills it.
    const Choice lw = choose(Desc{.m = 128 * 66, .n = 128, .k = 1 << 16, .d_type = Type::f32}, kH200Sms);
    EXPECT_EQ(lw.splits, 2);
    EXPECT_TRUE(contains(lw.why, "last of 1 waves")) << lw.why;
    // 65 tiles: split 2 ways.
    EXPECT_EQ(choose(Desc{.m = 128 * 65, .n = 128, .k = 1 << 16, .d_type = Type::f32}, kH200Sms).splits, 2);
    // Too short a K to split: 3 k-tiles of 64 cannot give two splits of 2.
    const Choice s = choose(Desc{.m = 128, .n = 128, .k = 192, .d_type = Type::f32}, kH200Sms);
    EXPECT_EQ(s.splits, 1);
    EXPECT_EQ(s.ctas, 1);
    // 4 k-tiles: two splits.
    EXPECT_EQ(choose(Desc{.m = 128, .n = 128, .k = 256, .d_type = Type::f32}, kH200Sms).splits, 2);
    // Splits are capped at 16 however many SMs there are.
    EXPECT_EQ(choose(Desc{.m = 128, .n = 128, .k = 1 << 16, .d_type = Type::f32}, kH200Sms).splits, 16);
    // And by the 1 GiB fp32 workspace: 8192^2 floats are 256 MiB a split.
    const Choice w = choose(Desc{.m = 8192, .n = 8192, .k = 1 << 16, .d_type = Type::f32}, 100000);
    EXPECT_EQ(w.splits, 4);
    EXPECT_EQ(w.ctas, 64 * 64 * 4);
}

TEST(GemmChoose, APartEmptyLastWaveSplitsLongK) {
    // GPT-2's dW products: 3072 x 768 (and 768 x 3072) over K = 16384 are
    // 144 tiles, 2 waves on 132 SMs, the second 12 tiles: split 4 ways
    // (576 units, 5 waves of a quarter K each).
    for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{3072, 768}, {768, 3072}}) {
        const Choice c = choose(Desc{.m = m, .n = n, .k = 16384, .a_op = Op::t, .d_type = Type::f32}, kH200Sms);
        EXPECT_EQ(c.splits, 4) << m << " x " << n;
        EXPECT_FALSE(c.pingpong);
        EXPECT_EQ(c.ctas, 144 * 4);
        EXPECT_TRUE(contains(c.why, "leave the last of 2 waves")) << c.why;
    }
    // 2304 x 768 (108 tiles, one wave 82 % used) is left alone, as are the
    // products whose waves are nearly full (GPT-2's forward: 768 tiles).
    EXPECT_EQ(choose(Desc{.m = 2304, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::f32}, kH200Sms).splits, 1);
    EXPECT_EQ(choose(Desc{.m = 16384, .n = 768, .k = 3072, .b_op = Op::t, .d_type = Type::f32}, kH200Sms).splits, 1);
    // Too short a K for splits of 16 k-tiles: 144 tiles at K = 1984 (31 k-tiles).
    EXPECT_EQ(choose(Desc{.m = 3072, .n = 768, .k = 1984, .d_type = Type::f32}, kH200Sms).splits, 1);
    // Where the slabs' round trip costs more than the wave saves, no split:
    // 144 tiles at K = 2048 (r = 0.5 per split).
    EXPECT_EQ(choose(Desc{.m = 3072, .n = 768, .k = 2048, .d_type = Type::f32}, kH200Sms).splits, 1);
}

TEST(GemmKernelNamed, NamesEveryUnsplitKernelOfTheTable) {
    const Desc d = square(4096);
    const auto wide = kernel_named(d, "128x256", kH200Sms);
    ASSERT_TRUE(wide);
    EXPECT_EQ(wide->tile_n, 256);
    EXPECT_FALSE(wide->pingpong);
    EXPECT_EQ(wide->splits, 1);
    EXPECT_EQ(wide->ctas, kH200Sms);
    const auto narrow = kernel_named(d, "128x128", kH200Sms);
    ASSERT_TRUE(narrow);
    EXPECT_EQ(narrow->tile_n, 128);
    EXPECT_FALSE(narrow->pingpong);
    const auto pong = kernel_named(d, "pingpong", kH200Sms);
    ASSERT_TRUE(pong);
    EXPECT_TRUE(pong->pingpong);
    EXPECT_EQ(pong->tile_n, 128);
    EXPECT_EQ(pong->cluster_m, 1);
    const auto pair = kernel_named(d, "pingpong_cluster", kH200Sms);
    ASSERT_TRUE(pair);
    EXPECT_TRUE(pair->pingpong);
    EXPECT_EQ(pair->cluster_m, 2);
    EXPECT_EQ(pair->tile_n, 128);
    EXPECT_EQ(kernel_text(*pair), "128x128 pingpong cluster 2x1 splits 1");
    EXPECT_EQ(kernel_text(*pong), "128x128 pingpong splits 1");
    // The dispatcher does not pick the pair (it has not been measured yet).
    EXPECT_EQ(choose(square(4096), kH200Sms).cluster_m, 1);
    // auto is the dispatcher, even where it splits.
    EXPECT_EQ(kernel_named(f32_out(square(512)), "auto", kH200Sms)->splits, 4);
    // A named kernel never splits, and takes one CTA per tile below the SM count.
    const auto small = kernel_named(square(512), "pingpong", kH200Sms);
    EXPECT_EQ(small->splits, 1);
    EXPECT_EQ(small->ctas, 16);
    // fp8 has the cooperative 128 x 128 kernel only; unknown names are refused.
    EXPECT_TRUE(kernel_named(square(512, Type::e4m3), "128x128", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::e4m3), "pingpong", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::e4m3), "pingpong_cluster", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::e4m3), "128x256", kH200Sms));
    EXPECT_FALSE(kernel_named(d, "64x64", kH200Sms));
    EXPECT_EQ(kernel_names(), "auto, 128x256, 128x128, pingpong, pingpong_cluster, fixed, fixed_staged, pingpong_splitk, pingpong_wave_split, fixed_tma_c, "
              "fixed_wide, fixed_m64, fixed_split, fixed_split_ordered, fixed_split_tail, fixed_split_tail_gather, fixed_split_stream, fixed_split_stream_gather, fixed_split_wave, fixed_pair, fixed_split_pair, fixed_g16, fixed_g32, fixed_n192, fixed_n192_g16, fixed_n168, fixed_n176, fixed_tail, pingpong_f32_tma");
    EXPECT_TRUE(is_kernel_name("fixed_staged"));
    EXPECT_TRUE(is_kernel_name("auto"));
    EXPECT_FALSE(is_kernel_name("64x64"));
}

// Whether kernel_named takes `kernel` for a copy of d that `change` altered.
template <class F>
bool named_after(Desc d, F&& change, std::string_view kernel) {
    change(d);
    return kernel_named(d, kernel, kH200Sms).has_value();
}

// The ping-pong split-K: splits that fill whole rounds of 2 x 132 consumers on GPT-2's weight gradients.
TEST(GemmChoose, PingPongSplitKFillsRoundsOfConsumers) {
    // bwd_mlp_up_dw: 144 tiles, 256 k-tiles: 9 splits, 1296 units in 5 rounds of 264 (the last 240), 28-29
    // k-tiles each; 11 splits (6 full rounds of 24-k-tile units) cost the same, with more reductions.
    EXPECT_EQ(pingpong_splitk_units(144, 256, kH200Sms), 9);
    // bwd_attn_proj_dw: 36 tiles: 7 splits, 252 units in one round.
    EXPECT_EQ(pingpong_splitk_units(36, 256, kH200Sms), 7);
    // Many tiles (bwd_lm_head_dw, 2358): no split; a short K: at least 4 k-tiles a unit.
    EXPECT_EQ(pingpong_splitk_units(2358, 256, kH200Sms), 1);
    EXPECT_LE(pingpong_splitk_units(4, 12, kH200Sms), 3);
    const Desc dw{.m = 3072, .n = 768, .k = 16384, .a_type = Type::bf16, .b_type = Type::bf16, .a_op = Op::t,
                  .b_op = Op::n, .d_type = Type::f32};
    const auto c = kernel_named(dw, "pingpong_splitk", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->pingpong);
    EXPECT_EQ(c->splits, 9);
    EXPECT_EQ(c->ctas, kH200Sms);
    EXPECT_EQ(kernel_text(*c), "128x128 pingpong splits 9");
    // Only an f32 D without epilogue, and 16-bit operands.
    EXPECT_FALSE(named_after(dw, [](Desc& x) { x.d_type = Type::bf16; }, "pingpong_splitk"));
    EXPECT_FALSE(named_after(dw, [](Desc& x) { x.epilogue = Epilogue::bias; }, "pingpong_splitk"));
    EXPECT_FALSE(kernel_named(square(4096, Type::e4m3), "pingpong_splitk", kH200Sms));
    // The dispatcher picks it only where atomics are allowed (rule 5).
    EXPECT_FALSE(choose(dw, kH200Sms).pingpong && choose(dw, kH200Sms).splits > 1);
}

TEST(GemmChoose, AllowedAtomicsTurnSplitsIntoThePingPongSplitK) {
    // GPT-2's fp32 dW: rule 3's 4 slabs become the tail split (144 tiles, the last 12 split 11 ways, all
    // units added into D); attention's projection (36 tiles): rule 2's 3 slabs become 7 ping-pong splits.
    Desc dw{.m = 3072, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true};
    Choice c = choose(dw, kH200Sms);
    EXPECT_TRUE(c.pingpong);
    EXPECT_FALSE(c.fixed_epilogue || c.ordered_split);
    EXPECT_EQ(c.splits, 11);
    EXPECT_EQ(c.split_tiles, 12);
    EXPECT_EQ(c.ctas, kH200Sms);
    EXPECT_EQ(kernel_text(c), "128x128 pingpong splits 11 of the last 12 tiles");
    EXPECT_TRUE(contains(c.why, "atomic reductions")) << c.why;
    c = choose(Desc{.m = 768, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true},
               kH200Sms);
    EXPECT_TRUE(c.pingpong);
    EXPECT_EQ(c.splits, 7);
    EXPECT_EQ(c.ctas, kH200Sms);  // 252 units, one round of the persistent CTAs
    // The verify suite's shapes for rule 5 reach it through both split rules.
    for (const auto& [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{300, 520, 2000},
                                  {1544, 1400, 6152}}) {
        const Desc v{.m = m, .n = n, .k = k, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true};
        EXPECT_TRUE(choose(v, kH200Sms).pingpong && choose(v, kH200Sms).splits > 1) << m << " x " << n;
        Desc plain = v;
        plain.allow_atomics = false;
        EXPECT_GT(choose(plain, kH200Sms).splits, 1) << m << " x " << n;
        EXPECT_FALSE(choose(plain, kH200Sms).pingpong) << m << " x " << n;
    }
    // Nothing else changes: an f32 D with an epilogue, or whole waves with no split to begin with (264
    // tiles). (A bf16 D with a fixed epilogue takes rule 6 under allow_atomics:
    // BfloatSplitsOfTheLastWaveRunOnTheSplitFixedKernel; 108 tiles, rule 5a: WaveSplitEvensOutTheSmsUnits.)
    for (const auto& change : std::initializer_list<void (*)(Desc&)>{
             [](Desc& x) { x.epilogue = Epilogue::bias; }, [](Desc& x) { x.m = 5632; }}) {
        Desc x = dw;
        change(x);
        Desc plain = x;
        plain.allow_atomics = false;
        const Choice with = choose(x, kH200Sms), without = choose(plain, kH200Sms);
        EXPECT_EQ(with.splits, without.splits);
        EXPECT_EQ(with.pingpong, without.pingpong);
        EXPECT_EQ(with.why, without.why);
    }
}

TEST(GemmChoose, WaveSplitEvensOutTheSmsUnits) {
    // The model: the busiest SM's units one after the other (its two consumers share the tensor pipe).
    // bwd_qkv_dw, 108 tiles of 256 k-tiles on 132 SMs: unsplit 1 x 257; 6 splits, 648 units, 5 on the
    // busiest SM, 5 x 44 = 220; 2 splits gain nothing (2 x 129), 11 cost 9 x 25 = 225.
    EXPECT_EQ(wave_split_cost(108, 256, kH200Sms, 1), 257);
    EXPECT_EQ(wave_split_cost(108, 256, kH200Sms, 2), 258);
    EXPECT_EQ(wave_split_cost(108, 256, kH200Sms, 6), 220);
    EXPECT_EQ(wave_split_cost(108, 256, kH200Sms, 11), 225);
    EXPECT_EQ(wave_splits(108, 256, kH200Sms), 6);
    // Whole waves, or a last wave nearly full (bwd_lm_head_dw, 2358 tiles: 17.9 waves), stay unsplit; so
    // does a short K (at least 16 k-tiles a unit).
    EXPECT_EQ(wave_splits(264, 256, kH200Sms), 1);
    EXPECT_EQ(wave_splits(2358, 256, kH200Sms), 1);
    EXPECT_EQ(wave_splits(108, 20, kH200Sms), 1);
    // Rule 5a: the dispatcher takes it for bwd_qkv_dw where atomics are allowed (kDispatchWaveSplit), the
    // same kernel and splits as by name; without atomics the tile stays whole.
    const Desc qkv{.m = 2304, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true};
    const Choice dispatched = choose(qkv, kH200Sms);
    EXPECT_EQ(dispatched.splits, kDispatchWaveSplit ? 6 : 1);
    if (kDispatchWaveSplit) {
        EXPECT_EQ(kernel_text(dispatched), "128x128 pingpong splits 6");
        EXPECT_EQ(dispatched.ctas, kH200Sms);
        EXPECT_FALSE(dispatched.f32_tma || dispatched.ordered_split || dispatched.fixed_epilogue);
        EXPECT_TRUE(contains(dispatched.why, "220 against 257")) << dispatched.why;
    }
    Desc plain = qkv;
    plain.allow_atomics = false;
    EXPECT_EQ(choose(plain, kH200Sms).splits, 1);
    EXPECT_TRUE(choose(plain, kH200Sms).f32_tma);
    // Only on a GPU with the H200's DRAM: an H100's 3.35 TB/s keeps the whole tiles (there it lost), the
    // H200's 4.8 (the default) and anything from kWaveSplitMinDramBytesPerSecond split; "auto" by name the same.
    const Choice h100 = choose(qkv, kH200Sms, kH100Dram);
    EXPECT_EQ(h100.splits, 1);
    EXPECT_TRUE(h100.f32_tma);
    EXPECT_EQ(choose(qkv, kH200Sms, kH200DramBytesPerSecond).splits, dispatched.splits);
    EXPECT_EQ(choose(qkv, kH200Sms, kWaveSplitMinDramBytesPerSecond).splits, dispatched.splits);
    EXPECT_EQ(kernel_named(qkv, "auto", kH200Sms, kH100Dram)->splits, 1);
    EXPECT_EQ(kernel_named(qkv, "auto", kH200Sms)->splits, dispatched.splits);
    const auto c = kernel_named(qkv, "pingpong_wave_split", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->pingpong);
    EXPECT_FALSE(c->fixed_epilogue || c->f32_tma || c->ordered_split);
    EXPECT_EQ(c->splits, 6);
    EXPECT_EQ(c->split_tiles, 0);
    EXPECT_EQ(c->ctas, kH200Sms);
    EXPECT_EQ(kernel_text(*c), "128x128 pingpong splits 6");
    EXPECT_TRUE(contains(c->why, "wave_splits")) << c->why;
    // Only an f32 D without epilogue, and 16-bit operands.
    EXPECT_FALSE(named_after(qkv, [](Desc& x) { x.d_type = Type::bf16; }, "pingpong_wave_split"));
    EXPECT_FALSE(named_after(qkv, [](Desc& x) { x.epilogue = Epilogue::bias; }, "pingpong_wave_split"));
    EXPECT_FALSE(kernel_named(square(4096, Type::e4m3), "pingpong_wave_split", kH200Sms));
    // The verify suite's shape for it: 1544 x 1000 x 6152, 104 tiles of 97 k-tiles, 5 splits (4 x 21 = 84
    // against 98).
    const Desc v{.m = 1544, .n = 1000, .k = 6152, .a_op = Op::t, .d_type = Type::f32};
    EXPECT_EQ(kernel_named(v, "pingpong_wave_split", kH200Sms)->splits, 5);
}

TEST(GemmCheckArgs, AddsIntoDOnlyFromZeroOrFromItself) {
    const Desc d{.m = 300, .n = 520, .k = 2000, .d_type = Type::f32};
    float buf[2];
    EXPECT_TRUE(adds_into_d(d, Args{.d = buf}));
    EXPECT_TRUE(adds_into_d(d, Args{.d = buf, .c = buf, .alpha = 0.5f, .beta = 1.0f}));
    EXPECT_FALSE(adds_into_d(d, Args{.d = buf, .c = buf + 1, .beta = 1.0f}));
    EXPECT_FALSE(adds_into_d(d, Args{.d = buf, .c = buf, .beta = 0.5f}));
    Desc strided = d;
    strided.ldc = 600;
    EXPECT_FALSE(adds_into_d(strided, Args{.d = buf, .c = buf, .beta = 1.0f}));
}

// The TMA stores' rule, one condition at a time from a call that takes them.
TEST(GemmChoose, TmaStoresOnlyWhereTheyWereVerified) {
    Desc d{.m = 16384, .n = 2304, .k = 768, .a_type = Type::bf16, .b_type = Type::bf16, .a_op = Op::n,
           .b_op = Op::t, .d_type = Type::bf16, .epilogue = Epilogue::bias};
    d = with_packed_leading_dimensions(d);
    const Choice c = choose(d, kH200Sms);
    void* const at = reinterpret_cast<void*>(std::uintptr_t{4096});
    const Args args{.a = at, .b = at, .d = at, .bias = at, .aux = at};
    EXPECT_TRUE(tma_stores(d, c, d.epilogue, args));
    EXPECT_TRUE(contains(c.why, "TMA stores")) << c.why;
    // C added (the residual): TMA stores on the kernel that loads C (rule 4), staged stores without it.
    Args residual = args;
    residual.c = at;
    residual.beta = 1.0f;
    EXPECT_TRUE(tma_stores(d, c, d.epilogue, residual));
    Choice without_c = c;
    without_c.tma_load_c = false;
    EXPECT_FALSE(tma_stores(d, without_c, d.epilogue, residual));
    // N not a multiple of 8 (the copies wrote past N), or rows that are not.
    Desc odd_n = d;
    odd_n.n = 2300;
    EXPECT_FALSE(tma_stores(odd_n, c, d.epilogue, args));
    Desc odd_ld = d;
    odd_ld.ldd = 2308;
    EXPECT_FALSE(tma_stores(odd_ld, c, d.epilogue, args));
    // D, or aux for bias_gelu_aux, off a 16-byte boundary.
    Args off = args;
    off.d = reinterpret_cast<void*>(std::uintptr_t{4098});
    EXPECT_FALSE(tma_stores(d, c, d.epilogue, off));
    Desc aux = d;
    aux.epilogue = Epilogue::bias_gelu_aux;
    EXPECT_TRUE(tma_stores(aux, c, aux.epilogue, args));
    Args aux_off = args;
    aux_off.aux = reinterpret_cast<void*>(std::uintptr_t{4100});
    EXPECT_FALSE(tma_stores(aux, c, aux.epilogue, aux_off));
    // dGELU takes them on the kernel that loads its aux (rule 4), with beta 0 only; the decomposed path's
    // GEMM (epilogue none) takes them too.
    Desc dgelu = d;
    dgelu.epilogue = Epilogue::dgelu_bgrad;
    EXPECT_TRUE(tma_stores(dgelu, choose(dgelu, kH200Sms), Epilogue::dgelu_bgrad, args));
    EXPECT_FALSE(tma_stores(dgelu, without_c, Epilogue::dgelu_bgrad, args));
    EXPECT_TRUE(tma_stores(d, c, Epilogue::none, args));
    // Only the fixed-epilogue kernels, unsplit or split on the ping-pong kernel (rule 6: its last unit
    // of a tile stores D as the unsplit kernel does), and not when staged stores are asked for.
    EXPECT_FALSE(tma_stores(d, *kernel_named(d, "pingpong", kH200Sms), d.epilogue, args));
    EXPECT_FALSE(tma_stores(d, *kernel_named(d, "fixed_staged", kH200Sms), d.epilogue, args));
    Choice split = c;
    split.splits = 2;
    EXPECT_TRUE(tma_stores(d, split, d.epilogue, args));
    split.pingpong = false;  // the cooperative split: slabs, then the elementwise pass
    EXPECT_FALSE(tma_stores(d, split, d.epilogue, args));
    Desc f32 = d;
    f32.d_type = Type::f32;
    EXPECT_FALSE(tma_stores(f32, c, d.epilogue, args));
}

// Rule 11: an fp32 D without epilogue on the unsplit ping-pong kernel leaves by TMA stores (k43's path),
// on calls with beta 0, D 16-byte aligned and ldd a multiple of 4; the others keep the staged stores. The
// dispatcher takes it where gemm::kDispatchF32Tma says so; by name always.
TEST(GemmChoose, Fp32OutputTakesTheTmaStoresOnTheUnsplitPingPongKernel) {
    for (Type t : {Type::bf16, Type::f16}) {
        for (const auto& [a, b] : {std::pair{Op::n, Op::t}, {Op::n, Op::n}, {Op::t, Op::n}, {Op::t, Op::t}}) {
            const Desc d = with_packed_leading_dimensions(Desc{.m = 4096, .n = 4096, .k = 4096, .a_type = t,
                                                               .b_type = t, .a_op = a, .b_op = b,
                                                               .d_type = Type::f32});
            // The dispatcher's rule 11, where gemm::kDispatchF32Tma lets it choose; the same kernel by name.
            const Choice c = choose(d, kH200Sms);
            EXPECT_EQ(c.f32_tma, kDispatchF32Tma) << c.why;
            EXPECT_TRUE(c.pingpong && c.splits == 1 && !c.fixed_epilogue) << c.why;
            EXPECT_EQ(contains(c.why, "TMA stores"), kDispatchF32Tma) << c.why;
            const auto named = kernel_named(d, "pingpong_f32_tma", kH200Sms);
            ASSERT_TRUE(named);
            EXPECT_EQ(kernel_text(*named), "128x128 pingpong f32-tma splits 1");
        }
    }
    const auto f32_square = [](std::int64_t n, Type t = Type::bf16) {
        Desc d = square(n, t);
        d.d_type = Type::f32;
        return with_packed_leading_dimensions(d);
    };
    const Desc d = f32_square(4096);
    const Choice c = *kernel_named(d, "pingpong_f32_tma", kH200Sms);
    void* const at = reinterpret_cast<void*>(std::uintptr_t{4096});
    const Args args{.a = at, .b = at, .d = at};
    EXPECT_TRUE(tma_stores(d, c, Epilogue::none, args));
    // In place (beta 1, C the same matrix as D: a training step's dW +=): the boxes added into D by the copy
    // engine. A C apart from D, another beta, D off 16 bytes, or rows that are not whole 16-byte multiples:
    // the staged stores.
    Args in_place = args;
    in_place.c = at;
    in_place.beta = 1.0f;
    EXPECT_TRUE(tma_stores(d, c, Epilogue::none, in_place));
    Args residual = in_place;
    residual.c = reinterpret_cast<void*>(std::uintptr_t{1 << 20});
    EXPECT_FALSE(tma_stores(d, c, Epilogue::none, residual));
    Args scaled = in_place;
    scaled.beta = 0.5f;
    EXPECT_FALSE(tma_stores(d, c, Epilogue::none, scaled));
    Desc other_ldc = d;
    other_ldc.ldc = 4100;
    EXPECT_FALSE(tma_stores(other_ldc, c, Epilogue::none, in_place));
    Args off = args;
    off.d = reinterpret_cast<void*>(std::uintptr_t{4104});
    EXPECT_FALSE(tma_stores(d, c, Epilogue::none, off));
    Desc odd_ld = d;
    odd_ld.ldd = 4098;
    EXPECT_FALSE(tma_stores(odd_ld, c, Epilogue::none, args));
    // N a multiple of 4 only: a TMA store writes the last 16 bytes of a row whole, past N into the padding
    // up to ldd (the verify suite's N = 289 cases on the H100), so an odd N keeps the staged stores even
    // with rows padded to a multiple of 4.
    Desc odd_n = d;
    odd_n.n = 4097;
    odd_n.ldd = 4100;
    EXPECT_FALSE(tma_stores(odd_n, *kernel_named(odd_n, "pingpong_f32_tma", kH200Sms), Epilogue::none, args));
    Desc n_by_4 = odd_n;
    n_by_4.n = 4100;
    EXPECT_TRUE(tma_stores(n_by_4, *kernel_named(n_by_4, "pingpong_f32_tma", kH200Sms), Epilogue::none, args));
    // The boxes' own rule, which the split-K's reduce-adds share (plan.cu): whatever beta and kernel.
    EXPECT_TRUE(f32_boxes_fit(d, args) && f32_boxes_fit(n_by_4, scaled));
    EXPECT_FALSE(f32_boxes_fit(odd_n, args) || f32_boxes_fit(odd_ld, args) || f32_boxes_fit(d, off));
    // The same product on the staged stores ("pingpong"): no TMA stores.
    EXPECT_FALSE(tma_stores(d, *kernel_named(d, "pingpong", kH200Sms), Epilogue::none, args));
    // Never for a bf16 D, an epilogue, fp8, or a split K (few tiles: rule 2's cooperative split).
    EXPECT_FALSE(choose(bf16_product(4096, 4096, 4096, Op::n, Op::t), kH200Sms).f32_tma);
    Desc bias = d;
    bias.epilogue = Epilogue::bias;
    EXPECT_FALSE(choose(bias, kH200Sms).f32_tma);
    EXPECT_FALSE(choose(f32_square(4096, Type::e4m3), kH200Sms).f32_tma);
    const Choice few = choose(f32_square(512), kH200Sms);
    EXPECT_FALSE(few.f32_tma && few.splits > 1);
    // By name: "pingpong_f32_tma" for the same products; "pingpong" keeps the staged stores.
    EXPECT_TRUE(c.f32_tma && c.pingpong && c.splits == 1);
    EXPECT_FALSE(kernel_named(d, "pingpong", kH200Sms)->f32_tma);
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t), "pingpong_f32_tma", kH200Sms));
    EXPECT_FALSE(kernel_named(bias, "pingpong_f32_tma", kH200Sms));
}

// By name on a product whose tiles fill the SMs, the ordered split has one unit a tile: the unsplit
// fixed kernel, not a plan that refuses.
TEST(GemmChoose, OrderedSplitByNameOnlyWhereKIsSplit) {
    const auto whole = kernel_named(bf16_product(16384, 2304, 768, Op::n, Op::t, Epilogue::bias),
                                    "fixed_split_ordered", kH200Sms);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->splits, 1);
    EXPECT_FALSE(whole->ordered_split);
    const auto split = kernel_named(bf16_product(768, 3072, 16384, Op::t, Op::n), "fixed_split_ordered", kH200Sms);
    ASSERT_TRUE(split);
    EXPECT_GT(split->splits, 1);
    EXPECT_TRUE(split->ordered_split);
}

// C loaded by TMA, so that the residual (beta != 0) takes the TMA stores too, where C's rows allow the
// copies: "fixed_tma_c" by name, and the dispatcher's choice for the residual products (rule 4).
TEST(GemmChoose, TmaLoadsOfCForResidualsAndByName) {
    Desc d{.m = 16384, .n = 768, .k = 768, .a_type = Type::bf16, .b_type = Type::bf16, .a_op = Op::n,
           .b_op = Op::t, .d_type = Type::bf16, .epilogue = Epilogue::bias};
    d = with_packed_leading_dimensions(d);
    const auto c = kernel_named(d, "fixed_tma_c", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->fixed_epilogue && c->tma_store && c->tma_load_c);
    EXPECT_TRUE(contains(c->why, "C loaded by TMA")) << c->why;
    // The dispatcher's choice for epilogues none and bias unsplit (rule 4's residual products), not for
    // the others, nor for a split.
    const Choice chosen = choose(d, kH200Sms);
    EXPECT_TRUE(chosen.tma_load_c);
    EXPECT_TRUE(contains(chosen.why, "loads C by TMA")) << chosen.why;
    Desc plain = d;
    plain.epilogue = Epilogue::none;
    EXPECT_TRUE(choose(plain, kH200Sms).tma_load_c);
    for (Epilogue e : {Epilogue::bias_gelu, Epilogue::bias_gelu_aux}) {
        Desc other = d;
        other.epilogue = e;
        EXPECT_FALSE(choose(other, kH200Sms).tma_load_c) << name(e);
    }
    const Desc dw = bf16_product(768, 3072, 16384, Op::t, Op::n);
    ASSERT_GT(choose(dw, kH200Sms).splits, 1);
    EXPECT_FALSE(choose(dw, kH200Sms).tma_load_c);
    void* const at = reinterpret_cast<void*>(std::uintptr_t{4096});
    const Args residual{.a = at, .b = at, .d = at, .c = at, .bias = at, .beta = 1.0f};
    EXPECT_TRUE(tma_stores(d, *c, d.epilogue, residual));
    EXPECT_TRUE(tma_stores(d, chosen, d.epilogue, residual));
    // C off a 16-byte boundary, or its rows not a multiple of 8: the staged stores.
    Args c_off = residual;
    c_off.c = reinterpret_cast<void*>(std::uintptr_t{4098});
    EXPECT_FALSE(tma_stores(d, *c, d.epilogue, c_off));
    Desc odd_ldc = d;
    odd_ldc.ldc = 772;
    EXPECT_FALSE(tma_stores(odd_ldc, *c, d.epilogue, residual));
    // dGELU: aux by TMA, with beta 0 only (aux takes the box C would).
    Desc dgelu = d;
    dgelu.epilogue = Epilogue::dgelu_bgrad;
    const Args dgelu_args{.a = at, .b = at, .d = at, .aux = at, .bgrad = static_cast<float*>(at)};
    EXPECT_TRUE(tma_stores(dgelu, *c, dgelu.epilogue, dgelu_args));
    const Choice dgelu_chosen = choose(dgelu, kH200Sms);
    EXPECT_TRUE(dgelu_chosen.tma_load_c);
    EXPECT_TRUE(contains(dgelu_chosen.why, "aux loaded by TMA")) << dgelu_chosen.why;
    EXPECT_TRUE(tma_stores(dgelu, dgelu_chosen, dgelu.epilogue, dgelu_args));
    Args dgelu_c = dgelu_args;
    dgelu_c.c = at;
    dgelu_c.beta = 1.0f;
    EXPECT_FALSE(tma_stores(dgelu, *c, dgelu.epilogue, dgelu_c));
    Args dgelu_off = dgelu_args;
    dgelu_off.aux = reinterpret_cast<void*>(std::uintptr_t{4098});
    EXPECT_FALSE(tma_stores(dgelu, *c, dgelu.epilogue, dgelu_off));
    // Only where the fixed kernel exists (a bf16 D), and only for the epilogues compiled with C's loads.
    Desc f32 = d;
    f32.d_type = Type::f32;
    EXPECT_FALSE(kernel_named(f32, "fixed_tma_c", kH200Sms));
    Desc gelu_aux = d;
    gelu_aux.epilogue = Epilogue::bias_gelu_aux;
    EXPECT_TRUE(kernel_named(gelu_aux, "fixed", kH200Sms));
    EXPECT_FALSE(kernel_named(gelu_aux, "fixed_tma_c", kH200Sms));
    for (Epilogue e : kTmaCEpilogues) {
        Desc with = d;
        with.epilogue = e;
        EXPECT_TRUE(has_tma_c_kernel(with) && kernel_named(with, "fixed_tma_c", kH200Sms)) << name(e);
    }
}

// "fixed_wide": the cooperative 128 x 256 kernel compiled for the product's epilogue (kWideEpilogues,
// bias_gelu among them), its tiles leaving by TMA stores where the call allows them.
TEST(GemmChoose, WideFixedKernelByName) {
    Desc d = square(4096);
    d.d_type = Type::bf16;
    d.epilogue = Epilogue::bias_gelu;
    d = with_packed_leading_dimensions(d);
    const auto wide = kernel_named(d, "fixed_wide", kH200Sms);
    ASSERT_TRUE(wide);
    EXPECT_FALSE(wide->pingpong);
    EXPECT_TRUE(wide->fixed_epilogue && wide->tma_store);
    EXPECT_EQ(wide->tile_n, 256);
    EXPECT_EQ(wide->ctas, kH200Sms);
    EXPECT_EQ(kernel_text(*wide), "128x256 fixed-epilogue splits 1");
    EXPECT_TRUE(contains(wide->why, "3 ring stages")) << wide->why;
    void* const at = reinterpret_cast<void*>(std::uintptr_t{4096});
    const Args args{.a = at, .b = at, .d = at, .bias = at};
    EXPECT_TRUE(tma_stores(d, *wide, d.epilogue, args));
    Args residual = args;
    residual.c = at;
    residual.beta = 1.0f;
    EXPECT_FALSE(tma_stores(d, *wide, d.epilogue, residual));  // no C by TMA in this kernel: staged stores
    for (Epilogue e : kWideEpilogues) {
        Desc with = d;
        with.epilogue = e;
        EXPECT_TRUE(has_wide_kernel(with) && kernel_named(with, "fixed_wide", kH200Sms)) << name(e);
    }
    for (Epilogue e : {Epilogue::bias_gelu_aux, Epilogue::dgelu_bgrad, Epilogue::bias_relu}) {
        Desc with = d;
        with.epilogue = e;
        EXPECT_FALSE(kernel_named(with, "fixed_wide", kH200Sms)) << name(e);
    }
    Desc f16 = d;
    f16.a_type = f16.b_type = Type::f16;
    EXPECT_FALSE(kernel_named(f16, "fixed_wide", kH200Sms));
}

// "fixed" and "fixed_staged": the ping-pong kernel compiled for the product's
// epilogue, with and without its TMA stores; only where that kernel exists.
TEST(GemmChoose, FixedEpilogueKernelsByName) {
    Desc d = square(4096);
    d.d_type = Type::bf16;
    d.epilogue = Epilogue::bias;
    const auto fixed = kernel_named(d, "fixed", kH200Sms);
    ASSERT_TRUE(fixed);
    EXPECT_TRUE(fixed->pingpong);
    EXPECT_TRUE(fixed->fixed_epilogue);
    EXPECT_TRUE(fixed->tma_store);
    EXPECT_EQ(kernel_text(*fixed), "128x128 pingpong fixed-epilogue splits 1");
    const auto staged = kernel_named(d, "fixed_staged", kH200Sms);
    ASSERT_TRUE(staged);
    EXPECT_TRUE(staged->fixed_epilogue);
    EXPECT_FALSE(staged->tma_store);
    EXPECT_EQ(kernel_text(*staged), "128x128 pingpong fixed-epilogue staged splits 1");
    // The dispatcher's choice for a bf16 D and a training epilogue is the TMA-store one.
    const Choice c = choose(d, kH200Sms);
    EXPECT_TRUE(c.fixed_epilogue);
    EXPECT_TRUE(c.tma_store);
    // No such kernel for an f32 D, an epilogue without one, or f16 operands.
    EXPECT_FALSE(named_after(d, [](Desc& x) { x.d_type = Type::f32; }, "fixed"));
    EXPECT_FALSE(named_after(d, [](Desc& x) { x.epilogue = Epilogue::bias_relu; }, "fixed_staged"));
    EXPECT_FALSE(named_after(d, [](Desc& x) { x.a_type = x.b_type = x.d_type = Type::f16; }, "fixed"));
}

TEST(GemmChoose, Fp8TakesNarrowTilesAndLongerKTiles) {
    const Choice c = choose(square(4096, Type::e4m3), kH200Sms);
    EXPECT_EQ(c.tile_n, 128);
    EXPECT_EQ(c.splits, 1);
    EXPECT_TRUE(contains(c.why, "fp8")) << c.why;
    // k-tiles of 128: K = 384 has 3, too few to split; K = 512 has 4.
    EXPECT_EQ(choose(Desc{.m = 128, .n = 128, .k = 384, .a_type = Type::e4m3, .b_type = Type::e4m3,
                          .b_op = Op::t},
                     kH200Sms)
                  .splits,
              1);
    EXPECT_EQ(choose(Desc{.m = 128, .n = 128, .k = 512, .a_type = Type::e4m3, .b_type = Type::e4m3,
                          .b_op = Op::t},
                     kH200Sms)
                  .splits,
              2);
}

TEST(GemmChoose, NoSmsCountsAsOne) {
    const Choice c = choose(square(512), 0);
    EXPECT_EQ(c.splits, 1);
    EXPECT_EQ(c.ctas, 1);
}

// Host buffers standing in for device pointers: check_args looks only at the addresses.
struct Buffers {
    alignas(64) std::uint8_t a[64 * 64 * 2 + 64];
    alignas(64) std::uint8_t b[64 * 64 * 2 + 64];
    alignas(64) std::uint8_t d[64 * 64 * 4 + 64];
    alignas(64) std::uint8_t c[64 * 64 * 4 + 64];
    alignas(64) std::uint8_t bias[64 * 4 + 64];
    alignas(64) std::uint8_t aux[64 * 64 * 4 + 64];
    alignas(64) float bgrad[64];
    Args args(Epilogue e) {
        Args r{.a = a, .b = b, .d = d};
        if (traits(e).bias) r.bias = bias;
        if (traits(e).aux_in || traits(e).aux_out) r.aux = aux;
        if (traits(e).bgrad) r.bgrad = bgrad;
        return r;
    }
};

TEST(GemmCheckArgs, AcceptsEveryEpilogueWithWhatItNeeds) {
    static Buffers buf;
    for (Epilogue e : kEpilogues) {
        Desc d = square(64);
        d.epilogue = e;
        EXPECT_EQ(check_args(d, buf.args(e)), "") << name(e);
        Args in_place = buf.args(e);
        in_place.c = buf.d;  // residual add into D itself
        in_place.beta = 1.0f;
        EXPECT_EQ(check_args(d, in_place), "") << name(e);
    }
}

TEST(GemmCheckArgs, RefusesMissingPointers) {
    static Buffers buf;
    const Desc d = square(64);
    for (auto member : {&Args::a, &Args::b}) {
        Args a = buf.args(Epilogue::none);
        a.*member = nullptr;
        EXPECT_EQ(check_args(d, a), "A, B and D must not be null");
    }
    Args a = buf.args(Epilogue::none);
    a.d = nullptr;
    EXPECT_EQ(check_args(d, a), "A, B and D must not be null");
    a = buf.args(Epilogue::none);
    a.beta = 0.5f;
    EXPECT_EQ(check_args(d, a), "beta is not 0, so C must not be null");
    for (Epilogue e : {Epilogue::bias, Epilogue::bias_gelu_aux, Epilogue::dgelu_bgrad}) {
        Desc de = d;
        de.epilogue = e;
        Args m = buf.args(e);
        if (traits(e).bias) m.bias = nullptr;
        else if (traits(e).bgrad) m.bgrad = nullptr;
        EXPECT_TRUE(contains(check_args(de, m), std::string("epilogue ") + name(e) + " needs")) << name(e);
        if (traits(e).aux_out || traits(e).aux_in) {
            m = buf.args(e);
            m.aux = nullptr;
            EXPECT_EQ(check_args(de, m), std::string("epilogue ") + name(e) + " needs aux");
        }
    }
}

TEST(GemmCheckArgs, RefusesMisalignedPointersAndNonFiniteScalars) {
    static Buffers buf;
    const Desc d = square(64);
    Args a = buf.args(Epilogue::none);
    a.a = buf.a + 8;  // 8-byte aligned is not enough for TMA
    EXPECT_EQ(check_args(d, a), "A and B must start on 16-byte boundaries (TMA)");
    a = buf.args(Epilogue::none);
    a.b = buf.b + 2;
    EXPECT_EQ(check_args(d, a), "A and B must start on 16-byte boundaries (TMA)");
    a = buf.args(Epilogue::none);
    a.d = buf.d + 1;
    EXPECT_EQ(check_args(d, a), "D must be aligned to its bf16 elements");
    a.d = buf.d + 2;  // bf16 D needs 2 bytes only
    EXPECT_EQ(check_args(d, a), "");
    Desc f = d;
    f.d_type = Type::f32;
    EXPECT_EQ(check_args(f, a), "D must be aligned to its f32 elements");
    a = buf.args(Epilogue::none);
    a.beta = 1.0f;
    a.c = buf.c + 1;
    EXPECT_EQ(check_args(d, a), "C must be aligned to its bf16 elements");
    Desc e = d;
    e.epilogue = Epilogue::dgelu_bgrad;
    a = buf.args(Epilogue::dgelu_bgrad);
    a.bgrad = reinterpret_cast<float*>(reinterpret_cast<std::uint8_t*>(buf.bgrad) + 2);
    EXPECT_EQ(check_args(e, a), "bgrad must be aligned to 4 bytes");
    a = buf.args(Epilogue::none);
    a.alpha = INFINITY;
    EXPECT_EQ(check_args(d, a), "alpha and beta must be finite");
    a.alpha = 1.0f;
    a.beta = NAN;
    EXPECT_EQ(check_args(d, a), "alpha and beta must be finite");
}

TEST(GemmCheckArgs, RefusesAliasingThatWouldOverwriteOperands) {
    static Buffers buf;
    const Desc d = Desc{.m = 32, .n = 32, .k = 32, .b_op = Op::t, .d_type = Type::bf16};
    Args a = buf.args(Epilogue::none);
    a.d = buf.a;  // D is A
    EXPECT_TRUE(contains(check_args(d, a), "D overlaps A or B")) << check_args(d, a);
    a.d = buf.a + 32 * 32 * 2 - 2;  // D starts on A's last element
    EXPECT_TRUE(contains(check_args(d, a), "D overlaps A or B"));
    a.d = buf.b + 16;
    EXPECT_TRUE(contains(check_args(d, a), "D overlaps A or B"));
    // Adjacent is not overlapping: D right after A's last byte.
    Args ok = buf.args(Epilogue::none);
    ok.a = buf.d;
    ok.d = buf.d + 32 * 32 * 2;
    EXPECT_EQ(check_args(d, ok), "");

    Desc x = d;
    x.epilogue = Epilogue::bias_gelu_aux;
    a = buf.args(Epilogue::bias_gelu_aux);
    a.aux = buf.d;
    EXPECT_EQ(check_args(x, a), "aux overlaps D, A or B");

    // C: D itself (in place) or apart, never partly over D.
    a = buf.args(Epilogue::none);
    a.beta = 1.0f;
    a.c = buf.d + 64;
    EXPECT_TRUE(contains(check_args(d, a), "C partly overlaps D")) << check_args(d, a);
    a.c = buf.d;
    Desc ld = d;
    ld.ldc = 40;
    EXPECT_EQ(check_args(ld, a), "C is D but ldc differs from ldd");
    a.beta = 0.0f;  // C is not read: nothing to refuse
    a.c = buf.d + 64;
    EXPECT_EQ(check_args(d, a), "");

    // bgrad is zeroed before the product and summed into while tiles still read A, B, C and aux.
    Desc g = d;
    g.epilogue = Epilogue::dgelu_bgrad;
    for (void* inside : {static_cast<void*>(buf.a), static_cast<void*>(buf.b + 64), static_cast<void*>(buf.aux)}) {
        a = buf.args(Epilogue::dgelu_bgrad);
        a.bgrad = static_cast<float*>(inside);
        EXPECT_EQ(check_args(g, a), "bgrad overlaps A, B, C, D or aux");
    }
    a = buf.args(Epilogue::dgelu_bgrad);
    a.beta = 1.0f;
    a.c = buf.c;
    a.bgrad = reinterpret_cast<float*>(buf.c + 128);
    EXPECT_EQ(check_args(g, a), "bgrad overlaps A, B, C, D or aux");
    a.beta = 0.0f;  // C unread: bgrad may lie there
    EXPECT_EQ(check_args(g, a), "");

    // bias_gelu_aux writes aux while other tiles still read the bias.
    x = d;
    x.epilogue = Epilogue::bias_gelu_aux;
    a = buf.args(Epilogue::bias_gelu_aux);
    a.bias = buf.aux + 256;
    EXPECT_EQ(check_args(x, a), "bias overlaps aux");
}

// dgelu_bgrad's aux may be D itself in run() (each element read before it is written), not in
// run_decomposed(), whose GEMM writes D before its epilogue kernel reads aux.
TEST(GemmCheckArgs, AuxInPlaceForTheFusedPathOnly) {
    static Buffers buf;
    const Desc d = Desc{.m = 32, .n = 32, .k = 32, .b_op = Op::t, .d_type = Type::bf16,
                        .epilogue = Epilogue::dgelu_bgrad};
    Args a = buf.args(Epilogue::dgelu_bgrad);
    a.aux = a.d;
    EXPECT_EQ(check_args(d, a), "");
    EXPECT_TRUE(contains(check_decomposed_args(d, a), "aux overlaps D")) << check_decomposed_args(d, a);
    a = buf.args(Epilogue::dgelu_bgrad);
    EXPECT_EQ(check_decomposed_args(d, a), "");
}

// The split pair by name: rule 2a's units on 2 x 1 clusters sharing B. GPT-2's bwd_attn_proj_dw (768 x 768
// x 16384, TN): 36 tiles in 3 splits, 108 CTAs in 54 pairs; compiled for epilogue none only, and only on
// an even number of tile rows.
TEST(GemmKernelNamed, SplitPair) {
    const auto proj_dw = kernel_named(bf16_product(768, 768, 16384, Op::t, Op::n), "fixed_split_pair", kH200Sms);
    ASSERT_TRUE(proj_dw);
    EXPECT_EQ(proj_dw->cluster_m, 2);
    EXPECT_EQ(proj_dw->splits, 3);
    EXPECT_EQ(proj_dw->ctas, 108);
    EXPECT_TRUE(proj_dw->ordered_split && proj_dw->fixed_epilogue && proj_dw->pingpong);
    EXPECT_EQ(proj_dw->split_tiles, 0);
    EXPECT_EQ(kernel_text(*proj_dw), "128x128 pingpong fixed-epilogue ordered cluster 2x1 splits 3");
    EXPECT_TRUE(contains(proj_dw->why, "sharing B by TMA multicast")) << proj_dw->why;
    EXPECT_FALSE(kernel_named(bf16_product(768, 768, 16384, Op::t, Op::n, Epilogue::bias), "fixed_split_pair", kH200Sms));
    EXPECT_FALSE(kernel_named(bf16_product(640, 768, 16384, Op::t, Op::n), "fixed_split_pair", kH200Sms));  // 5 rows
    EXPECT_EQ(kernel_named(square(4096), "fixed_split_pair", kH200Sms)->splits, 1);  // no split: the plan refuses
}

// The pair by name, K not split: 2 x 1 clusters sharing B, the unsplit fixed kernel, for the epilogues of
// gemm::kPairEpilogues only (an odd number of tile rows allowed: the last pair's second CTA loads no A).
TEST(GemmKernelNamed, Pair) {
    const auto gelu = kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias_gelu), "fixed_pair",
                                   kH200Sms);
    ASSERT_TRUE(gelu);
    EXPECT_EQ(gelu->cluster_m, 2);
    EXPECT_EQ(gelu->splits, 1);
    EXPECT_TRUE(gelu->fixed_epilogue && gelu->pingpong && !gelu->ordered_split);
    EXPECT_EQ(kernel_text(*gelu), "128x128 pingpong fixed-epilogue cluster 2x1 splits 1");
    EXPECT_TRUE(contains(gelu->why, "pairs of CTAs sharing B by TMA multicast")) << gelu->why;
    EXPECT_TRUE(kernel_named(bf16_product(1100, 760, 1000, Op::t, Op::n), "fixed_pair", kH200Sms));
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias), "fixed_pair", kH200Sms));
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias_gelu_aux), "fixed_pair",
                              kH200Sms));
}

// Rule 8: GPT-2's LM head (16384 x 50304 x 768, NT, epilogue none) on 128 x 192 tiles; not where K is
// long (the 7B fwd_qkv), the waves few (bwd_attn_proj_dx: 512 tiles of 128 x 192), N not a multiple of
// 192, or an epilogue other than none.
TEST(GemmDispatch, WideTilesForTheLmHead) {
    const Choice head = choose(bf16_product(16384, 50304, 768, Op::n, Op::t), kH200Sms);
    EXPECT_EQ(head.tile_n, 192);
    EXPECT_EQ(head.tile_m, 128);
    EXPECT_EQ(head.splits, 1);
    EXPECT_TRUE(head.pingpong && head.fixed_epilogue && !head.tma_load_c);
    EXPECT_EQ(head.ctas, kH200Sms);
    EXPECT_TRUE(contains(head.why, "33536 tiles of 128 x 192")) << head.why;
    EXPECT_TRUE(contains(head.why, "beta != 0 on the 128 x 128 kernel")) << head.why;
    // 16 waves and 3 tiles (the verify suite's case: 47 x 45 tiles), and one tile row fewer.
    EXPECT_EQ(choose(bf16_product(6000, 8640, 136, Op::n, Op::n), kH200Sms).tile_n, 192);
    EXPECT_EQ(choose(bf16_product(5888, 8640, 136, Op::n, Op::n), kH200Sms).tile_n, 128);
    EXPECT_NE(choose(bf16_product(4096, 12288, 4096, Op::n, Op::t), kH200Sms).tile_n, 192);  // K long: rule 9's 176
    EXPECT_EQ(choose(bf16_product(16384, 768, 768, Op::n, Op::n), kH200Sms).tile_n, 128);
    EXPECT_EQ(choose(bf16_product(16384, 50256, 768, Op::n, Op::t), kH200Sms).tile_n, 128);
    EXPECT_EQ(choose(bf16_product(16384, 50304, 768, Op::n, Op::t, Epilogue::bias), kH200Sms).tile_n, 128);
    Desc f32_out = bf16_product(16384, 50304, 768, Op::n, Op::t);
    f32_out.d_type = Type::f32;
    EXPECT_NE(choose(f32_out, kH200Sms).tile_n, 192);
}

TEST(GemmKernelNamed, N192) {
    // 4096 x 12288: 32 x 64 tiles of 128 x 192 on 132 SMs.
    const auto c = kernel_named(bf16_product(4096, 12288, 4096, Op::n, Op::t), "fixed_n192", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->tile_m, 128);
    EXPECT_EQ(c->tile_n, 192);
    EXPECT_EQ(c->cluster_m, 1);
    EXPECT_EQ(c->splits, 1);
    EXPECT_EQ(c->ctas, kH200Sms);
    EXPECT_TRUE(c->fixed_epilogue && c->pingpong && c->tma_store);
    EXPECT_EQ(kernel_text(*c), "128x192 pingpong fixed-epilogue splits 1");
    EXPECT_TRUE(contains(c->why, "4 ring stages")) << c->why;
    // Every layout; one tile: one CTA.
    const auto one = kernel_named(bf16_product(100, 150, 64, Op::t, Op::n), "fixed_n192", kH200Sms);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->ctas, 1);
    // Epilogue none with bf16 operands and D only.
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias), "fixed_n192", kH200Sms));
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias_gelu), "fixed_n192",
                              kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::e4m3), "fixed_n192", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::f16), "fixed_n192", kH200Sms));
    const auto g16 = kernel_named(bf16_product(4096, 12288, 4096, Op::n, Op::t), "fixed_n192_g16", kH200Sms);
    ASSERT_TRUE(g16);
    EXPECT_EQ(g16->tile_n, 192);
    EXPECT_EQ(g16->group_m, 16);
    EXPECT_TRUE(contains(g16->why, "groups of 16 tile rows")) << g16->why;
}

TEST(GemmKernelNamed, N168) {
    // 4096 x 11008: 32 x 66 tiles of 128 x 168 (the last column 88 wide), 2,112 tiles: 16 waves of 132.
    const auto c = kernel_named(bf16_product(4096, 11008, 4096, Op::n, Op::t), "fixed_n168", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->tile_n, 168);
    EXPECT_EQ(c->splits, 1);
    EXPECT_EQ(c->ctas, kH200Sms);
    EXPECT_TRUE(c->fixed_epilogue && c->pingpong && c->tma_store);
    EXPECT_EQ(kernel_text(*c), "128x168 pingpong fixed-epilogue splits 1");
    // Every layout (an MN-major B loads whole 64-column boxes); epilogue none, bf16 operands and D only.
    EXPECT_TRUE(kernel_named(bf16_product(100, 150, 64, Op::t, Op::n), "fixed_n168", kH200Sms));
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias), "fixed_n168", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::e4m3), "fixed_n168", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::f16), "fixed_n168", kH200Sms));
}

TEST(GemmKernelNamed, N176) {
    // 4096 x 12288 (the 7B fwd_qkv): 32 x 70 tiles of 128 x 176 (the last column 144 wide), 2,240 tiles:
    // 16.97 waves of 132.
    const auto c = kernel_named(bf16_product(4096, 12288, 4096, Op::n, Op::t), "fixed_n176", kH200Sms);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->tile_n, 176);
    EXPECT_EQ(c->splits, 1);
    EXPECT_EQ(c->ctas, kH200Sms);
    EXPECT_TRUE(c->fixed_epilogue && c->pingpong && c->tma_store);
    EXPECT_EQ(kernel_text(*c), "128x176 pingpong fixed-epilogue splits 1");
    EXPECT_TRUE(kernel_named(bf16_product(100, 150, 64, Op::t, Op::n), "fixed_n176", kH200Sms));
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias), "fixed_n176", kH200Sms));
    EXPECT_FALSE(kernel_named(square(512, Type::f16), "fixed_n176", kH200Sms));
}

TEST(GemmChoose, Rule9TakesTheWiderTileThatFillsTheWaves) {
    // The 7B fwd_qkv, NT: 17 waves of 176/128 (23.38) against 23 whole waves and the tail split's unit at
    // 4/3 (23.44).
    const Choice qkv = choose(bf16_product(4096, 12288, 4096, Op::n, Op::t), kH200Sms);
    EXPECT_EQ(qkv.tile_n, 176);
    EXPECT_EQ(qkv.splits, 1);
    EXPECT_TRUE(qkv.pingpong && qkv.fixed_epilogue && qkv.tma_store && !qkv.tma_load_c);
    EXPECT_EQ(qkv.ctas, kH200Sms);
    EXPECT_TRUE(contains(qkv.why, "2240 tiles of 128 x 176")) << qkv.why;
    EXPECT_TRUE(contains(qkv.why, "23.38 against 23.44")) << qkv.why;
    // Not where 128 x 128 tiles fill the waves as well or better (4096 x 11008: 21 against 16 x 1.375 = 22;
    // 4096^3: 8 against 8.25), nor with B MN-major (its TN and NN forms), an epilogue, a short K (GPT-2's
    // K = 768) or another D.
    for (const Desc& d :
         {bf16_product(4096, 11008, 4096, Op::n, Op::t), bf16_product(4096, 4096, 4096, Op::n, Op::t),
          bf16_product(4096, 12288, 4096, Op::t, Op::n), bf16_product(4096, 12288, 4096, Op::n, Op::n),
          bf16_product(4096, 12288, 4096, Op::n, Op::t, Epilogue::bias), bf16_product(4096, 12288, 768, Op::n, Op::t),
          bf16_product(8192, 8192, 8192, Op::n, Op::t), bf16_product(16384, 16384, 16384, Op::n, Op::t)})
        EXPECT_EQ(choose(d, kH200Sms).tile_n, 128) << d.m << " x " << d.n << " x " << d.k;
    // 3072^3 NT: 384 tiles of 128 x 192, 3 waves (4.50), against 4 waves and the tail split's 2-way unit
    // (4.67) and 432 tiles of 176, 4 waves (5.50); K-major B only (its TN form stays on 128 x 128 tiles).
    const Choice c3072 = choose(bf16_product(3072, 3072, 3072, Op::n, Op::t), kH200Sms);
    EXPECT_EQ(c3072.tile_n, 192);
    EXPECT_EQ(c3072.splits, 1);
    EXPECT_EQ(c3072.ctas, kH200Sms);
    EXPECT_EQ(kernel_text(c3072), "128x192 pingpong fixed-epilogue splits 1");
    EXPECT_TRUE(contains(c3072.why, "384 tiles of 128 x 192")) << c3072.why;
    EXPECT_TRUE(contains(c3072.why, "4.50 against 4.67")) << c3072.why;
    EXPECT_EQ(choose(bf16_product(3072, 3072, 3072, Op::t, Op::n), kH200Sms).tile_n, 128);
    // The verify suite's case: one wave of 96 tiles of 128 x 176 against 136 of 128 x 128.
    EXPECT_EQ(choose(bf16_product(1000, 2056, 2056, Op::t, Op::t), kH200Sms).tile_n, 176);
    Desc f32 = bf16_product(4096, 12288, 4096, Op::n, Op::t);
    f32.d_type = Type::f32;
    EXPECT_NE(choose(f32, kH200Sms).tile_n, 176);
}

}  // namespace
// The narrow tail by name ("fixed_tail"): the fixed ping-pong kernel on 128 x 128 tiles with tail_n 104,
// for the epilogues it is compiled for (kTailEpilogues) in every layout; none for f16, for an fp32 D or
// for an epilogue it lacks. The dispatcher never picks it.
TEST(GemmDispatch, FixedTailByNameAndRule10) {
    for (const auto& [a, b] : {std::pair{Op::n, Op::t}, std::pair{Op::n, Op::n}, std::pair{Op::t, Op::n},
                               std::pair{Op::t, Op::t}})
        for (Epilogue e : rigel::gemm::kTailEpilogues) {
            const auto c = kernel_named(bf16_product(4096, 4096, 4096, a, b, e), "fixed_tail", kH200Sms);
            ASSERT_TRUE(c);
            EXPECT_EQ(c->tail_n, 104);
            EXPECT_TRUE(c->pingpong && c->fixed_epilogue);
            EXPECT_EQ(c->tile_m, 128);
            EXPECT_EQ(c->tile_n, 128);
            EXPECT_EQ(c->splits, 1);
            EXPECT_TRUE(contains(c->why, "re-cut 104 wide")) << c->why;
            // Rule 10: the dispatcher takes it for K-major A and B only.
            const Choice chosen = choose(bf16_product(4096, 4096, 4096, a, b, e), kH200Sms);
            EXPECT_EQ(chosen.tail_n, a == Op::n && b == Op::t ? 104 : 0) << chosen.why;
        }
    EXPECT_FALSE(kernel_named(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias), "fixed_tail", kH200Sms));
    Desc f16 = bf16_product(4096, 4096, 4096, Op::n, Op::t);
    f16.a_type = f16.b_type = f16.d_type = Type::f16;
    EXPECT_FALSE(kernel_named(f16, "fixed_tail", kH200Sms));
}

TEST(GemmChoose, Rule10NarrowTailWhereItEvensTheLastWave) {
    // The 7B fwd_down: 1,024 tiles, the last 4 columns of 128 re-cut into 5 of 104.
    const Choice down = choose(bf16_product(4096, 4096, 11008, Op::n, Op::t), kH200Sms);
    EXPECT_EQ(down.tail_n, 104);
    EXPECT_EQ(down.tile_n, 128);
    EXPECT_EQ(down.splits, 1);
    EXPECT_FALSE(down.tma_load_c);  // beta != 0: the residual plan on rule 4's kernel
    EXPECT_EQ(down.ctas, kH200Sms);
    EXPECT_TRUE(contains(down.why, "re-cut into 5 of 104")) << down.why;
    // No narrow tail where it evens nothing out by 1 % (2048^3), for an epilogue it was not compiled
    // for (bias), an fp32 D, or where another rule takes the product (the LM head's 192-wide tiles,
    // rule 9's 176-wide ones, rule 7's short tiles).
    EXPECT_EQ(choose(bf16_product(2048, 2048, 2048, Op::n, Op::t), kH200Sms).tail_n, 0);
    EXPECT_EQ(choose(bf16_product(4096, 4096, 4096, Op::n, Op::t, Epilogue::bias), kH200Sms).tail_n, 0);
    Desc f32 = bf16_product(4096, 4096, 4096, Op::n, Op::t);
    f32.d_type = Type::f32;
    EXPECT_EQ(choose(f32, kH200Sms).tail_n, 0);
    const Choice head = choose(bf16_product(16384, 50304, 768, Op::n, Op::t), kH200Sms);
    EXPECT_EQ(head.tile_n, 192);
    EXPECT_EQ(head.tail_n, 0);
    const Choice qkv = choose(bf16_product(4096, 12288, 4096, Op::n, Op::t), kH200Sms);
    EXPECT_EQ(qkv.tile_n, 176);
    EXPECT_EQ(qkv.tail_n, 0);
    EXPECT_EQ(choose(bf16_product(512, 512, 512, Op::n, Op::t), kH200Sms).tail_n, 0);
    // Wherever it fires, the tail is what plan_narrow_tail plans for the shape.
    for (std::int64_t m = 1000; m <= 9000; m += 1111)
        for (std::int64_t n = 1000; n <= 9000; n += 1333) {
            const Choice c = choose(bf16_product(m, n, 4096, Op::n, Op::t, Epilogue::bias_gelu), kH200Sms);
            if (c.tail_n == 0) continue;
            const auto t = plan_narrow_tail(static_cast<int>((m + 127) / 128), n, 128, 104, kH200Sms);
            EXPECT_GT(t.narrow_cols, 0) << m << " x " << n;
            EXPECT_EQ(c.splits, 1);
            EXPECT_EQ(c.tile_n, 128);
        }
}

TEST(GemmChoose, RowOrderWhereFewTileColumnsShareALongPanelOfA) {
    // Rule 12 on an H100's DRAM (3.35 TB/s): GPT-2's products with 6 tile columns and a long K walk their
    // tiles row by row, whatever kernel the other rules chose for them.
    const Desc lm_dw{.m = 50304, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true};
    const Desc lm_dw_bf16{.m = 50304, .n = 768, .k = 16384, .a_op = Op::t};
    const Desc mlp_up_dw{.m = 3072, .n = 768, .k = 16384, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true};
    const Desc lm_dx{.m = 16384, .n = 768, .k = 50304};
    for (const Desc& d : {lm_dw, lm_dw_bf16, mlp_up_dw, lm_dx}) {
        const Choice h100 = choose(d, kH200Sms, kH100Dram), h200 = choose(d, kH200Sms);
        EXPECT_EQ(h100.group_m, 1) << d.m << "x" << d.n << "x" << d.k;
        EXPECT_TRUE(contains(h100.why, "row by row (6 tile columns")) << h100.why;
        EXPECT_TRUE(contains(kernel_text(h100), " group 1")) << kernel_text(h100);
        // The rest of the choice is the other rules': the same as without rule 12.
        Choice same = h100;
        same.group_m = 0;
        EXPECT_EQ(kernel_text(same), kernel_text(choose(d, kH200Sms, kRowOrderMaxDramBytesPerSecond)));
        // Not on the H200 machine, which has not measured it; by name "auto" the same as choose.
        EXPECT_EQ(h200.group_m, 0);
        EXPECT_EQ(kernel_named(d, "auto", kH200Sms, kH100Dram)->group_m, 1);
        EXPECT_EQ(kernel_named(d, "auto", kH200Sms)->group_m, 0);
    }
    // Few tile rows (bwd_mlp_down_dw, 6 of 24 columns), many columns (fwd_lm_head, 393), a short K
    // (fwd_attn_proj, K 768), a square (rule 13's, below) and fp8 are not walked row by row.
    const Desc mlp_down_dw{.m = 768, .n = 3072, .k = 16384, .a_op = Op::t, .d_type = Type::f32, .allow_atomics = true};
    const Desc fwd_lm_head{.m = 16384, .n = 50304, .k = 768, .b_op = Op::t};
    const Desc fwd_attn_proj{.m = 16384, .n = 768, .k = 768, .b_op = Op::t};
    const Desc square{.m = 8192, .n = 8192, .k = 8192, .b_op = Op::t};
    const Desc fp8{.m = 50304, .n = 768, .k = 16384, .a_type = Type::e4m3, .b_type = Type::e4m3, .b_op = Op::t};
    for (const Desc& d : {mlp_down_dw, fwd_lm_head, fwd_attn_proj, fp8})
        EXPECT_EQ(choose(d, kH200Sms, kH100Dram).group_m, 0) << d.m << "x" << d.n << "x" << d.k;
    EXPECT_EQ(choose(square, kH200Sms, kH100Dram).group_m, kLargeProductGroupM);
    // Nine tile columns are more than kRowOrderMaxTileCols.
    EXPECT_EQ(choose(Desc{.m = 50304, .n = 9 * 128, .k = 16384, .a_op = Op::t}, kH200Sms, kH100Dram).group_m, 0);
    EXPECT_EQ(choose(Desc{.m = 50304, .n = 8 * 128, .k = 16384, .a_op = Op::t}, kH200Sms, kH100Dram).group_m, 1);
}

TEST(GemmChoose, SmallerGroupsOfTileRowsForALargeProductWithALongK) {
    // Rule 13 on an H100's DRAM: 8192^3 (bias + GELU or none, any layout), 9088^3, and 16384^3 with an
    // epilogue rule 14's cooperative kernel lacks walk their tiles in groups of 4 tile rows, whatever kernel
    // the other rules chose; the H200 machine keeps the groups of 8. (From 9216^3, none, bias or bias + GELU
    // take rule 14's cooperative tiles instead, below.)
    std::vector<Desc> large;
    for (Epilogue e : {Epilogue::none, Epilogue::bias_gelu})
        for (Op a : {Op::n, Op::t})
            large.push_back(Desc{.m = 8192, .n = 8192, .k = 8192, .a_op = a, .b_op = Op::t, .epilogue = e});
    large.push_back(Desc{.m = 9088, .n = 9088, .k = 9088, .b_op = Op::t});
    large.push_back(Desc{.m = 16384, .n = 16384, .k = 16384, .b_op = Op::t, .epilogue = Epilogue::bias_gelu_aux});
    for (const Desc& d : large) {
        const Choice h100 = choose(d, kH200Sms, kH100Dram), h200 = choose(d, kH200Sms);
        ASSERT_TRUE(h100.pingpong) << kernel_text(h100);
        EXPECT_EQ(h100.group_m, kLargeProductGroupM) << d.m;
        EXPECT_TRUE(contains(h100.why, "groups of 4 tile rows (")) << h100.why;
        Choice same = h100;
        same.group_m = 0;
        EXPECT_EQ(kernel_text(same), kernel_text(h200));
        EXPECT_EQ(h200.group_m, 0);
        EXPECT_EQ(kernel_named(d, "auto", kH200Sms, kH100Dram)->group_m, kLargeProductGroupM);
    }
    // Fewer than kLargeProductMinTiles tile rows or columns, or a short K, keep the groups of 8: 4096^3, the
    // 7B products, GPT-2's LM head (K 768) and MLP (16384 x 3072).
    const Desc below[] = {{.m = 4096, .n = 4096, .k = 4096, .b_op = Op::t},
                          {.m = 4096, .n = 11008, .k = 4096, .b_op = Op::t},
                          {.m = 8064, .n = 8192, .k = 8192, .b_op = Op::t},
                          {.m = 8192, .n = 8192, .k = 8191, .b_op = Op::t},
                          {.m = 16384, .n = 50304, .k = 768, .b_op = Op::t},
                          {.m = 16384, .n = 3072, .k = 768, .b_op = Op::t}};
    for (const Desc& d : below)
        EXPECT_EQ(choose(d, kH200Sms, kH100Dram).group_m, 0) << d.m << "x" << d.n << "x" << d.k;
    // Rule 12's products keep their order row by row.
    EXPECT_EQ(choose(Desc{.m = 50304, .n = 768, .k = 16384, .a_op = Op::t}, kH200Sms, kH100Dram).group_m, 1);
}

TEST(GemmChoose, CooperativeWideTilesForTheLargestProductsOnAnH100) {
    // Rule 14 on an H100's DRAM: a bf16 D with none, bias or bias + GELU, any layout, M, N and K at least
    // 9216: the cooperative 128 x 256 kernel compiled for the epilogue, as "fixed_wide" names it; the H200
    // machine keeps the ping-pong tiles.
    for (Epilogue e : kWideEpilogues)
        for (const auto& [a, b] : {std::pair{Op::n, Op::t}, std::pair{Op::n, Op::n}, std::pair{Op::t, Op::n},
                                   std::pair{Op::t, Op::t}}) {
            for (const Desc& d : {Desc{.m = 16384, .n = 16384, .k = 16384, .a_op = a, .b_op = b, .epilogue = e},
                                  Desc{.m = 9216, .n = 9216, .k = 9216, .a_op = a, .b_op = b, .epilogue = e},
                                  Desc{.m = 20000, .n = 16400, .k = 12300, .a_op = a, .b_op = b, .epilogue = e}}) {
                const Choice h100 = choose(d, kH200Sms, kH100Dram);
                EXPECT_FALSE(h100.pingpong) << kernel_text(h100);
                EXPECT_TRUE(h100.fixed_epilogue);
                EXPECT_EQ(h100.tile_n, 256);
                EXPECT_EQ(h100.tile_m, 128);
                EXPECT_EQ(h100.splits, 1);
                EXPECT_EQ(h100.group_m, 0);
                EXPECT_FALSE(h100.tma_load_c);
                EXPECT_EQ(h100.ctas, kH200Sms);
                EXPECT_TRUE(contains(h100.why, "cooperative 128 x 256 kernel")) << h100.why;
                EXPECT_EQ(kernel_text(h100), kernel_text(*kernel_named(d, "fixed_wide", kH200Sms, kH100Dram)));
                EXPECT_EQ(kernel_text(*kernel_named(d, "auto", kH200Sms, kH100Dram)), kernel_text(h100));
                EXPECT_TRUE(choose(d, kH200Sms).pingpong);
                EXPECT_TRUE(choose(d, kH200Sms, kRowOrderMaxDramBytesPerSecond).pingpong);
            }
        }
    // Not below 9216 in any extent, not for epilogues the wide kernel lacks, an fp32 D or f16 operands.
    const Desc keep[] = {{.m = 8192, .n = 8192, .k = 8192, .b_op = Op::t},
                         {.m = 16384, .n = 16384, .k = 9215, .b_op = Op::t},
                         {.m = 16384, .n = 9088, .k = 16384, .b_op = Op::t},
                         {.m = 9088, .n = 16384, .k = 16384, .b_op = Op::t},
                         {.m = 16384, .n = 50304, .k = 768, .b_op = Op::t},
                         {.m = 9215, .n = 16384, .k = 16384, .a_op = Op::t},
                         {.m = 16384, .n = 16384, .k = 16384, .b_op = Op::t, .epilogue = Epilogue::bias_gelu_aux},
                         {.m = 16384, .n = 16384, .k = 16384, .b_op = Op::t, .epilogue = Epilogue::bias_relu},
                         {.m = 16384, .n = 16384, .k = 16384, .b_op = Op::t, .d_type = Type::f32},
                         {.m = 16384, .n = 16384, .k = 16384, .a_type = Type::f16, .b_type = Type::f16, .b_op = Op::t,
                          .d_type = Type::f16}};
    for (const Desc& d : keep) {
        const Choice h100 = choose(d, kH200Sms, kH100Dram);
        EXPECT_FALSE(h100.tile_n == 256 && h100.fixed_epilogue && !h100.pingpong)
            << d.m << "x" << d.n << "x" << d.k << ": " << kernel_text(h100);
    }
}

TEST(GemmChoose, ResidualPlanTakesTheTileOrderOfItsOwnTiles) {
    // Rule 14's calls with beta != 0 run on rule 4's 128 x 128 ping-pong kernel, C loaded by TMA where that
    // kernel has the path (has_tma_c_kernel: not for bias + GELU); on an H100's DRAM its tiles walk in rule
    // 13's groups of 4 tile rows (16384^3: 128 tile rows and columns), as the dispatcher orders the same tiles
    // where it picks that kernel itself (an fp32 D).
    const int own_order = choose(Desc{.m = 16384, .n = 16384, .k = 16384, .b_op = Op::t, .d_type = Type::f32},
                                 kH200Sms, kH100Dram)
                              .group_m;
    EXPECT_EQ(own_order, kLargeProductGroupM);
    for (Epilogue e : kWideEpilogues) {
        const Desc square{.m = 16384, .n = 16384, .k = 16384, .b_op = Op::t, .epilogue = e};
        const Choice wide = choose(square, kH200Sms, kH100Dram);
        ASSERT_TRUE(wide_cooperative(wide)) << kernel_text(wide);
        const std::optional<Choice> with_c = residual_choice(square, wide, kH100Dram);
        ASSERT_TRUE(with_c.has_value());
        EXPECT_TRUE(with_c->pingpong);
        EXPECT_EQ(with_c->tile_n, 128);
        EXPECT_EQ(with_c->tail_n, 0);
        EXPECT_TRUE(with_c->fixed_epilogue);
        EXPECT_EQ(with_c->tma_load_c, has_tma_c_kernel(square));
        EXPECT_EQ(with_c->group_m, own_order) << with_c->why;
        EXPECT_TRUE(contains(with_c->why, "shared by both consumers")) << with_c->why;
        // On the H200's DRAM no order is asked for: the kernel's own (0).
        EXPECT_EQ(residual_choice(square, wide, kH200DramBytesPerSecond)->group_m, 0);
    }
    // Rule 8's 128 x 192 tiles keep the order they have (on the H200 machine: none) for their residual.
    const Desc rule8{.m = 6000, .n = 8640, .k = 136, .b_op = Op::t};
    const Choice n192 = choose(rule8, kH200Sms);
    ASSERT_TRUE(wide_n_tiles(n192)) << kernel_text(n192);
    const std::optional<Choice> n192_c = residual_choice(rule8, n192);
    ASSERT_TRUE(n192_c.has_value());
    EXPECT_EQ(n192_c->group_m, n192.group_m);
    EXPECT_EQ(n192_c->tile_n, 128);
    // A choice whose kernel loads C itself has no residual plan.
    const Desc small{.m = 4096, .n = 4096, .k = 4096, .b_op = Op::t, .epilogue = Epilogue::bias};
    EXPECT_FALSE(residual_choice(small, choose(small, kH200Sms)).has_value());
}

}  // namespace rigel::gemm
