// Host tests of the alignment probe's host half: the minimal rule derived
// from a table of cases, the verdict per rule, the TMA box image (swizzle,
// zero fill, strides, coordinates) and its comparison with what a simulated
// device wrote, the fp8 GEMM reference and D image, and the judgment of
// rigel's own checks. Every verdict is shown to fail on a deviating input.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "core/formats.hpp"
#include "probes/alignment/alignment_rules.hpp"

using namespace rigel;

namespace {

SweptCase sc(std::int64_t value, CaseOutcome o, bool legal = true, std::string evidence = "") {
    SweptCase c;
    c.label = "v" + std::to_string(value);
    c.value = value;
    c.outcome = o;
    c.doc_legal = legal;
    c.evidence = std::move(evidence);
    return c;
}

// Offsets 0..64 with the documented 16-byte rule answered as documented.
std::vector<SweptCase> offsets_as_documented() {
    std::vector<SweptCase> v;
    for (int off : {0, 1, 2, 4, 8, 16, 32, 64})
        v.push_back(sc(off, off % 16 == 0 ? CaseOutcome::exact : CaseOutcome::refused, off % 16 == 0,
                       off % 16 == 0 ? "exact" : "cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE (1)"));
    return v;
}

RuleSpec spec16() {
    RuleSpec s;
    s.path = "p";
    s.quantity = "q";
    s.unit = "bytes";
    s.form = RuleForm::multiple_of;
    s.documented = "multiple of 16 bytes";
    return s;
}

}  // namespace

TEST(AlignmentRules, DerivesTheAlignmentThatSeparatesAcceptedFromRefused) {
    const DerivedRule r = derive_rule(RuleForm::multiple_of, offsets_as_documented(), "bytes");
    EXPECT_TRUE(r.consistent);
    EXPECT_EQ(r.lo, 16);
    EXPECT_EQ(r.hi, 16);
    EXPECT_EQ(r.text, "multiple of 16 bytes");

    // A device that also takes 8-byte offsets.
    auto v = offsets_as_documented();
    v[4].outcome = CaseOutcome::exact;
    EXPECT_EQ(derive_rule(RuleForm::multiple_of, v, "bytes").lo, 8);

    // Nothing refused, nothing accepted, and a table no alignment explains.
    std::vector<SweptCase> all_ok{sc(0, CaseOutcome::exact), sc(3, CaseOutcome::exact)};
    EXPECT_EQ(derive_rule(RuleForm::multiple_of, all_ok, "").lo, 1);
    EXPECT_EQ(derive_rule(RuleForm::multiple_of, all_ok, "").text, "no alignment rule: every swept value accepted");
    std::vector<SweptCase> none{sc(8, CaseOutcome::refused), sc(24, CaseOutcome::refused)};
    EXPECT_EQ(derive_rule(RuleForm::multiple_of, none, "").text, "every swept value refused");
    std::vector<SweptCase> odd{sc(16, CaseOutcome::refused), sc(32, CaseOutcome::exact), sc(48, CaseOutcome::exact)};
    EXPECT_FALSE(derive_rule(RuleForm::multiple_of, odd, "").consistent);

    // A sweep that cannot tell 32 from 64.
    std::vector<SweptCase> coarse{sc(0, CaseOutcome::exact), sc(16, CaseOutcome::refused), sc(64, CaseOutcome::exact)};
    const DerivedRule c = derive_rule(RuleForm::multiple_of, coarse, "bytes");
    EXPECT_EQ(c.lo, 32);
    EXPECT_EQ(c.hi, 64);
}

TEST(AlignmentRules, DerivesBounds) {
    std::vector<SweptCase> v{sc(16, CaseOutcome::exact), sc(32, CaseOutcome::exact), sc(64, CaseOutcome::refused),
                             sc(128, CaseOutcome::refused)};
    DerivedRule r = derive_rule(RuleForm::at_most, v, "bytes");
    EXPECT_TRUE(r.consistent);
    EXPECT_EQ(r.lo, 32);
    EXPECT_EQ(r.hi, 63);
    v[2].outcome = CaseOutcome::exact;
    v[3].outcome = CaseOutcome::exact;
    EXPECT_NE(derive_rule(RuleForm::at_most, v, "bytes").text.find("no bound"), std::string::npos);
    v[0].outcome = CaseOutcome::refused;  // refused below an accepted value: no upper bound explains it
    EXPECT_FALSE(derive_rule(RuleForm::at_most, v, "bytes").consistent);

    std::vector<SweptCase> w{sc(-32, CaseOutcome::refused), sc(-16, CaseOutcome::refused), sc(0, CaseOutcome::exact),
                             sc(16, CaseOutcome::exact)};
    r = derive_rule(RuleForm::at_least, w, "bytes");
    EXPECT_TRUE(r.consistent);
    EXPECT_EQ(r.lo, -15);
    EXPECT_EQ(r.hi, 0);

    // Cases not run do not count.
    std::vector<SweptCase> x{sc(16, CaseOutcome::exact), sc(8, CaseOutcome::not_run)};
    EXPECT_EQ(derive_rule(RuleForm::at_most, x, "").lo, 16);
    EXPECT_EQ(derive_rule(RuleForm::listed, x, "").text, "accepted: v16; refused: none");
}

TEST(AlignmentRules, JudgesEachRuleAgainstTheDocumentation) {
    const Finding ok = judge_rule("alignment", spec16(), offsets_as_documented());
    EXPECT_EQ(ok.relation, DocRelation::confirms);
    EXPECT_TRUE(ok.verified);
    EXPECT_NE(ok.measured.find("multiple of 16 bytes"), std::string::npos);
    EXPECT_NE(ok.measured.find("all 4 refused"), std::string::npos) << ok.measured;
    EXPECT_NE(ok.detail.find("v8: refused"), std::string::npos);

    auto lenient = offsets_as_documented();
    lenient[4].outcome = CaseOutcome::exact;  // 8 bytes accepted and right
    EXPECT_EQ(judge_rule("alignment", spec16(), lenient).relation, DocRelation::fills_in);

    auto silent_wrong = offsets_as_documented();
    silent_wrong[4].outcome = CaseOutcome::wrong;  // 8 bytes accepted and wrong
    const Finding bad = judge_rule("alignment", spec16(), silent_wrong);
    EXPECT_EQ(bad.relation, DocRelation::contradicts);
    EXPECT_NE(bad.measured.find("WRONG"), std::string::npos);

    auto strict = offsets_as_documented();
    strict[5].outcome = CaseOutcome::refused;  // 16 bytes refused although documented
    EXPECT_EQ(judge_rule("alignment", spec16(), strict).relation, DocRelation::contradicts);

    auto faulted = offsets_as_documented();
    faulted[1].outcome = CaseOutcome::failed;
    EXPECT_EQ(judge_rule("alignment", spec16(), faulted).relation, DocRelation::contradicts);

    RuleSpec silent = spec16();
    silent.documented.clear();
    EXPECT_EQ(judge_rule("alignment", silent, offsets_as_documented()).relation, DocRelation::fills_in);

    std::vector<SweptCase> nothing{sc(0, CaseOutcome::not_run, true, "device without TMA")};
    const Finding na = judge_rule("alignment", spec16(), nothing);
    EXPECT_EQ(na.relation, DocRelation::not_available);
    EXPECT_NE(na.detail.find("device without TMA"), std::string::npos);

    // Encode-only cases: checked by nothing, so not verified.
    std::vector<SweptCase> encode{sc(0, CaseOutcome::unchecked), sc(8, CaseOutcome::refused, false)};
    const Finding e = judge_rule("alignment", spec16(), encode);
    EXPECT_FALSE(e.verified);
    EXPECT_EQ(e.relation, DocRelation::confirms);
}

TEST(AlignmentRules, PointerAlignment) {
    EXPECT_EQ(pointer_alignment(0), 256u);
    EXPECT_EQ(pointer_alignment(1), 1u);
    EXPECT_EQ(pointer_alignment(8), 8u);
    EXPECT_EQ(pointer_alignment(48), 16u);
    EXPECT_EQ(pointer_alignment(512), 256u);
}

TEST(AlignmentRules, SwizzleIsTheXorOfRowBitsIntoChunkBits) {
    EXPECT_EQ(swizzle_offset(128, 0), 128u);
    EXPECT_EQ(swizzle_offset(128, 128), 144u);                 // row 1, chunk 0 -> chunk 1
    EXPECT_EQ(swizzle_offset(0x3F0, 128), 0x380u);             // row 7, chunk 7 -> chunk 0
    EXPECT_EQ(swizzle_offset(0x3F5, 128), 0x385u);             // bytes inside a chunk stay
    EXPECT_EQ(swizzle_offset(1024 + 128, 128), 1024u + 144u);  // repeats every 1024 bytes
    EXPECT_EQ(swizzle_offset(128, 32), 144u);
    EXPECT_EQ(swizzle_offset(256, 32), 256u);        // 32B: only row bit 7
    EXPECT_EQ(swizzle_offset(384, 64), 384u ^ 48u);  // 64B: row bits 7, 8 into chunk bits 4, 5
    for (int span : {32, 64, 128}) {
        std::set<std::size_t> seen;
        for (std::size_t o = 0; o < 1024; ++o) {
            const std::size_t s = swizzle_offset(o, span);
            EXPECT_LT(s, 1024u);
            EXPECT_EQ(s / 128, o / 128);  // stays in its 128-byte row
            seen.insert(s);
        }
        EXPECT_EQ(seen.size(), 1024u);
    }
}

TEST(AlignmentRules, TmaImageCopiesInBoundsBytesAndZeroFillsTheRest) {
    TmaGeometry g;
    g.elem_bytes = 2;
    g.dims = {4, 3, 1};
    g.strides = {16, 0};
    g.box = {8, 4, 1};  // 16-byte rows
    g.base_offset = 16;
    g.coords = {0, 1, 0};  // rows 1, 2 in bounds; columns 4..7 and rows 3, 4 filled
    EXPECT_EQ(tma_row_bytes(g), 16u);
    EXPECT_EQ(tma_box_bytes(g), 64u);
    EXPECT_EQ(tma_allocation_extent(g), 16u + 8u + 2u * 16u);
    const std::vector<std::uint8_t> alloc = nonzero_pattern(128, 7);
    for (std::uint8_t b : alloc) EXPECT_NE(b, 0);
    const TmaImage img = tma_expected_image(g, alloc, TmaSmemModel::packed_rows, 96, 0xC3);
    for (int r = 0; r < 2; ++r)
        for (int b = 0; b < 8; ++b) {
            EXPECT_EQ(img.bytes[static_cast<std::size_t>(16 * r + b)],
                      alloc[static_cast<std::size_t>(16 + 16 * (1 + r) + b)]);
            EXPECT_EQ(img.kind[static_cast<std::size_t>(16 * r + b)], ByteKind::data);
        }
    for (std::size_t i = 0; i < 64; ++i)
        if (img.kind[i] != ByteKind::data) {
            EXPECT_EQ(img.bytes[i], 0);
            EXPECT_EQ(img.kind[i], ByteKind::fill);
        }
    for (std::size_t i = 64; i < 96; ++i) {
        EXPECT_EQ(img.bytes[i], 0xC3);
        EXPECT_EQ(img.kind[i], ByteKind::untouched);
    }

    // Negative coordinates fill too; element strides skip rows.
    g.coords = {-2, 0, 0};
    const TmaImage neg = tma_expected_image(g, alloc, TmaSmemModel::packed_rows, 96, 0xC3);
    EXPECT_EQ(neg.kind[0], ByteKind::fill);
    EXPECT_EQ(neg.kind[4], ByteKind::data);
    EXPECT_EQ(neg.bytes[4], alloc[16]);
    g.coords = {0, 0, 0};
    g.elem_strides = {1, 2, 1};
    EXPECT_EQ(tma_box_rows(g), 2u);
    const TmaImage strided = tma_expected_image(g, alloc, TmaSmemModel::packed_rows, 96, 0xC3);
    EXPECT_EQ(strided.bytes[16], alloc[16 + 2 * 16]);  // the box's second row is tensor row 2
}

TEST(AlignmentRules, TmaLoadVerdicts) {
    TmaGeometry g;
    g.elem_bytes = 2;
    g.dims = {64, 20, 1};
    g.strides = {128, 0};
    g.box = {32, 8, 1};  // 64-byte rows under the 128B swizzle: narrower than the span
    g.swizzle_bytes = 128;
    g.coords = {0, 16, 0};
    const std::vector<std::uint8_t> alloc = nonzero_pattern(tma_allocation_extent(g) + 64, 11);
    const std::size_t dump = tma_dump_bytes(g);
    EXPECT_GE(dump, tma_image_bytes(g, TmaSmemModel::span_rows) + 1024);

    const TmaImage packed = tma_expected_image(g, alloc, TmaSmemModel::packed_rows, dump, 0xC3);
    TmaLoadVerdict v = judge_tma_load(g, alloc, packed.bytes, 0xC3);
    EXPECT_EQ(v.outcome, CaseOutcome::exact);
    EXPECT_EQ(v.model, TmaSmemModel::packed_rows);
    EXPECT_GT(v.diff.fill, 0u);

    const TmaImage spans = tma_expected_image(g, alloc, TmaSmemModel::span_rows, dump, 0xC3);
    v = judge_tma_load(g, alloc, spans.bytes, 0xC3);
    EXPECT_EQ(v.outcome, CaseOutcome::exact);
    EXPECT_EQ(v.model, TmaSmemModel::span_rows);

    // Two data chunks swapped: the right bytes, elsewhere.
    std::vector<std::uint8_t> swapped = packed.bytes;
    std::swap_ranges(swapped.begin(), swapped.begin() + 16, swapped.begin() + 16);
    v = judge_tma_load(g, alloc, swapped, 0xC3);
    EXPECT_EQ(v.outcome, CaseOutcome::rearranged);

    // One data byte wrong, one zero-fill byte wrong, one guard byte written.
    const auto first_of = [&](ByteKind k) {
        return std::size_t(std::find(packed.kind.begin(), packed.kind.end(), k) - packed.kind.begin());
    };
    EXPECT_LT(first_of(ByteKind::fill), dump);
    for (std::size_t at : {first_of(ByteKind::data), first_of(ByteKind::fill), dump - 1}) {
        std::vector<std::uint8_t> bad = packed.bytes;
        bad[at] ^= 0x40;
        v = judge_tma_load(g, alloc, bad, 0xC3);
        EXPECT_EQ(v.outcome, CaseOutcome::wrong) << at;
    }
    std::vector<std::uint8_t> guard = packed.bytes;
    guard[dump - 1] = 0;
    EXPECT_EQ(judge_tma_load(g, alloc, guard, 0xC3).diff.untouched_wrong, 1u);
    // Nothing landed: the poison is still there.
    const std::vector<std::uint8_t> poison(dump, 0xC3);
    EXPECT_EQ(judge_tma_load(g, alloc, poison, 0xC3).outcome, CaseOutcome::wrong);
}

TEST(AlignmentRules, Fp8GemmReferenceAndImage) {
    LtGemmCase c;
    c.m = 3;
    c.n = 2;
    c.k = 4;
    c.lda = 5;
    c.ldb = 6;
    c.ldd = 4;
    c.a_offset = 1;
    c.d_offset = 4;
    LtOperands ops = make_lt_operands(c, 3);
    EXPECT_EQ(ops.a.size(), lt_a_allocation(c));
    for (std::uint8_t code : ops.a) {
        const float v = e4m3_to_f32(code);
        EXPECT_TRUE(v == -2 || v == -1 || v == 0 || v == 1 || v == 2) << int(code);
    }
    const std::vector<double> ref = lt_reference(c, ops);
    for (int i = 0; i < c.m; ++i)
        for (int j = 0; j < c.n; ++j) {
            double s = 0;
            for (int kk = 0; kk < c.k; ++kk)  // A^T: A(kk, i) at kk + i*lda; B(kk, j) at kk + j*ldb
                s += double(e4m3_to_f32(ops.a[std::size_t(c.a_offset + kk + i * c.lda)])) *
                     double(e4m3_to_f32(ops.b[std::size_t(kk + j * c.ldb)]));
            EXPECT_EQ(ref[std::size_t(i + j * c.m)], s);
        }
    // Non-transposed A: A(i, kk) at i + kk*lda.
    LtGemmCase nn = c;
    nn.a_transposed = false;
    const std::vector<double> ref_nn = lt_reference(nn, ops);
    double s00 = 0;
    for (int kk = 0; kk < c.k; ++kk)
        s00 += double(e4m3_to_f32(ops.a[std::size_t(c.a_offset + kk * c.lda)])) *
               double(e4m3_to_f32(ops.b[std::size_t(kk)]));
    EXPECT_EQ(ref_nn[0], s00);

    for (DType out : {DType::f32, DType::bf16}) {
        c.out = out;
        const std::vector<std::uint8_t> img = lt_expected_d(c, ref, 0xA5);
        EXPECT_EQ(img.size(), lt_d_allocation(c));
        EXPECT_EQ(img[0], 0xA5);  // before D (the offset)
        const std::size_t eb = std::size_t(lt_out_bytes(out));
        const std::size_t at = std::size_t(c.d_offset) + (1 + 1 * std::size_t(c.ldd)) * eb;  // D(1, 1)
        double got = 0;
        if (out == DType::f32) {
            float f;
            std::memcpy(&f, img.data() + at, 4);
            got = f;
        } else {
            std::uint16_t u;
            std::memcpy(&u, img.data() + at, 2);
            got = bf16_to_f32(u);
        }
        EXPECT_EQ(got, ref[std::size_t(1 + 1 * c.m)]);
        EXPECT_EQ(judge_lt_output(c, img, img).outcome, CaseOutcome::exact);
        std::vector<std::uint8_t> wrong = img;
        wrong[at] ^= 1;
        const LtOutputVerdict v = judge_lt_output(c, img, wrong);
        EXPECT_EQ(v.outcome, CaseOutcome::wrong);
        EXPECT_NE(v.evidence.find("1 of 6 outputs differ"), std::string::npos) << v.evidence;
        std::vector<std::uint8_t> outside = img;
        outside[std::size_t(c.d_offset) + 3 * eb] ^= 1;  // row 3 of column 0: padding between M and ldd
        EXPECT_EQ(judge_lt_output(c, img, outside).outcome, CaseOutcome::wrong);
    }
    // A reference bf16 cannot hold exactly is a logic error, not a verdict.
    c.out = DType::bf16;
    std::vector<double> inexact(ref.size(), 257.0);
    EXPECT_THROW(lt_expected_d(c, inexact, 0xA5), std::logic_error);
    // D in a type the probe does not ask cuBLASLt for is refused, not read as bf16.
    c.out = DType::f16;
    EXPECT_THROW(lt_expected_d(c, ref, 0xA5), std::invalid_argument);
    EXPECT_THROW(lt_out_bytes(DType::e4m3), std::invalid_argument);
}

TEST(AlignmentRules, JudgesRigelsChecks) {
    // The messages hopper_tma_check gives today.
    const std::string half = "K must be a multiple of 8: TMA needs 16-byte row strides (K x 2 bytes)";
    const std::string fp8 = "K must be a multiple of 16: TMA needs 16-byte row strides (K x 1 byte)";
    EXPECT_TRUE(names_k_rule(half, 2));
    EXPECT_TRUE(names_k_rule(fp8, 1));
    EXPECT_FALSE(names_k_rule(half, 1));
    EXPECT_FALSE(names_k_rule("K must be a multiple of 8", 2));  // the 16-byte reason is part of the rule
    EXPECT_EQ(k_rule_phrase(2), "K must be a multiple of 8");

    RuleSpec spec;
    spec.quantity = "K rule";
    std::vector<CheckCase> cases{{"k30 bf16 17x33x4", true, k_rule_phrase(2), half},
                                 {"k30 bf16 17x33x8", false, k_rule_phrase(2), ""}};
    Finding f = judge_checks("alignment", spec, cases);
    EXPECT_EQ(f.relation, DocRelation::confirms);
    EXPECT_TRUE(f.verified);
    EXPECT_NE(f.measured.find("1 of 1 illegal"), std::string::npos);

    auto unnamed = cases;
    unnamed[0].message = "bad shape";
    f = judge_checks("alignment", spec, unnamed);
    EXPECT_EQ(f.relation, DocRelation::contradicts);
    EXPECT_NE(f.detail.find("WITHOUT naming the rule"), std::string::npos);

    auto accepted_illegal = cases;
    accepted_illegal[0].message.clear();
    EXPECT_EQ(judge_checks("alignment", spec, accepted_illegal).relation, DocRelation::contradicts);

    auto refused_legal = cases;
    refused_legal[1].message = half;
    EXPECT_EQ(judge_checks("alignment", spec, refused_legal).relation, DocRelation::contradicts);

    EXPECT_EQ(judge_checks("alignment", spec, {}).relation, DocRelation::not_available);
}
