// Crafted fp8 GEMMs whose exact outputs straddle the output type's range, and
// the verdict on what the device wrote. Every sum is exact in any accumulator
// of 13 significant bits or more, whatever the order (all terms are multiples
// of a common power of two q, and the sum of their magnitudes stays below
// 2^13 q; the host tests check it; fp8 tensor-core accumulation keeps about
// 14 bits between promotions), so the only rounding left is the final
// conversion to D.
#include "probes/formats/gemm_overflow.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>

#include "core/formats.hpp"
#include "core/hash.hpp"

namespace rigel {
namespace {

constexpr std::string_view kCublasDoc =
    "cuBLAS 13 documentation, cublasLtMatmul (FP8: D = scaleD * (alpha * scaleA * scaleB * op(A) op(B) + beta * "
    "scaleC * C))";
constexpr std::string_view kAmaxDoc = "cublasLt.h 13.1, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER";
constexpr std::string_view kOcpFp8 = "OCP OFP8 rev 1.0 (e4m3 max 448, e5m2 max 57344)";

[[noreturn]] void refuse_out_type(DType t) {
    throw std::invalid_argument("fp8_gemm_overflow: no output type " + std::string(name(t)) +
                                " (e4m3, e5m2, f16, bf16, f32)");
}

constexpr std::uint8_t kE4m3One = 0x38;  // 1.0 = 2^(7-7)
constexpr int kMaxCandidates = 6;        // alternatives tried per term when backtracking

std::string num(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string hex(std::uint32_t v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*X", digits, v);
    return buf;
}

// A power-of-two alpha as "2^120"; others as numbers.
std::string alpha_text(float alpha) {
    int e = 0;
    const float m = std::frexp(alpha, &e);
    if (m == 0.5f && (e - 1 > 10 || e - 1 < -10)) return "2^" + std::to_string(e - 1);
    return num(alpha);
}

double decode_term(std::uint8_t code, bool e5m2) { return e5m2 ? e5m2_to_f32(code) : e4m3_to_f32(code); }

// Positive finite codes of the term type with their values, largest first.
const std::vector<std::pair<double, std::uint8_t>>& positive_terms(bool e5m2) {
    static const auto build = [](bool five) {
        std::vector<std::pair<double, std::uint8_t>> v;
        const int max_code = five ? 0x7B : 0x7E;
        for (int c = 1; c <= max_code; ++c) v.emplace_back(decode_term(static_cast<std::uint8_t>(c), five), c);
        std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        return v;
    };
    static const auto e4 = build(false), e5 = build(true);
    return e5m2 ? e5 : e4;
}

bool search(double remaining, int terms_left, bool e5m2, std::vector<std::uint8_t>& picked) {
    if (remaining == 0) return true;
    if (terms_left == 0) return false;
    const auto& table = positive_terms(e5m2);
    if (remaining > table.front().first * terms_left) return false;
    int tried = 0;
    for (const auto& [value, code] : table) {
        if (value > remaining) continue;
        picked.push_back(code);
        if (search(remaining - value, terms_left - 1, e5m2, picked)) return true;
        picked.pop_back();
        if (++tried == kMaxCandidates) break;
    }
    return false;
}

struct CaseSpec {
    const char* label;
    bool b_e5m2;
    DType d, c;
    float alpha;
    std::vector<double> targets;       // sums (before alpha)
    double random_lo, random_hi;       // magnitude range of the random terms
};

std::vector<CaseSpec> case_specs() {
    const float alpha_big = std::ldexp(1.0f, 120);
    return {
        // e4m3: max 448; 464 is the midpoint to the next step (480), a tie that rounds to 448.
        {"e4m3 x e4m3 -> e4m3", false, DType::e4m3, DType::bf16, 1.0f,
         {100, 440, 448, 456, 463, 464, 465, 472, 480, 512, 1000, 3584, -465, -1000}, 16, 448},
        // e5m2: max 57344; 61440 is the midpoint to 65536, a tie that rounds to 65536.
        {"e4m3 x e5m2 -> e5m2", true, DType::e5m2, DType::bf16, 1.0f,
         {1000, 57344, 59392, 61440, 61952, 65536, 100000, 200000, -61952}, 1024, 57344},
        // f16 through alpha = 64: sums 1023.5 / 1023.625 / 1023.75 become 65504 (max), 65512, 65520 (the tie).
        {"e4m3 x e4m3 -> f16", false, DType::f16, DType::f16, 64.0f,
         {1000, 1023.5, 1023.625, 1023.75, 1024, 1600, 3584, -1023.75}, 16, 448},
        // bf16 and f32 through alpha = 2^120: 255 * 2^120 is the bf16 max; 255.5 * 2^120 the bf16 tie (fits
        // fp32); 256 * 2^120 = 2^128 overflows fp32 itself.
        {"e4m3 x e4m3 -> bf16", false, DType::bf16, DType::bf16, alpha_big,
         {100, 255, 255.5, 256, 1000, -256}, 16, 448},
        {"e4m3 x e4m3 -> f32", false, DType::f32, DType::f32, alpha_big, {100, 255.5, 256, 1000, -1000}, 16, 448},
    };
}

double max_finite(DType t) {
    switch (t) {
        case DType::e4m3: return 448;
        case DType::e5m2: return 57344;
        case DType::f16: return 65504;
        case DType::bf16: return static_cast<double>(std::bit_cast<float>(0x7F7F'0000u));
        case DType::f32: return static_cast<double>(std::numeric_limits<float>::max());
        default: break;
    }
    refuse_out_type(t);
}

// Float64 -> float, the way the epilogue holds it before the final conversion
// (values past the fp32 range become inf).
float to_f32(double v) { return static_cast<float>(v); }

// The code a value has in the output type, as "0x7E (448)".
std::string code_and_value(DType t, std::uint32_t code, double value) {
    return hex(code, 2 * gemm_out_bytes(t)) + " (" + num(value) + ")";
}

// What the documented conversion writes for `exact`, with or without saturation.
std::string expected_text(DType t, double exact, bool saturate) {
    const float x = to_f32(exact);
    const double max = max_finite(t);
    const bool clamp = saturate && std::fabs(exact) > max;
    const std::uint32_t sign = std::signbit(exact) ? 1u : 0u;
    switch (t) {
        case DType::e4m3: {
            const std::uint8_t c = f32_to_e4m3(x, saturate ? Overflow::saturate : Overflow::non_saturate);
            return code_and_value(t, c, e4m3_to_f32(c));
        }
        case DType::e5m2: {
            const std::uint8_t c = f32_to_e5m2(x, saturate ? Overflow::saturate : Overflow::non_saturate);
            return code_and_value(t, c, e5m2_to_f32(c));
        }
        case DType::f16: {
            const std::uint16_t c = clamp ? static_cast<std::uint16_t>(sign << 15 | 0x7BFF) : f32_to_f16(x);
            return code_and_value(t, c, f16_to_f32(c));
        }
        case DType::bf16: {
            const std::uint16_t c = clamp ? static_cast<std::uint16_t>(sign << 15 | 0x7F7F) : f32_to_bf16(x);
            return code_and_value(t, c, bf16_to_f32(c));
        }
        case DType::f32: {
            const float v = clamp ? std::copysign(std::numeric_limits<float>::max(), x) : x;
            return code_and_value(t, std::bit_cast<std::uint32_t>(v), v);
        }
        default: break;
    }
    refuse_out_type(t);
}

enum class Outcome { exact_rounding, saturated, to_inf, to_nan, other };

Outcome classify(DType t, double exact, double device) {
    const double nonsat = rounded_nonsaturating(t, exact), sat = rounded_saturating(t, exact);
    const bool overflow = !(nonsat == sat);  // NaN != NaN counts as overflow too
    if (!overflow) return device == nonsat ? Outcome::exact_rounding : Outcome::other;
    if (device == sat) return Outcome::saturated;
    if (std::isnan(device)) return Outcome::to_nan;
    if (std::isinf(device) && std::signbit(device) == std::signbit(exact)) return Outcome::to_inf;
    return Outcome::other;
}

const char* outcome_text(Outcome o) {
    switch (o) {
        case Outcome::exact_rounding: return "rounded to nearest even (in range)";
        case Outcome::saturated: return "saturated to the max finite";
        case Outcome::to_inf: return "inf";
        case Outcome::to_nan: return "NaN";
        case Outcome::other: return "something else";
    }
    return "";
}

Finding base(const GemmOverflowCase& c) {
    Finding f;
    f.probe = "fp8_gemm_overflow";
    f.path = "cublasLtMatmul, D " + std::string(name(c.d_type)) + " (C " + std::string(name(c.c_type)) +
             ", compute 32F)";
    f.dtype = c.b_e5m2 ? "e4m3 x e5m2" : "e4m3";
    f.doc_source = std::string(kCublasDoc);
    return f;
}

}  // namespace

int gemm_out_bytes(DType t) {
    switch (t) {
        case DType::e4m3:
        case DType::e5m2:
        case DType::f16:
        case DType::bf16:
        case DType::f32: return static_cast<int>(storage_bytes(t, 1));
        default: break;
    }
    refuse_out_type(t);
}

std::vector<std::uint8_t> decompose_sum(double target, bool e5m2) {
    std::vector<std::uint8_t> picked;
    if (!std::isfinite(target)) return {};
    if (!search(std::fabs(target), kGemmTerms, e5m2, picked)) return {};
    if (target < 0)
        for (auto& code : picked) code |= 0x80;
    return picked;
}

std::vector<GemmOverflowCase> make_gemm_overflow_cases(std::uint64_t seed) {
    std::vector<GemmOverflowCase> out;
    std::mt19937_64 rng(mix64(seed ^ 0x6f766572666c6f77ull));
    for (const CaseSpec& s : case_specs()) {
        GemmOverflowCase c;
        c.label = s.label;
        c.b_e5m2 = s.b_e5m2;
        c.d_type = s.d;
        c.c_type = s.c;
        c.alpha = s.alpha;
        c.k = kGemmTerms * c.m;
        c.a.assign(static_cast<std::size_t>(c.m) * c.k, 0);
        c.b.assign(static_cast<std::size_t>(c.n) * c.k, 0);
        c.sums.assign(static_cast<std::size_t>(c.m) * c.n, 0);
        // A: row i has ones in columns [8i, 8i+8): output (i, j) sums B's
        // column j over those rows, which hold that output's terms.
        for (int i = 0; i < c.m; ++i)
            for (int t = 0; t < kGemmTerms; ++t) c.a[static_cast<std::size_t>(i) * c.k + kGemmTerms * i + t] = kE4m3One;
        // The random terms: magnitudes in [lo, hi], either sign.
        std::vector<std::uint8_t> pool;
        for (const auto& [value, code] : positive_terms(s.b_e5m2))
            if (value >= s.random_lo && value <= s.random_hi) pool.push_back(code);
        std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
        std::size_t next_target = 0;
        for (int j = 0; j < c.n; ++j)
            for (int i = 0; i < c.m; ++i) {
                const int idx = i + j * c.m;
                std::vector<std::uint8_t> terms;
                if (next_target < s.targets.size()) {
                    terms = decompose_sum(s.targets[next_target], s.b_e5m2);
                    if (terms.empty())
                        throw std::logic_error(std::string("fp8_gemm_overflow: no fp8 terms sum to ") +
                                               num(s.targets[next_target]));
                    c.target_outputs.push_back(idx);
                    ++next_target;
                } else {
                    for (int t = 0; t < kGemmTerms; ++t)
                        terms.push_back(static_cast<std::uint8_t>(pool[pick(rng)] | ((rng() & 1) ? 0x80 : 0)));
                }
                double sum = 0;
                for (std::size_t t = 0; t < terms.size(); ++t) {
                    c.b[static_cast<std::size_t>(j) * c.k + kGemmTerms * i + t] = terms[t];
                    sum += decode_term(terms[t], s.b_e5m2);
                }
                c.sums[static_cast<std::size_t>(idx)] = sum;
            }
        out.push_back(std::move(c));
    }
    return out;
}

std::uint32_t device_code(const GemmOverflowCase& c, const GemmOverflowDevice& d, int idx) {
    const int bytes = gemm_out_bytes(c.d_type);
    const auto at = static_cast<std::size_t>(idx) * static_cast<std::size_t>(bytes);
    std::uint32_t u = 0;
    for (int b = bytes - 1; b >= 0; --b) u = (u << 8) | d.d[at + static_cast<std::size_t>(b)];
    return u;
}

double device_value(const GemmOverflowCase& c, const GemmOverflowDevice& d, int idx) {
    const std::uint32_t u = device_code(c, d, idx);
    switch (c.d_type) {
        case DType::e4m3: return e4m3_to_f32(static_cast<std::uint8_t>(u));
        case DType::e5m2: return e5m2_to_f32(static_cast<std::uint8_t>(u));
        case DType::f16: return f16_to_f32(static_cast<std::uint16_t>(u));
        case DType::bf16: return bf16_to_f32(static_cast<std::uint16_t>(u));
        case DType::f32: return std::bit_cast<float>(u);
        default: break;
    }
    refuse_out_type(c.d_type);
}

double rounded_nonsaturating(DType t, double exact) {
    const float x = to_f32(exact);
    switch (t) {
        case DType::e4m3: return e4m3_to_f32(f32_to_e4m3(x, Overflow::non_saturate));
        case DType::e5m2: return e5m2_to_f32(f32_to_e5m2(x, Overflow::non_saturate));
        case DType::f16: return f16_to_f32(f32_to_f16(x));
        case DType::bf16: return bf16_to_f32(f32_to_bf16(x));
        case DType::f32: return x;
        default: break;
    }
    refuse_out_type(t);
}

double rounded_saturating(DType t, double exact) {
    const double max = max_finite(t);
    if (std::fabs(exact) > max) return std::copysign(max, exact);
    return rounded_nonsaturating(t, exact);
}

std::vector<Finding> analyze_gemm_overflow(const std::vector<GemmOverflowCase>& cases,
                                           const std::vector<GemmOverflowDevice>& device) {
    if (cases.size() != device.size()) throw std::logic_error("fp8_gemm_overflow: one device result per case");
    std::vector<Finding> out;
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
        const GemmOverflowCase& c = cases[ci];
        const GemmOverflowDevice& d = device[ci];
        const std::string dname(name(c.d_type));
        if (!d.unsupported.empty() || !d.ran) {
            Finding f = base(c);
            f.quantity = c.label + " through cuBLASLt";
            f.measured = "not supported";
            f.relation = DocRelation::not_available;
            f.doc_statement = "the FP8 type combinations cublasLtMatmul supports are listed per architecture";
            f.detail = d.unsupported.empty() ? "not run" : d.unsupported;
            out.push_back(std::move(f));
            continue;
        }
        const std::size_t outputs = static_cast<std::size_t>(c.m) * c.n;
        if (d.d.size() != outputs * static_cast<std::size_t>(gemm_out_bytes(c.d_type)))
            throw std::logic_error("fp8_gemm_overflow: D has the wrong size for " + c.label);
        const double max = max_finite(c.d_type);

        for (int idx : c.target_outputs) {
            const double exact = c.exact(idx), got = device_value(c, d, idx);
            const double nonsat = rounded_nonsaturating(c.d_type, exact), sat = rounded_saturating(c.d_type, exact);
            const Outcome o = classify(c.d_type, exact, got);
            Finding f = base(c);
            f.quantity = "exact " + num(exact) + (c.alpha != 1 ? " (alpha " + alpha_text(c.alpha) + " x " +
                                                                  num(c.sums[static_cast<std::size_t>(idx)]) + ")"
                                                               : std::string()) +
                         " -> D " + dname;
            f.measured = code_and_value(c.d_type, device_code(c, d, idx), got) + ": " + outcome_text(o);
            f.verified = true;
            if (o == Outcome::exact_rounding || (nonsat == sat)) {
                f.expected = expected_text(c.d_type, exact, false) + " (round to nearest even)";
                f.relation = o == Outcome::exact_rounding ? DocRelation::confirms : DocRelation::contradicts;
                f.doc_statement = "D is the result converted to Dtype (round to nearest even in range)";
            } else {
                f.expected = "saturating " + expected_text(c.d_type, exact, true) + ", or non-saturating " +
                             expected_text(c.d_type, exact, false);
                f.relation = o == Outcome::other ? DocRelation::contradicts : DocRelation::fills_in;
                f.doc_statement = "silent on an out-of-range D: it states the formula and the types, not what "
                                  "overflow becomes";
            }
            f.detail = "the float64 value of the same bytes; " + dname + " max finite " + num(max);
            out.push_back(std::move(f));
        }

        // Every output: in-range ones as the control, out-of-range ones by outcome.
        std::map<Outcome, std::size_t> over;
        std::size_t in_range = 0, in_range_ok = 0, overflowing = 0;
        std::string bad_examples;
        for (std::size_t idx = 0; idx < outputs; ++idx) {
            const double exact = c.exact(static_cast<int>(idx)), got = device_value(c, d, static_cast<int>(idx));
            const Outcome o = classify(c.d_type, exact, got);
            const bool overflow = !(rounded_nonsaturating(c.d_type, exact) == rounded_saturating(c.d_type, exact));
            if (overflow) {
                ++overflowing;
                ++over[o];
            } else {
                ++in_range;
                in_range_ok += o == Outcome::exact_rounding;
                if (o != Outcome::exact_rounding && bad_examples.size() < 200)
                    bad_examples += (bad_examples.empty() ? "" : "; ") + std::string("exact ") + num(exact) +
                                    " -> device " + num(got);
            }
        }
        Finding ctl = base(c);
        ctl.quantity = "in-range outputs equal to the float64 value rounded to " + dname;
        ctl.measured = std::to_string(in_range_ok) + " of " + std::to_string(in_range);
        ctl.expected = "all";
        ctl.verified = true;
        ctl.relation = in_range_ok == in_range ? DocRelation::confirms : DocRelation::contradicts;
        ctl.doc_statement = "D is the result converted to Dtype";
        ctl.detail = in_range_ok == in_range
                         ? "the sums are exact in the accumulator, so only the final conversion rounds"
                         : "first differences: " + bad_examples;
        out.push_back(std::move(ctl));

        Finding sum = base(c);
        sum.quantity = "what D holds for every output whose exact value overflows " + dname;
        std::string counts;
        for (const auto& [o, count] : over)
            counts += (counts.empty() ? "" : "; ") + std::string(outcome_text(o)) + ": " + std::to_string(count) + " of " +
                      std::to_string(overflowing);
        sum.measured = overflowing == 0 ? "no overflowing output" : counts;
        sum.expected = std::to_string(overflowing) + " overflowing outputs";
        sum.verified = in_range_ok == in_range;
        sum.relation = over.count(Outcome::other) ? DocRelation::contradicts : DocRelation::fills_in;
        sum.doc_statement = "silent on an out-of-range D";
        sum.doc_source += "; " + std::string(kOcpFp8);
        sum.detail = "of " + std::to_string(outputs) + " outputs (seeded sums of up to 8 terms); " + d.detail;
        out.push_back(std::move(sum));

        if (d.amax_requested) {
            Finding a = base(c);
            a.quantity = "amax_D after a GEMM whose outputs overflow " + dname;
            a.doc_source = std::string(kAmaxDoc);
            a.doc_statement = "\"set to the maximum of absolute values in the output matrix\"";
            if (!d.amax_supported) {
                a.measured = "not supported";
                a.relation = DocRelation::not_available;
                a.detail = d.amax_status;
            } else {
                double exact_max = 0, stored_max = 0;
                for (std::size_t idx = 0; idx < outputs; ++idx) {
                    exact_max = std::max(exact_max, std::fabs(c.exact(static_cast<int>(idx))));
                    const double v = std::fabs(device_value(c, d, static_cast<int>(idx)));
                    if (std::isfinite(v)) stored_max = std::max(stored_max, v);
                }
                a.measured = num(d.amax);
                a.expected = "pre-conversion max |alpha * AB| " + num(exact_max) + "; max |stored D| " + num(stored_max);
                a.verified = true;
                if (static_cast<double>(d.amax) == exact_max && exact_max != stored_max) {
                    a.relation = DocRelation::contradicts;
                    a.detail = "amax is the maximum before the conversion to " + dname +
                               " (what delayed scaling needs), not of the matrix as stored";
                } else if (static_cast<double>(d.amax) == stored_max) {
                    a.relation = DocRelation::confirms;
                    a.detail = "amax is the maximum of the stored output";
                } else {
                    a.relation = DocRelation::contradicts;
                    a.detail = "amax matches neither the pre-conversion nor the stored maximum";
                }
            }
            out.push_back(std::move(a));
        }
    }
    return out;
}

}  // namespace rigel
