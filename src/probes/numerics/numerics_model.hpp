// Host-side logic of the accumulation probe (plain C++): the operand types'
// facts and codecs, fp32 rounding in every mode, crafted dot products, the
// exact float64 value of a dot product, the block-FMA model of a tensor-core
// inner product, and the rules that turn device answers into inferred
// features.
//
// The model (after Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of
// NVIDIA tensor cores", PeerJ CS 2021, and Khattak and Mikaitis, "Accurate
// models of NVIDIA tensor cores", 2025): products are exact; the products of
// one block of `block` consecutive k, together with the running sum (and C in
// the first block), are aligned to the largest term's exponent, keeping
// `frac_bits` bits below that term's leading bit (the rest is cut by the
// alignment rule); the aligned terms are summed exactly; the sum is rounded to
// fp32 by the output rule, and becomes the running sum of the next block.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/formats.hpp"

namespace rigel::probes {

// The operand types of the probes' tensor-core paths are f16, bf16, tf32,
// e4m3 and e5m2; the functions below refuse any other DType.
[[noreturn]] inline void refuse_operand_type(DType t) {
    throw std::invalid_argument("numerics: no operand type " + std::string(name(t)) + " (f16, bf16, tf32, e4m3, e5m2)");
}

struct TypeFacts {
    const char* name;
    int precision;   // significand bits, hidden bit included
    int emin;        // exponent of the smallest normal
    int emax;        // exponent of the largest binade
    int sub_exp;     // exponent of the smallest subnormal
    int elem_bytes;  // storage
};

constexpr TypeFacts facts(DType t) {
    switch (t) {
        case DType::f16: return {"f16", 11, -14, 15, -24, 2};
        case DType::bf16: return {"bf16", 8, -126, 127, -133, 2};
        case DType::tf32: return {"tf32", 11, -126, 127, -136, 4};
        case DType::e4m3: return {"e4m3", 4, -6, 8, -9, 1};
        case DType::e5m2: return {"e5m2", 3, -14, 15, -16, 1};
        default: break;
    }
    refuse_operand_type(t);
}

// Bits of v in type t (tf32: the fp32 word); nullopt when v is not exactly
// representable.
inline std::optional<std::uint32_t> encode(DType t, double v) {
    const float f = static_cast<float>(v);
    if (static_cast<double>(f) != v || !std::isfinite(v)) return std::nullopt;
    std::uint32_t bits = 0;
    double back = 0;
    switch (t) {
        case DType::f16:
            bits = f32_to_f16(f);
            back = f16_to_f32(std::uint16_t(bits));
            break;
        case DType::bf16:
            bits = f32_to_bf16(f);
            back = bf16_to_f32(std::uint16_t(bits));
            break;
        case DType::tf32: {
            const float r = f32_to_tf32(f);
            bits = std::bit_cast<std::uint32_t>(r);
            back = r;
            break;
        }
        case DType::e4m3:
            bits = f32_to_e4m3(f, Overflow::saturate);
            back = e4m3_to_f32(std::uint8_t(bits));
            break;
        case DType::e5m2:
            bits = f32_to_e5m2(f, Overflow::saturate);
            back = e5m2_to_f32(std::uint8_t(bits));
            break;
        default: refuse_operand_type(t);
    }
    if (back != v) return std::nullopt;
    // Keep the sign of zero: -0.0 encodes with its sign bit in every type.
    return bits;
}

inline bool representable(DType t, double v) { return encode(t, v).has_value(); }

inline double decode(DType t, std::uint32_t bits) {
    switch (t) {
        case DType::f16: return f16_to_f32(static_cast<std::uint16_t>(bits));
        case DType::bf16: return bf16_to_f32(static_cast<std::uint16_t>(bits));
        case DType::tf32: return std::bit_cast<float>(bits);
        case DType::e4m3: return e4m3_to_f32(static_cast<std::uint8_t>(bits));
        case DType::e5m2: return e5m2_to_f32(static_cast<std::uint8_t>(bits));
        default: break;
    }
    refuse_operand_type(t);
}

inline bool is_normal_in(DType t, double v) {
    if (v == 0) return false;
    return representable(t, v) && std::fabs(v) >= std::ldexp(1.0, facts(t).emin);
}

// floor(log2 |v|) for v != 0.
inline int exponent_of(double v) {
    int e = 0;
    std::frexp(v, &e);
    return e - 1;
}

// a * b == target with a a normal number of type ta and b one of type tb (a
// power of two); the split closest to balanced is preferred (so that neither
// factor sits at the edge of its type's range).
inline std::optional<std::pair<double, double>> split_product(DType ta, DType tb, double target) {
    if (target == 0) return std::pair{0.0, 0.0};
    const int half = exponent_of(target) / 2;
    for (int d = 0; d <= 320; ++d)
        for (int j : {half - d, half + d}) {
            const double b = std::ldexp(1.0, j);
            const double a = target / b;
            if (is_normal_in(ta, a) && is_normal_in(tb, b) && a * b == target) return std::pair{a, b};
        }
    return std::nullopt;
}

inline std::optional<std::pair<double, double>> split_product(DType t, double target) {
    return split_product(t, t, target);
}

// ---- fp32 rounding -------------------------------------------------------------------------

enum class Rounding : std::uint8_t { nearest_even, toward_zero, down, up, nearest_away };

inline const char* name(Rounding r) {
    switch (r) {
        case Rounding::nearest_even: return "to nearest, ties to even";
        case Rounding::toward_zero: return "toward zero";
        case Rounding::down: return "toward -inf";
        case Rounding::up: return "toward +inf";
        case Rounding::nearest_away: return "to nearest, ties away";
    }
    return "";
}

constexpr Rounding all_roundings[] = {Rounding::nearest_even, Rounding::toward_zero, Rounding::down, Rounding::up,
                                      Rounding::nearest_away};

// The result of a rounding that overflowed fp32's range (a value of sign
// `neg` whose rounded magnitude reached 2^128), as IEEE 754 (7.4) gives it:
// the largest finite number of that sign when rounding toward zero, down for
// a positive value or up for a negative one; infinity otherwise (to nearest,
// or toward the infinity of the value's own sign). The largest finite number
// has all frac_bits fraction bits set. The probes never drive an accumulator
// past fp32's range, so this is the model's assumption, not a measurement; it
// decides what the measured models give there, since every measured
// tensor-core step rounds toward zero.
inline double overflowed(bool neg, Rounding r, int frac_bits) {
    const double largest = std::ldexp(2.0 - std::ldexp(1.0, -frac_bits), 127);
    bool to_inf = true;
    switch (r) {
        case Rounding::nearest_even:
        case Rounding::nearest_away: to_inf = true; break;
        case Rounding::toward_zero: to_inf = false; break;
        case Rounding::down: to_inf = neg; break;
        case Rounding::up: to_inf = !neg; break;
    }
    const double mag = to_inf ? INFINITY : largest;
    return neg ? -mag : mag;
}

// Rounds an exact value (a double whose digits are all meant) to fp32 in
// mode r; below 2^-126 either onto the subnormal grid (subnormals = true) or
// to a signed zero; past fp32's range as overflowed() says.
// frac_bits < 23: rounded further, to that many fraction bits in fp32's
// exponent range (MMA-Sim's "e8m13" output of Hopper's fp8 wgmma).
inline double round_f32(double x, Rounding r, bool subnormals = true, int frac_bits = 23) {
    if (x == 0 || !std::isfinite(x)) return x;
    const int e = exponent_of(x);
    if (e < -126 && !subnormals) return std::copysign(0.0, x);
    const int quantum = std::max(e, -126) - frac_bits;
    const double scaled = std::ldexp(x, -quantum);  // exact: a power-of-two scaling
    double i = 0;
    switch (r) {
        case Rounding::nearest_even: i = std::nearbyint(scaled); break;  // the default mode: ties to even
        case Rounding::toward_zero: i = std::trunc(scaled); break;
        case Rounding::down: i = std::floor(scaled); break;
        case Rounding::up: i = std::ceil(scaled); break;
        case Rounding::nearest_away: i = std::round(scaled); break;
    }
    const double out = std::ldexp(i, quantum);
    if (std::fabs(out) >= 0x1p128) return overflowed(x < 0, r, frac_bits);
    if (out == 0) return std::copysign(0.0, x);
    return out;
}

// ---- dot products ----------------------------------------------------------------------------

// One experiment: D = c + sum_k a[k] * b[k] in row 0 / column 0 of the
// instruction's matrices, k over k_total (a chain of k_total / k_inst
// instructions). All values exact in their types (c in fp32).
struct DotCase {
    std::vector<double> a, b;
    double c = 0;
};

inline DotCase empty_case(int k_total) {
    return {std::vector<double>(k_total, 0.0), std::vector<double>(k_total, 0.0), 0.0};
}

// Exact sums. Every term (an fp32 C, or a product of two <= 24-bit
// significands) is an integer times a power of two; the sum is formed exactly
// in a 128-bit integer and only then rounded. nullopt when the terms span
// more than 120 bits (the probes stay far inside that).
struct ExactSum {
    __int128 mant = 0;  // value = mant * 2^exp
    int exp = 0;
};

inline std::optional<ExactSum> exact_sum(const std::vector<double>& terms) {
    struct Part {
        std::int64_t m;
        int e;
    };
    std::vector<Part> parts;
    int lo = INT32_MAX, hi = INT32_MIN;
    for (double v : terms) {
        if (v == 0) continue;
        if (!std::isfinite(v)) return std::nullopt;
        int e = 0;
        const double f = std::frexp(v, &e);  // v = f * 2^e, 0.5 <= |f| < 1
        std::int64_t m = static_cast<std::int64_t>(std::ldexp(f, 53));
        int low = e - 53;
        while ((m & 1) == 0) {  // drop trailing zeros: the span is what must fit
            m /= 2;
            ++low;
        }
        parts.push_back({m, low});
        lo = std::min(lo, low);
        hi = std::max(hi, e);
    }
    ExactSum r;
    if (parts.empty()) return r;
    if (hi - lo > 120 - 8) return std::nullopt;  // room for the carries of up to 256 terms
    for (const Part& p : parts) r.mant += static_cast<__int128>(p.m) << (p.e - lo);
    r.exp = lo;
    return r;
}

// The sum rounded to fp32 in mode r (subnormals kept or flushed to zero), or
// to frac_bits < 23 fraction bits; an exact zero is +0, and overflow is
// overflowed()'s.
inline double round_f32(const ExactSum& s, Rounding r, bool subnormals = true, int frac_bits = 23) {
    if (s.mant == 0) return 0.0;
    const bool neg = s.mant < 0;
    const unsigned __int128 u = neg ? static_cast<unsigned __int128>(-s.mant) : static_cast<unsigned __int128>(s.mant);
    int len = 0;
    for (unsigned __int128 x = u; x != 0; x >>= 1) ++len;
    const int e = s.exp + len - 1;  // exponent of the value
    if (e < -126 && !subnormals) return neg ? -0.0 : 0.0;
    const int quantum = std::max(e, -126) - frac_bits;
    const int shift = quantum - s.exp;
    double kept = 0;
    if (shift <= 0) {
        kept = static_cast<double>(u << -shift);  // < 2^24: exact
    } else {
        unsigned __int128 k = 0, rem = u;
        int cmp = -1;  // remainder vs half an ulp: -1 below, 0 equal, 1 above
        if (shift < len + 1) {
            k = u >> shift;
            rem = u - (k << shift);
            const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
            cmp = rem < half ? -1 : rem == half ? 0 : 1;
        }
        bool up = false;
        switch (r) {
            case Rounding::nearest_even: up = cmp > 0 || (cmp == 0 && (k & 1)); break;
            case Rounding::nearest_away: up = cmp >= 0; break;
            case Rounding::toward_zero: up = false; break;
            case Rounding::down: up = neg && rem != 0; break;
            case Rounding::up: up = !neg && rem != 0; break;
        }
        kept = static_cast<double>(k + (up ? 1 : 0));
    }
    const double out = std::ldexp(kept, quantum);
    if (std::fabs(out) >= 0x1p128) return overflowed(neg, r, frac_bits);
    return neg ? -out : out;
}

// The sum as a double when it has at most 53 significant bits.
inline std::optional<double> to_double(const ExactSum& s) {
    if (s.mant == 0) return 0.0;
    const bool neg = s.mant < 0;
    unsigned __int128 u = neg ? static_cast<unsigned __int128>(-s.mant) : static_cast<unsigned __int128>(s.mant);
    int e = s.exp;
    while ((u & 1) == 0) {
        u >>= 1;
        ++e;
    }
    if (u >> 53) return std::nullopt;
    const double v = std::ldexp(static_cast<double>(u), e);
    return neg ? -v : v;
}

inline std::vector<double> dot_terms(const DotCase& dc) {
    std::vector<double> t{dc.c};
    for (std::size_t k = 0; k < dc.a.size(); ++k) t.push_back(dc.a[k] * dc.b[k]);  // exact products
    return t;
}

// The exact value of c + sum a*b as a double, or nullopt when it needs more
// than 53 bits (the crafted cases never do).
inline std::optional<double> exact_dot(const DotCase& dc) {
    const auto s = exact_sum(dot_terms(dc));
    if (!s) return std::nullopt;
    return to_double(*s);
}

// ---- the block-FMA model -----------------------------------------------------------------------

enum class AlignCut : std::uint8_t { toward_zero, floor, nearest_even };

inline const char* name(AlignCut a) {
    switch (a) {
        case AlignCut::toward_zero: return "truncation toward zero";
        case AlignCut::floor: return "truncation toward -inf (two's complement)";
        case AlignCut::nearest_even: return "rounding to nearest";
    }
    return "";
}

// The exponent a product is aligned by: its value's, or the sum of its
// factors' exponents (the significand product, in [1, 4), then carries one
// integer bit instead of being normalized first).
enum class ExpRule : std::uint8_t { value, factors };

struct BlockModel {
    int block = 16;
    int frac_bits = 23;
    AlignCut align = AlignCut::toward_zero;
    Rounding out = Rounding::toward_zero;
    bool c_in_first_block = true;
    bool subnormal_in = true;   // false: subnormal inputs count as zero
    bool subnormal_out = true;  // false: fp32-subnormal results flush to zero
    ExpRule exp_rule = ExpRule::value;
    // Fraction bits of the result: 23 (fp32), or fewer when the instruction's
    // output is narrower (MMA-Sim's model of Hopper's fp8 wgmma: 13).
    int out_frac_bits = 23;

    std::string describe() const {
        return std::to_string(block) + " products per step, " + std::to_string(frac_bits) +
               " bits kept below the largest term's leading bit, alignment by " + name(align) + ", result rounded " +
               name(out) + (c_in_first_block ? ", C aligned with the first block" : ", C added after the first block") +
               (exp_rule == ExpRule::factors ? ", products aligned by their factors' exponents" : "") +
               (out_frac_bits != 23 ? ", the result kept to " + std::to_string(out_frac_bits) + " fraction bits" : "");
    }
};

namespace detail {

inline double cut(double t, double q, AlignCut a) {
    const double x = t / q;  // exact: q is a power of two, far from the underflow range
    switch (a) {
        case AlignCut::toward_zero: return std::trunc(x) * q;
        case AlignCut::floor: return std::floor(x) * q;
        case AlignCut::nearest_even: return std::nearbyint(x) * q;
    }
    return 0;
}

struct Term {
    double v;
    int e;  // exponent used for alignment
};

// One alignment step: the terms aligned to the largest exponent and cut.
inline std::vector<double> aligned(const std::vector<Term>& terms, const BlockModel& m) {
    int emax = INT32_MIN;
    for (const Term& t : terms)
        if (t.v != 0) emax = std::max(emax, t.e);
    std::vector<double> out;
    if (emax == INT32_MIN) return out;
    const double q = std::ldexp(1.0, emax - m.frac_bits);
    for (const Term& t : terms) out.push_back(cut(t.v, q, m.align));
    return out;
}

inline double rounded(const std::vector<double>& terms, const BlockModel& m) {
    const auto s = exact_sum(terms);
    return s ? round_f32(*s, m.out, m.subnormal_out, m.out_frac_bits) : NAN;
}

}  // namespace detail

// What the model predicts for dc on an instruction of k_inst products
// (chained over dc.a.size() / k_inst instructions; the fp32 result of one is
// the C of the next); A's values are of type t, B's of tb (t where omitted),
// each flushed by its own type's smallest normal when subnormal inputs are.
//
// A block whose products are all zero is still a step: the running sum alone
// is aligned, cut and rounded by the output rule. The device does this: its
// "D = C when A*B = 0" rows show fp8 wgmma truncating C to 13 fraction bits
// (C = -9.26857217e+27 came back as -9.2682298e+27) and every 16-bit path
// turning C = -0 into +0 (an exact zero sum is +0), and its "fp32-subnormal C"
// row shows fp8 wgmma flushing such a C to +0.
inline double predict(const BlockModel& m, const DotCase& dc, int k_inst, DType t, DType tb) {
    const double sub_a = std::ldexp(1.0, facts(t).emin), sub_b = std::ldexp(1.0, facts(tb).emin);
    const auto input = [&](double x, double sub_limit) {
        return (!m.subnormal_in && std::fabs(x) < sub_limit) ? 0.0 : x;
    };
    double acc = dc.c;
    // A flushed C is +0, as the device returned it; with products beside it
    // the sign of a zero term is immaterial.
    if (!m.subnormal_out && std::fabs(acc) < 0x1p-126) acc = 0.0;
    const int k_total = static_cast<int>(dc.a.size());
    for (int k0 = 0; k0 < k_total; k0 += k_inst) {
        for (int b0 = k0; b0 < k0 + k_inst; b0 += m.block) {
            std::vector<detail::Term> terms;
            for (int k = b0; k < std::min(b0 + m.block, k0 + k_inst); ++k) {
                const double a = input(dc.a[k], sub_a), b = input(dc.b[k], sub_b);
                const double p = a * b;
                if (p == 0) continue;
                const int e = m.exp_rule == ExpRule::factors ? exponent_of(a) + exponent_of(b) : exponent_of(p);
                terms.push_back({p, e});
            }
            const bool first = b0 == k0;
            if (first && !m.c_in_first_block) {
                std::vector<double> parts = detail::aligned(terms, m);
                parts.push_back(acc);
                acc = detail::rounded(parts, m);
            } else {
                if (acc != 0) terms.push_back({acc, exponent_of(acc)});
                acc = detail::rounded(detail::aligned(terms, m), m);
            }
        }
    }
    return acc;
}

inline double predict(const BlockModel& m, const DotCase& dc, int k_inst, DType t) {
    return predict(m, dc, k_inst, t, t);
}

// A path that ptxas builds from other instructions: on sm_90, mma.sync with
// fp8 operands becomes F2FP unpacks to f16, f16 HMMA steps of k_step
// products each (the first with C = `first_c` ? C : 0, each next one taking
// the previous one's fp32 result as its C), and, when C did not enter the
// first step, an fp32 add of C rounded to nearest (SASS of the accumulation
// probe's kernel). Each step follows `step`, the f16 HMMA's own model; the
// unpack is exact (every e4m3 and e5m2 value is an f16 value).
//
// Which products share a step: one F2FP unpacks the low or the high 16 bits
// of a 32-bit fragment register, two fp8 values of four consecutive k, so a
// step may hold the k whose position in each group of four is 0, 1 (the low
// halves) and the next step those at 2, 3 (`register_halves`), rather than
// one contiguous run of k_step.
enum class StepSplit { contiguous, register_halves };

struct LoweredModel {
    BlockModel step;
    int k_step = 16;
    bool first_c = false;   // C enters the first HMMA instead of a final FADD
    StepSplit split = StepSplit::contiguous;
    bool reversed = false;  // the upper run (or the high halves) first

    std::string describe_split() const {
        if (split == StepSplit::register_halves)
            return reversed ? "the high 16 bits of each fragment register first" : "the low 16 bits of each fragment register first";
        return reversed ? "the upper half of k first" : "";
    }
    std::string describe() const {
        const std::string order = describe_split();
        return "lowered to f16 HMMA steps of " + std::to_string(k_step) + " products" +
               (order.empty() ? "" : " (" + order + ")") + ", each: " + step.describe() +
               (first_c ? "; C enters the first step" : "; C added last by an fp32 add rounded to nearest");
    }
    // The k (within one instruction of k_inst) of product j of step s.
    int k_of(int s, int j, int steps) const {
        const int t = reversed ? steps - 1 - s : s;
        if (split == StepSplit::contiguous) return k_step * t + j;
        const int per = 4 / steps;  // fp8 values per register half: 2 when two steps share a register
        return (j / per) * 4 + t * per + j % per;
    }
};

inline double predict(const LoweredModel& m, const DotCase& dc, int k_inst) {
    double acc = dc.c;
    const int k_total = static_cast<int>(dc.a.size());
    const int steps = k_inst / m.k_step;
    for (int k0 = 0; k0 < k_total; k0 += k_inst) {
        double partial = m.first_c ? acc : 0.0;
        for (int i = 0; i < steps; ++i) {
            DotCase part{std::vector<double>(m.k_step), std::vector<double>(m.k_step), partial};
            for (int j = 0; j < m.k_step; ++j) {
                const int k = k0 + m.k_of(i, j, steps);
                part.a[j] = dc.a[k], part.b[j] = dc.b[k];
            }
            partial = predict(m.step, part, m.k_step, DType::f16);
        }
        if (m.first_c) {
            acc = partial;
        } else {
            const auto s = exact_sum({acc, partial});
            acc = s ? round_f32(*s, Rounding::nearest_even) : NAN;
        }
    }
    return acc;
}

// Baselines for comparison: the exact value rounded once to fp32 (to nearest),
// and an fp32 FMA chain in k order (to nearest).
inline double predict_exact_rounded(const DotCase& dc) {
    const auto s = exact_sum(dot_terms(dc));
    return s ? round_f32(*s, Rounding::nearest_even) : NAN;
}

inline double predict_fp32_sequential(const DotCase& dc) {
    double acc = dc.c;
    for (std::size_t k = 0; k < dc.a.size(); ++k) {
        const auto s = exact_sum({acc, dc.a[k] * dc.b[k]});
        acc = s ? round_f32(*s, Rounding::nearest_even) : NAN;
    }
    return acc;
}

// An fp16 accumulator (each step rounded to nearest in binary16): what RIGEL's
// famous check rules out.
inline double predict_fp16_sequential(const DotCase& dc) {
    double acc = f16_to_f32(f32_to_f16(static_cast<float>(dc.c)));
    for (std::size_t k = 0; k < dc.a.size(); ++k)
        acc = f16_to_f32(f32_to_f16(static_cast<float>(acc + dc.a[k] * dc.b[k])));  // the probes' sums are exact fp32
    return acc;
}

// ---- inference rules -------------------------------------------------------------------------

// The block test: a pair +L, -L at (p, p+1) and one tiny term s at j; s
// vanishes when it was aligned together with L. vanished[p/2][j] says it
// did. Only positions after the pair decide the grouping: a term placed
// before the pair's step may also vanish, because a sequential accumulator
// carries it as a partial sum that is then aligned with L (that case is
// reported separately). Each group must be a consecutive run starting at an
// even position, and the pairs inside it must see the same run.
struct BlockInference {
    bool consistent = false;
    std::vector<std::vector<int>> groups;  // consecutive runs, in order
    int uniform_size = 0;                  // > 0 when all groups have this size
};

inline BlockInference infer_blocks(int k, const std::vector<std::vector<bool>>& vanished) {
    BlockInference r;
    const auto tail = [&](int p) {  // the run the pair at p sees, from p on
        int end = p + 2;
        while (end < k && vanished[p / 2][end]) ++end;
        for (int j = end; j < k; ++j)
            if (vanished[p / 2][j]) return -1;  // not a consecutive run
        return end;
    };
    for (int start = 0; start < k;) {
        if (start % 2 != 0 || start + 1 >= k) return r;
        const int end = tail(start);
        if (end < 0) return r;
        for (int p = start + 2; p + 1 < end; p += 2)
            if (tail(p) != end) return r;
        std::vector<int> g;
        for (int j = start; j < end; ++j) g.push_back(j);
        r.groups.push_back(g);
        start = end;
    }
    r.consistent = true;
    const std::size_t size = r.groups.front().size();
    bool uniform = true;
    for (const auto& g : r.groups) uniform = uniform && g.size() == size;
    r.uniform_size = uniform ? static_cast<int>(size) : 0;
    return r;
}

// A gap scan: kept[g-1] says whether the small term survived at gap g
// (g = 1..size). The answer is the last gap of the initial run of survivals;
// monotone is false if a term survived again after one was lost.
struct GapInference {
    int last_kept = 0;      // 0: lost already at gap 1
    bool all_kept = false;  // survived at every gap tried: the true value is at least last_kept
    bool monotone = true;
};

inline GapInference infer_gap(const std::vector<bool>& kept) {
    GapInference r;
    std::size_t g = 0;
    while (g < kept.size() && kept[g]) ++g;
    r.last_kept = static_cast<int>(g);
    r.all_kept = g == kept.size();
    for (std::size_t i = g; i < kept.size(); ++i) r.monotone = r.monotone && !kept[i];
    return r;
}

// The alignment-cut test: +0.75q, -0.75q and -0.25q next to a +-L pair,
// where q is the last bit kept. Each rule predicts (0, 0, 0), (0, -q, -q) or
// (q, -q, 0) in units of q.
inline std::optional<AlignCut> infer_align_cut(double pos_three_quarters, double neg_three_quarters, double neg_quarter,
                                               double q) {
    const double u[3] = {pos_three_quarters / q, neg_three_quarters / q, neg_quarter / q};
    if (u[0] == 0 && u[1] == 0 && u[2] == 0) return AlignCut::toward_zero;
    if (u[0] == 0 && u[1] == -1 && u[2] == -1) return AlignCut::floor;
    if (u[0] == 1 && u[1] == -1 && u[2] == 0) return AlignCut::nearest_even;
    return std::nullopt;
}

// The output-rounding cases: C = s (1 + x 2^-23) and three products s * 1,
// so the exact sum s (4 + x 2^-23) lies x/4 of an fp32 ulp above s * 4 (all
// its bits survive alignment when at least 23 are kept). x = 1, 3 are below
// and above half; 2 is a tie above an even number, 6 a tie above an odd one.
constexpr int rounding_offsets[] = {1, 2, 3, 6};

inline DotCase rounding_case(int k_total, int x, double sign) {
    DotCase dc = empty_case(k_total);
    dc.c = sign * (1.0 + x * 0x1p-23);
    for (int k = 0; k < 3; ++k) {
        dc.a[k] = sign;
        dc.b[k] = 1.0;
    }
    return dc;
}

// The rounding modes under which every case's fp32 result is what the device
// returned (measured[i] belongs to cases[i]).
inline std::vector<Rounding> consistent_roundings(const std::vector<DotCase>& cases,
                                                  const std::vector<double>& measured) {
    std::vector<Rounding> out;
    for (Rounding r : all_roundings) {
        bool ok = true;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            const auto e = exact_dot(cases[i]);
            ok = ok && e && round_f32(*e, r) == measured[i];
        }
        if (ok) out.push_back(r);
    }
    return out;
}

// A pseudo-random generator the probes seed from ProbeContext::seed
// (splitmix64; identical on every platform).
class SplitMix {
public:
    explicit SplitMix(std::uint64_t seed) : s_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    int uniform(int lo, int hi) { return lo + static_cast<int>(next() % std::uint64_t(hi - lo + 1)); }
    bool chance(int percent) { return static_cast<int>(next() % 100) < percent; }

private:
    std::uint64_t s_;
};

// A random normal number of type t with exponent in [elo, ehi] and random
// significand bits and sign.
inline double random_value(SplitMix& rng, DType t, int elo, int ehi) {
    const int p = facts(t).precision;
    const int e = rng.uniform(std::max(elo, facts(t).emin), std::min(ehi, facts(t).emax));
    const std::uint64_t frac = rng.next() & ((std::uint64_t(1) << (p - 1)) - 1);
    double v = std::ldexp(1.0 + std::ldexp(double(frac), -(p - 1)), e);
    if (!representable(t, v)) v = std::ldexp(1.0, e);  // e4m3's top code is NaN: fall back to the power of two
    return rng.chance(50) ? -v : v;
}

inline double random_f32(SplitMix& rng, int elo, int ehi) {
    const int e = rng.uniform(elo, ehi);
    const std::uint64_t frac = rng.next() & 0x7FFFFF;
    const double v = std::ldexp(1.0 + std::ldexp(double(frac), -23), e);
    return rng.chance(50) ? -v : v;
}

}  // namespace rigel::probes
