// Host tests of the format probes' host halves: the crafted inputs, the
// expectations, and the verdicts drawn from device output, fed here with
// emulated devices (one that follows the documented rules, and ones that do
// not) so that every verdict can be seen to fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "core/formats.hpp"
#include "probes/formats/format_checks.hpp"
#include "probes/formats/gemm_overflow.hpp"

using namespace rigel;

namespace {

float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

// A device that does what the documentation says (rigel's host codecs), with
// every instruction present.
FormatDeviceResults documented_device(const FormatInputs& in) {
    FormatDeviceResults d;
    d.compute_capability = 100;
    d.compiled_arch = 1000;
    d.cvt_compiled.fill(true);
    d.decode_compiled.fill(true);
    const std::size_t n = in.values.size();
    d.cvt_out.resize(static_cast<std::size_t>(kCvtOps) * n);
    for (int op = 0; op < kCvtOps; ++op)
        for (std::size_t i = 0; i < n; ++i)
            d.cvt_out[static_cast<std::size_t>(op) * n + i] = expected_code(static_cast<CvtOp>(op), in.values[i]);
    d.decode_out.resize(static_cast<std::size_t>(kDecodeOps) * kDecodeSlots);
    for (int op = 0; op < kDecodeOps; ++op)
        for (int s = 0; s < kDecodeSlots; ++s)
            d.decode_out[static_cast<std::size_t>(op * kDecodeSlots + s)] = expected_decode_slot(static_cast<DecodeOp>(op), s);
    for (auto& j : d.jit_nosat) {
        j.attempted = true;
        j.control_accepted = true;
        j.accepted = false;
        j.log = "CUDA_ERROR_INVALID_PTX: '.satfinite' modifier required";
    }
    return d;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& path, const std::string& quantity_prefix) {
    for (const auto& f : fs)
        if (f.path == path && f.quantity.rfind(quantity_prefix, 0) == 0) return &f;
    return nullptr;
}

int count(const std::vector<Finding>& fs, DocRelation r) {
    return static_cast<int>(std::count_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.relation == r; }));
}

std::size_t index_of(const FormatInputs& in, float x) {
    for (std::size_t i = 0; i < in.crafted; ++i)
        if (std::bit_cast<std::uint32_t>(in.values[i]) == std::bit_cast<std::uint32_t>(x)) return i;
    return in.values.size();
}

}  // namespace

// --- cvt_saturation -------------------------------------------------------------

TEST(CvtInputs, CraftedSetHoldsTheBoundariesTheBriefNames) {
    const FormatInputs in = make_format_inputs(1, true);
    const float inf = std::numeric_limits<float>::infinity();
    for (float x : {448.0f, 449.0f, 464.0f, 480.0f, 1e6f, 57344.0f, 61440.0f, 65536.0f, inf, -inf,
                    std::ldexp(1.0f, -9), std::ldexp(1.0f, -10), std::ldexp(1.5f, -10), std::ldexp(1.0f, -16),
                    std::ldexp(1.0f, -17), 0.0f, -0.0f})
        EXPECT_LT(index_of(in, x), in.crafted) << x;
    bool has_nan = false;
    for (std::size_t i = 0; i < in.crafted; ++i) has_nan |= std::isnan(in.values[i]);
    EXPECT_TRUE(has_nan);
    EXPECT_EQ(in.labels.size(), in.crafted);
    EXPECT_EQ(in.masks.size(), in.crafted);
    EXPECT_EQ(in.values.size() % 2, 0u);
    EXPECT_GE(in.values.size(), in.crafted + in.sweep);
}

TEST(CvtInputs, SweepIsSeededAndQuickIsSmaller) {
    const FormatInputs a = make_format_inputs(1, true), b = make_format_inputs(1, true), c = make_format_inputs(2, true);
    ASSERT_EQ(a.values.size(), b.values.size());
    ASSERT_EQ(a.values.size(), c.values.size());
    EXPECT_TRUE(std::equal(a.values.begin(), a.values.end(), b.values.begin(), [](float x, float y) {
        return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
    }));
    EXPECT_FALSE(std::equal(a.values.begin(), a.values.end(), c.values.begin(), [](float x, float y) {
        return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
    }));
    const FormatInputs full = make_format_inputs(1, false);
    EXPECT_GT(full.sweep, 10 * a.sweep);
    // The sweep reaches every fp32 exponent, NaNs and subnormals included.
    std::vector<bool> exps(256, false);
    for (std::size_t i = a.crafted; i < a.crafted + a.sweep; ++i) exps[(std::bit_cast<std::uint32_t>(a.values[i]) >> 23) & 0xFF] = true;
    EXPECT_EQ(std::count(exps.begin(), exps.end(), true), 256);
}

TEST(CvtExpectations, DocumentedValues) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(expected_code(CvtOp::e4m3_satfinite, 1e6f), 0x7E);
    EXPECT_EQ(expected_code(CvtOp::e4m3_satfinite, -inf), 0xFE);
    EXPECT_EQ(expected_code(CvtOp::e4m3_satfinite, 464.0f), 0x7E);  // the tie goes to even (448)
    EXPECT_EQ(expected_code(CvtOp::e4m3_nosat_lib, 465.0f), 0x7F);
    EXPECT_EQ(expected_code(CvtOp::e5m2_nosat_lib, 61440.0f), 0x7C);  // the tie goes to 65536: inf
    EXPECT_EQ(expected_code(CvtOp::e5m2_satfinite, 61440.0f), 0x7B);
    EXPECT_EQ(expected_code(CvtOp::f16_rn, 65520.0f), 0x7C00);
    EXPECT_EQ(expected_code(CvtOp::bf16_rn, std::numeric_limits<float>::max()), 0x7F80);
    EXPECT_EQ(expected_code(CvtOp::e2m1_satfinite, 7.0f), 0x7);
    EXPECT_EQ(expected_code(CvtOp::e2m1_satfinite, 5.0f), 0x6);  // 4
    // e8m0, toward zero and toward +inf.
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rz_satfinite, 3.0f), 128);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, 3.0f), 129);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, 4.0f), 129);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, 0.75f), 127);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, std::ldexp(1.5f, 127)), 0xFE);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, inf), 0xFE);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, float_of(0x7FC0'0000u)), 0xFF);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, std::ldexp(1.0f, -127)), 0);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, std::ldexp(1.5f, -127)), 1);
    EXPECT_EQ(expected_code(CvtOp::ue8m0_rp_satfinite, 0.0f), 0);
    EXPECT_EQ(code_text(CvtOp::e4m3_satfinite, 0x7E), "0x7E (448)");
    EXPECT_EQ(code_text(CvtOp::e4m3_satfinite, 0x7F), "0x7F (NaN)");
    EXPECT_EQ(code_text(CvtOp::f16_rn, 0x7C00), "0x7C00 (inf)");
}

TEST(CvtExpectations, DecodeSlotsHoldBothHalves) {
    EXPECT_EQ(decode_operand(DecodeOp::e4m3_to_f16, 0x7E), 0x817E);  // low 0x7E, high 255 - 0x7E
    EXPECT_EQ(expected_decode_slot(DecodeOp::e4m3_to_f16, 0x7E), f32_to_f16(448.0f));
    EXPECT_EQ(expected_decode_slot(DecodeOp::e4m3_to_f16, 256 + 0x7E), f32_to_f16(-e4m3_to_f32(0x01)));
    EXPECT_EQ(expected_decode_slot(DecodeOp::e2m1_to_f16, 0x71), f32_to_f16(0.5f));        // low nibble 1
    EXPECT_EQ(expected_decode_slot(DecodeOp::e2m1_to_f16, 256 + 0x71), f32_to_f16(6.0f));  // high nibble 7
    EXPECT_EQ(expected_decode_slot(DecodeOp::ue8m0_to_bf16, 0), 0x0040);  // 2^-127, a bf16 subnormal
    EXPECT_TRUE(decode_is_nan(DecodeOp::ue8m0_to_bf16, expected_decode_slot(DecodeOp::ue8m0_to_bf16, 0xFF)));
}

TEST(CvtAnalysis, ADocumentedDeviceConfirmsEverything) {
    const FormatInputs in = make_format_inputs(3, true);
    const auto fs = analyze_formats(in, documented_device(in));
    EXPECT_EQ(count(fs, DocRelation::contradicts), 0);
    EXPECT_EQ(count(fs, DocRelation::not_available), 0);
    EXPECT_GT(count(fs, DocRelation::confirms), 60);
    const Finding* sat = find(fs, "cvt.rn.satfinite.e4m3x2.f32", "fp32 1e6 ->");
    ASSERT_NE(sat, nullptr);
    EXPECT_EQ(sat->measured, "0x7E (448)");
    EXPECT_EQ(sat->relation, DocRelation::confirms);
    EXPECT_TRUE(sat->verified);
    const Finding* nosat = find(fs, "__nv_cvt_float_to_fp8(__NV_NOSAT, __NV_E4M3) (software)", "fp32 465");
    ASSERT_NE(nosat, nullptr);
    EXPECT_EQ(nosat->measured, "0x7F (NaN)");
    const Finding* e5 = find(fs, "__nv_cvt_float_to_fp8(__NV_NOSAT, __NV_E5M2) (software)", "fp32 1e6");
    ASSERT_NE(e5, nullptr);
    EXPECT_EQ(e5->measured, "0x7C (inf)");
    const Finding* sweep = find(fs, "cvt.rn.satfinite.e4m3x2.f32", "sweep of");
    ASSERT_NE(sweep, nullptr);
    EXPECT_EQ(sweep->measured, "all bit-identical");
    const Finding* nan = find(fs, "cvt.rn.satfinite.e4m3x2.f32", "codes written for NaN");
    ASSERT_NE(nan, nullptr);
    EXPECT_EQ(nan->relation, DocRelation::fills_in);
    const Finding* jit = find(fs, "cvt.rn.e4m3x2.f32 (no .satfinite)", "");
    ASSERT_NE(jit, nullptr);
    EXPECT_EQ(jit->relation, DocRelation::confirms);
    EXPECT_EQ(jit->measured, "rejected");
    const Finding* dec = find(fs, "cvt.rn.f16x2.e4m3x2", "every e4m3 code");
    ASSERT_NE(dec, nullptr);
    EXPECT_EQ(dec->measured, "all bit-identical");
}

TEST(CvtAnalysis, OneWrongCodeInTheSweepIsAContradiction) {
    const FormatInputs in = make_format_inputs(3, true);
    FormatDeviceResults d = documented_device(in);
    const std::size_t n = in.values.size();
    // A finite, non-NaN sweep input through e5m2 satfinite, answered wrongly.
    std::size_t victim = in.crafted;
    while (std::isnan(in.values[victim])) ++victim;
    auto& code = d.cvt_out[static_cast<std::size_t>(CvtOp::e5m2_satfinite) * n + victim];
    code = static_cast<std::uint16_t>(code ^ 0x01);
    const auto fs = analyze_formats(in, d);
    const Finding* sweep = find(fs, "cvt.rn.satfinite.e5m2x2.f32", "sweep of");
    ASSERT_NE(sweep, nullptr);
    EXPECT_EQ(sweep->relation, DocRelation::contradicts);
    EXPECT_NE(sweep->measured.find("1 of"), std::string::npos);
    EXPECT_NE(sweep->detail.find("first differences"), std::string::npos);
    EXPECT_EQ(count(fs, DocRelation::contradicts), 1);
}

TEST(CvtAnalysis, CraftedMismatchAndNanCodes) {
    const FormatInputs in = make_format_inputs(3, true);
    FormatDeviceResults d = documented_device(in);
    const std::size_t n = in.values.size();
    // A device that does not saturate 1e6 in e4m3: contradicts the PTX ISA.
    d.cvt_out[static_cast<std::size_t>(CvtOp::e4m3_satfinite) * n + index_of(in, 1e6f)] = 0x7F;
    // A device that keeps the sign of a negative NaN: still NaN, a fill-in.
    const std::size_t neg_nan = index_of(in, float_of(0xFFC0'0000u));
    ASSERT_LT(neg_nan, in.crafted);
    d.cvt_out[static_cast<std::size_t>(CvtOp::e5m2_satfinite) * n + neg_nan] = 0xFF;
    const auto fs = analyze_formats(in, d);
    const Finding* sat = find(fs, "cvt.rn.satfinite.e4m3x2.f32", "fp32 1e6 ->");
    ASSERT_NE(sat, nullptr);
    EXPECT_EQ(sat->relation, DocRelation::contradicts);
    const Finding* nan = find(fs, "cvt.rn.satfinite.e5m2x2.f32", "fp32 -NaN");
    ASSERT_NE(nan, nullptr);
    EXPECT_EQ(nan->measured, "0xFF (NaN)");
    EXPECT_EQ(nan->relation, DocRelation::fills_in);
    // A NaN input answered with a number is a contradiction.
    d.cvt_out[static_cast<std::size_t>(CvtOp::f16_rn) * n + neg_nan] = 0x0000;
    const auto again = analyze_formats(in, d);
    const Finding* bad = find(again, "cvt.rn.f16.f32", "fp32 -NaN");
    ASSERT_NE(bad, nullptr);
    EXPECT_EQ(bad->relation, DocRelation::contradicts);
}

TEST(CvtAnalysis, MissingInstructionsAreNotAvailableWithTheArch) {
    const FormatInputs in = make_format_inputs(3, true);
    FormatDeviceResults d = documented_device(in);
    d.compute_capability = 90;
    d.compiled_arch = 900;
    for (CvtOp op : {CvtOp::e2m1_satfinite, CvtOp::ue8m0_rz_satfinite, CvtOp::ue8m0_rp_satfinite})
        d.cvt_compiled[static_cast<std::size_t>(op)] = false;
    d.decode_compiled[static_cast<std::size_t>(DecodeOp::e2m1_to_f16)] = false;
    d.decode_compiled[static_cast<std::size_t>(DecodeOp::ue8m0_to_bf16)] = false;
    const auto fs = analyze_formats(in, d);
    EXPECT_EQ(count(fs, DocRelation::not_available), 5);
    const Finding* e2m1 = find(fs, "cvt.rn.satfinite.e2m1x2.f32", "");
    ASSERT_NE(e2m1, nullptr);
    EXPECT_EQ(e2m1->relation, DocRelation::not_available);
    EXPECT_NE(e2m1->detail.find("__CUDA_ARCH__ 900"), std::string::npos);
    EXPECT_NE(e2m1->detail.find("sm_100a"), std::string::npos);
    EXPECT_EQ(count(fs, DocRelation::contradicts), 0);
}

TEST(CvtAnalysis, JitVerdicts) {
    const FormatInputs in = make_format_inputs(3, true);
    FormatDeviceResults d = documented_device(in);
    d.jit_nosat[0].accepted = true;             // e4m3: the form without .satfinite assembled
    d.jit_nosat[1].control_accepted = false;    // e5m2: not even the control
    d.jit_nosat[1].control_log = "CUDA_ERROR_INVALID_PTX: requires sm_89";
    const auto fs = analyze_formats(in, d);
    const Finding* e4 = find(fs, "cvt.rn.e4m3x2.f32 (no .satfinite)", "");
    const Finding* e5 = find(fs, "cvt.rn.e5m2x2.f32 (no .satfinite)", "");
    ASSERT_NE(e4, nullptr);
    ASSERT_NE(e5, nullptr);
    EXPECT_EQ(e4->relation, DocRelation::contradicts);
    EXPECT_EQ(e5->relation, DocRelation::not_available);
    EXPECT_NE(e5->detail.find("requires sm_89"), std::string::npos);
}

TEST(CvtAnalysis, NoKernelImageStillReportsTheJitAnswers) {
    const FormatInputs in = make_format_inputs(3, true);
    FormatDeviceResults d = documented_device(in);
    d.unavailable = "no code for compute capability 80";
    d.cvt_out.clear();
    d.decode_out.clear();
    const auto fs = analyze_formats(in, d);
    ASSERT_EQ(fs.size(), 3u);
    EXPECT_EQ(fs[2].relation, DocRelation::not_available);
    EXPECT_EQ(fs[2].detail, "no code for compute capability 80");
}

TEST(CvtJit, PtxDiffersOnlyInTheModifier) {
    const std::string with = jit_cvt_ptx(false, true), without = jit_cvt_ptx(false, false);
    EXPECT_NE(with.find("cvt.rn.satfinite.e4m3x2.f32"), std::string::npos);
    EXPECT_EQ(without.find("satfinite"), std::string::npos);
    EXPECT_NE(without.find("cvt.rn.e4m3x2.f32"), std::string::npos);
    EXPECT_NE(jit_cvt_ptx(true, true).find("e5m2x2"), std::string::npos);
    std::string stripped = with;
    stripped.erase(stripped.find(".satfinite"), std::string(".satfinite").size());
    EXPECT_EQ(stripped, without);
}

// --- fp8_gemm_overflow --------------------------------------------------------------

namespace {

// The largest power of two dividing |t| (t a nonzero fp8 value).
double power_of_two_factor(double t) {
    double q = std::ldexp(1.0, -20);
    while (std::fmod(std::fabs(t), 2 * q) == 0) q *= 2;
    return q;
}

std::vector<std::uint8_t> encode_d(const GemmOverflowCase& c, bool saturate, double (*tamper)(double)) {
    std::vector<std::uint8_t> d;
    for (int idx = 0; idx < c.m * c.n; ++idx) {
        double v = saturate ? rounded_saturating(c.d_type, c.exact(idx)) : rounded_nonsaturating(c.d_type, c.exact(idx));
        if (tamper) v = tamper(v);
        const float f = static_cast<float>(v);
        switch (c.d_type) {
            case DType::e4m3: d.push_back(f32_to_e4m3(f, Overflow::non_saturate)); break;
            case DType::e5m2: d.push_back(f32_to_e5m2(f, Overflow::non_saturate)); break;
            case DType::f16:
            case DType::bf16: {
                const std::uint16_t h = c.d_type == DType::f16 ? f32_to_f16(f) : f32_to_bf16(f);
                d.push_back(static_cast<std::uint8_t>(h & 0xFF));
                d.push_back(static_cast<std::uint8_t>(h >> 8));
                break;
            }
            case DType::f32: {
                const auto u = std::bit_cast<std::uint32_t>(f);
                for (int b = 0; b < 4; ++b) d.push_back(static_cast<std::uint8_t>(u >> (8 * b)));
                break;
            }
            default: ADD_FAILURE() << "no output type " << name(c.d_type); break;
        }
    }
    return d;
}

std::vector<GemmOverflowDevice> emulate(const std::vector<GemmOverflowCase>& cases, bool saturate,
                                        double (*tamper)(double) = nullptr) {
    std::vector<GemmOverflowDevice> out;
    for (const auto& c : cases) {
        GemmOverflowDevice d;
        d.ran = true;
        d.d = encode_d(c, saturate, tamper);
        d.amax_requested = c.d_type == DType::e4m3 || c.d_type == DType::e5m2;
        d.amax_supported = d.amax_requested;
        double mx = 0;
        for (int idx = 0; idx < c.m * c.n; ++idx) mx = std::max(mx, std::fabs(c.exact(idx)));
        d.amax = static_cast<float>(mx);
        out.push_back(std::move(d));
    }
    return out;
}

const Finding* find_q(const std::vector<Finding>& fs, const std::string& path_part, const std::string& q) {
    for (const auto& f : fs)
        if (f.path.find(path_part) != std::string::npos && f.quantity.rfind(q, 0) == 0) return &f;
    return nullptr;
}

}  // namespace

TEST(GemmOverflowCases, OperandsGiveTheIntendedExactSums) {
    const auto cases = make_gemm_overflow_cases(5);
    ASSERT_EQ(cases.size(), 5u);
    for (const auto& c : cases) {
        ASSERT_EQ(c.k, kGemmTerms * c.m);
        EXPECT_EQ(c.m % 16, 0);
        EXPECT_EQ(c.n % 16, 0);
        EXPECT_EQ(c.k % 16, 0);
        EXPECT_FALSE(c.target_outputs.empty());
        int overflowing = 0, in_range = 0;
        for (int i = 0; i < c.m; ++i)
            for (int j = 0; j < c.n; ++j) {
                double sum = 0, abs_sum = 0, quantum = std::numeric_limits<double>::infinity();
                for (int k = 0; k < c.k; ++k) {
                    const double a = e4m3_to_f32(c.a[static_cast<std::size_t>(i * c.k + k)]);
                    const std::uint8_t bc = c.b[static_cast<std::size_t>(j * c.k + k)];
                    const double b = c.b_e5m2 ? e5m2_to_f32(bc) : e4m3_to_f32(bc);
                    sum += a * b;
                    abs_sum += std::fabs(a * b);
                    if (a != 0 && b != 0) quantum = std::min(quantum, power_of_two_factor(a * b));
                }
                const int idx = i + j * c.m;
                EXPECT_EQ(sum, c.sums[static_cast<std::size_t>(idx)]) << c.label << " output " << idx;
                // Exact in any accumulator of 13 significant bits, in any order.
                EXPECT_LT(abs_sum / quantum, 8192.0) << c.label << " output " << idx;
                const bool over = !(rounded_saturating(c.d_type, c.exact(idx)) ==
                                    rounded_nonsaturating(c.d_type, c.exact(idx)));
                overflowing += over;
                in_range += !over;
            }
        EXPECT_GT(overflowing, 0) << c.label;
        EXPECT_GT(in_range, 0) << c.label;
    }
}

TEST(GemmOverflowCases, TargetsLandOnTheBoundaries) {
    const auto cases = make_gemm_overflow_cases(5);
    auto has = [](const GemmOverflowCase& c, double v) {
        for (int idx : c.target_outputs)
            if (c.exact(idx) == v) return true;
        return false;
    };
    EXPECT_TRUE(has(cases[0], 448));
    EXPECT_TRUE(has(cases[0], 464));
    EXPECT_TRUE(has(cases[0], 465));
    EXPECT_TRUE(has(cases[1], 57344));
    EXPECT_TRUE(has(cases[1], 61440));
    EXPECT_TRUE(has(cases[2], 65504));
    EXPECT_TRUE(has(cases[2], 65520));
    EXPECT_TRUE(has(cases[3], std::ldexp(255.0, 120)));
    EXPECT_TRUE(has(cases[4], std::ldexp(1.0, 128)));
    EXPECT_TRUE(decompose_sum(463, false).size() <= static_cast<std::size_t>(kGemmTerms));
    EXPECT_TRUE(decompose_sum(1e9, false).empty());
}

TEST(GemmOverflowCases, OutputTypesAreDTypesAndOthersAreRefused) {
    const auto cases = make_gemm_overflow_cases(5);
    const DType d_types[] = {DType::e4m3, DType::e5m2, DType::f16, DType::bf16, DType::f32};
    ASSERT_EQ(cases.size(), std::size(d_types));
    for (std::size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(cases[i].d_type, d_types[i]) << cases[i].label;
        EXPECT_EQ(std::size_t(gemm_out_bytes(cases[i].d_type)), storage_bytes(cases[i].d_type, 1));
    }
    for (DType t : {DType::tf32, DType::i8, DType::f64, DType::mxfp4}) {
        EXPECT_THROW(gemm_out_bytes(t), std::invalid_argument) << name(t);
        EXPECT_THROW(rounded_nonsaturating(t, 1.0), std::invalid_argument) << name(t);
        EXPECT_THROW(rounded_saturating(t, 1.0), std::invalid_argument) << name(t);
    }
}

TEST(GemmOverflowAnalysis, SaturatingDeviceIsReportedAsSaturating) {
    const auto cases = make_gemm_overflow_cases(5);
    const auto fs = analyze_gemm_overflow(cases, emulate(cases, true));
    EXPECT_EQ(count(fs, DocRelation::contradicts), 2);  // amax taken before the conversion (e4m3, e5m2 D)
    const Finding* s = find_q(fs, "D e4m3", "what D holds");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->measured, "saturated to the max finite: " + s->expected.substr(0, s->expected.find(' ')) + " of " +
                               s->expected.substr(0, s->expected.find(' ')));
    EXPECT_EQ(s->relation, DocRelation::fills_in);
    EXPECT_TRUE(s->verified);
    const Finding* t = find_q(fs, "D e4m3", "exact 465 ->");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->measured, "0x7E (448): saturated to the max finite");
    const Finding* tie = find_q(fs, "D e4m3", "exact 464 ->");
    ASSERT_NE(tie, nullptr);
    EXPECT_EQ(tie->relation, DocRelation::confirms);
    const Finding* amax = find_q(fs, "D e4m3", "amax_D");
    ASSERT_NE(amax, nullptr);
    EXPECT_EQ(amax->relation, DocRelation::contradicts);
    EXPECT_NE(amax->detail.find("before the conversion"), std::string::npos);
}

TEST(GemmOverflowAnalysis, IeeeDeviceIsReportedAsInfAndNan) {
    const auto cases = make_gemm_overflow_cases(5);
    const auto fs = analyze_gemm_overflow(cases, emulate(cases, false));
    const Finding* e4 = find_q(fs, "D e4m3", "what D holds");
    const Finding* f16 = find_q(fs, "D f16", "what D holds");
    const Finding* f32 = find_q(fs, "D f32", "what D holds");
    ASSERT_NE(e4, nullptr);
    ASSERT_NE(f16, nullptr);
    ASSERT_NE(f32, nullptr);
    EXPECT_EQ(e4->measured.rfind("NaN", 0), 0u) << e4->measured;
    EXPECT_EQ(f16->measured.rfind("inf", 0), 0u) << f16->measured;
    EXPECT_EQ(f32->measured.rfind("inf", 0), 0u) << f32->measured;
    const Finding* tie = find_q(fs, "D f16", "exact 65520");
    ASSERT_NE(tie, nullptr);
    EXPECT_EQ(tie->measured, "0x7C00 (inf): inf");
}

TEST(GemmOverflowAnalysis, WrongValuesAreContradictions) {
    const auto cases = make_gemm_overflow_cases(5);
    const auto fs = analyze_gemm_overflow(cases, emulate(cases, true, [](double v) { return v * 0.5; }));
    const Finding* ctl = find_q(fs, "D f16", "in-range outputs");
    ASSERT_NE(ctl, nullptr);
    EXPECT_EQ(ctl->relation, DocRelation::contradicts);
    const Finding* s = find_q(fs, "D f16", "what D holds");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->relation, DocRelation::contradicts);
    EXPECT_FALSE(s->verified);
}

TEST(GemmOverflowAnalysis, RefusedCombinationIsNotAvailable) {
    const auto cases = make_gemm_overflow_cases(5);
    auto dev = emulate(cases, true);
    dev[1] = GemmOverflowDevice{};
    dev[1].unsupported = "cuBLASLt refused e4m3 x e5m2 -> e5m2: cublasStatus 15 (not supported)";
    dev[0].amax_supported = false;
    dev[0].amax_status = "refused with amax_D set: cublasStatus 7 (invalid value)";
    const auto fs = analyze_gemm_overflow(cases, dev);
    const Finding* na = find_q(fs, "D e5m2", "e4m3 x e5m2 -> e5m2 through cuBLASLt");
    ASSERT_NE(na, nullptr);
    EXPECT_EQ(na->relation, DocRelation::not_available);
    EXPECT_NE(na->detail.find("cublasStatus 15"), std::string::npos);
    const Finding* amax = find_q(fs, "D e4m3", "amax_D");
    ASSERT_NE(amax, nullptr);
    EXPECT_EQ(amax->relation, DocRelation::not_available);
}
