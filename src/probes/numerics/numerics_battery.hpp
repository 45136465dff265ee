// The accumulation probe's battery, as plain C++: the paths it asks, the
// crafted experiments, and the rules that turn the device's answers into
// findings. The device is reached only through a BatchRunner, which the probe
// (numerics_accumulation.cu) binds to its kernels and the host tests bind to
// a model of a tensor core, so the whole chain of inference is tested
// without a GPU.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "probes/finding_text.hpp"
#include "probes/numerics/numerics_model.hpp"
#include "probes/probe.hpp"

namespace rigel::probes {

inline constexpr const char* accumulation_probe = "accumulation";
inline constexpr int chain_k = 128;  // RIGEL's hostile sum: one large term and 127 small ones

// ---- paths -------------------------------------------------------------------------------

// New paths go last: a path's id seeds its random battery.
enum class PathId : std::uint8_t {
    mma_f16,
    mma_bf16,
    mma_tf32,
    mma_e4m3,
    wgmma_bf16,
    wgmma_e4m3,
    mma_e5m2,
    wgmma_e5m2,
    mma_e4m3_e5m2,
    wgmma_e4m3_e5m2
};

struct NumPath {
    PathId id;
    const char* ptx;
    DType type;
    int k_inst;
    int m, n;
    bool wgmma;
    int min_cc;
    // PTX ISA, "Precision and rounding": the f16 (and, for wgmma, the generic
    // floating-point) clause says products are formed "with at least single
    // precision"; the bf16/tf32 (and mma e4m3) clause says "with specified
    // precision". Both say accumulation is "with at least single precision"
    // and that accumulation order, rounding and subnormal handling are
    // unspecified.
    bool doc_products_single;
    const char* doc_source;
    DType type_b = DType::f64;  // B's type where it differs from A's (fp8 e4m3 x e5m2); f64: A's
};

inline DType b_type(const NumPath& p) { return p.type_b == DType::f64 ? p.type : p.type_b; }
inline bool mixed(const NumPath& p) { return b_type(p) != p.type; }

// What the crafted experiments may use: the type's facts, or for mixed
// operands the values both types hold (the narrower precision and range, the
// e4m3 side's subnormals: normal numbers in e5m2), named "A x B".
inline TypeFacts operand_facts(const NumPath& p) {
    if (!mixed(p)) return facts(p.type);
    const TypeFacts a = facts(p.type), b = facts(b_type(p));
    return {p.type == DType::e4m3 && b_type(p) == DType::e5m2 ? "e4m3 x e5m2" : "mixed",
            std::min(a.precision, b.precision), std::max(a.emin, b.emin), std::min(a.emax, b.emax),
            std::max(a.sub_exp, b.sub_exp), a.elem_bytes};
}

inline constexpr const char* mma_doc = "PTX ISA 9.0, mma, 'Precision and rounding'";
inline constexpr const char* wgmma_doc = "PTX ISA 9.0, wgmma.mma_async, 'Precision and rounding'";

inline const NumPath paths[] = {
    {PathId::mma_f16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", DType::f16, 16, 16, 8, false, 80, true,
     mma_doc},
    {PathId::mma_bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", DType::bf16, 16, 16, 8, false, 80,
     false, mma_doc},
    {PathId::mma_tf32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", DType::tf32, 8, 16, 8, false, 80, false,
     mma_doc},
    {PathId::mma_e4m3, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", DType::e4m3, 32, 16, 8, false, 89,
     false, mma_doc},
    {PathId::mma_e5m2, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", DType::e5m2, 32, 16, 8, false, 89,
     false, mma_doc},
    {PathId::mma_e4m3_e5m2, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", DType::e4m3, 32, 16, 8, false,
     89, false, mma_doc, DType::e5m2},
    {PathId::wgmma_bf16, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", DType::bf16, 16, 64, 8, true, 90,
     false, wgmma_doc},
    {PathId::wgmma_e4m3, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", DType::e4m3, 32, 64, 8, true, 90,
     true, wgmma_doc},
    {PathId::wgmma_e5m2, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2", DType::e5m2, 32, 64, 8, true, 90,
     true, wgmma_doc},
    {PathId::wgmma_e4m3_e5m2, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2", DType::e4m3, 32, 64, 8, true,
     90, true, wgmma_doc, DType::e5m2},
};

// Full matrices for `count` experiments, as the kernels read them.
struct Batch {
    std::vector<std::uint8_t> a, b;
    std::vector<float> c;
    int count = 0;
};

inline void put_bits(std::vector<std::uint8_t>& dst, std::size_t at, std::uint32_t bits, int bytes) {
    for (int i = 0; i < bytes; ++i) dst[at + i] = static_cast<std::uint8_t>(bits >> (8 * i));
}

inline Batch make_batch(const NumPath& p, const std::vector<DotCase>& cases, int k_total) {
    const int eb = facts(p.type).elem_bytes;
    Batch bt;
    bt.count = static_cast<int>(cases.size());
    bt.a.assign(cases.size() * p.m * k_total * eb, 0);
    bt.b.assign(cases.size() * p.n * k_total * eb, 0);
    bt.c.assign(cases.size() * p.m * p.n, 0.0f);
    for (std::size_t e = 0; e < cases.size(); ++e) {
        const DotCase& dc = cases[e];
        if (int(dc.a.size()) != k_total) throw std::logic_error("accumulation: case of the wrong length");
        for (int k = 0; k < k_total; ++k) {
            const auto ab = encode(p.type, dc.a[k]);
            const auto bb = encode(b_type(p), dc.b[k]);
            if (!ab || !bb)
                throw std::logic_error("accumulation: an operand is not exact in " +
                                       std::string(operand_facts(p).name));
            put_bits(bt.a, (e * p.m * k_total + k) * eb, *ab, eb);
            put_bits(bt.b, (e * p.n * k_total + k) * eb, *bb, eb);
        }
        if (static_cast<double>(static_cast<float>(dc.c)) != dc.c)
            throw std::logic_error("accumulation: C not an fp32");
        bt.c[e * p.m * p.n] = static_cast<float>(dc.c);
    }
    return bt;
}

// ---- one path's battery ------------------------------------------------------------------

inline void append(std::string& list, const std::string& item, const char* sep = "; ") {
    if (!list.empty()) list += sep;
    list += item;
}

struct Results {
    std::vector<double> d;  // D(0, 0) per case
    long stray = 0;         // other D elements that were not exactly zero (layout or poison trouble)
};

// Runs a batch of experiments on the device: D (count x M x N) for the
// batch's matrices, or nullopt when this binary cannot run the path here.
using BatchRunner = std::function<std::optional<std::vector<float>>(const Batch&, int k_total)>;

class PathProbe {
public:
    PathProbe(const NumPath& p, const ProbeContext& ctx, BatchRunner runner)
        : p_(p), ctx_(ctx), f_(operand_facts(p)), runner_(std::move(runner)) {
        e_big_ = std::min(2 * f_.emax, 20);
        g_max_ = std::min(40, e_big_ - 2 * f_.emin);
    }

    // False when the binary has no code for the path on this device.
    bool available() {
        DotCase dc = empty_case(p_.k_inst);
        return run({dc}, p_.k_inst).has_value();
    }

    void run_all(std::vector<Finding>& out);

private:
    std::optional<Results> run(const std::vector<DotCase>& cases, int k_total) {
        const auto d = runner_(make_batch(p_, cases, k_total), k_total);
        if (!d) return std::nullopt;
        Results r;
        const std::size_t per = std::size_t(p_.m) * p_.n;
        for (std::size_t e = 0; e < cases.size(); ++e) {
            r.d.push_back((*d)[e * per]);
            for (std::size_t j = 1; j < per; ++j) r.stray += (*d)[e * per + j] != 0.0f;
        }
        stray_ += r.stray;
        return r;
    }
    Results must_run(const std::vector<DotCase>& cases, int k_total) {
        auto r = run(cases, k_total);
        if (!r) throw std::runtime_error("accumulation: the path stopped being available");
        return *r;
    }

    // Puts the product `value` at position k as two exact normal factors.
    void put(DotCase& dc, int k, double value) const {
        const auto ab = split_product(p_.type, b_type(p_), value);
        if (!ab) throw std::logic_error("accumulation: no exact split of " + fmt_f64(value) + " in " + f_.name);
        dc.a[k] = ab->first;
        dc.b[k] = ab->second;
    }

    Finding row(const std::string& quantity) const {
        Finding f = make_finding(accumulation_probe, p_.ptx, f_.name, quantity);
        f.doc_source = p_.doc_source;
        f.verified = true;
        return f;
    }

    void finish(Finding& f, long stray_before) const {
        if (stray_ != stray_before) {
            f.verified = false;
            f.detail += " WARNING: " + std::to_string(stray_ - stray_before) +
                        " D elements outside (0, 0) were not zero; the operands may not have been placed as intended.";
        }
    }

    double exact(const DotCase& dc) const {
        const auto e = exact_dot(dc);
        if (!e) throw std::logic_error("accumulation: a crafted sum is not exact in float64");
        return *e;
    }

    void products_exact(std::vector<Finding>& out);
    void subnormals(std::vector<Finding>& out);
    void c_passthrough(std::vector<Finding>& out);
    void blocks(std::vector<Finding>& out);
    void alignment(std::vector<Finding>& out);
    void c_alignment(std::vector<Finding>& out);
    void inter_block(std::vector<Finding>& out);
    void output_rounding(std::vector<Finding>& out);
    void hostile(std::vector<Finding>& out);
    void monotonicity(std::vector<Finding>& out);
    void model_check(std::vector<Finding>& out);

    const NumPath& p_;
    const ProbeContext& ctx_;
    const TypeFacts f_;
    BatchRunner runner_;
    int e_big_ = 0;  // exponent of the large terms
    int g_max_ = 0;  // largest gap whose small term is still a product of two normal inputs
    long stray_ = 0;

    // What the battery has learned so far (feeds the later tests and the model).
    bool subnormal_in_ = true, subnormal_out_ = true;
    BlockInference blocks_;
    int j0_ = -1;                   // a position sharing position 0's alignment step, other than 0 and 1
    std::optional<int> frac_bits_;  // bits kept below the largest term's leading bit
    std::optional<AlignCut> cut_;
    std::optional<bool> c_aligned_;
    std::vector<Rounding> roundings_;
};

inline void PathProbe::products_exact(std::vector<Finding>& out) {
    const long s0 = stray_;
    const int p = f_.precision;
    const double big = 2.0 - std::ldexp(1.0, -(p - 1));  // all significand bits set
    const double one_ulp = 1.0 + std::ldexp(1.0, -(p - 1));
    std::vector<DotCase> cases;
    for (double v : {big, one_ulp}) {
        DotCase dc = empty_case(p_.k_inst);
        dc.a[0] = v;
        dc.b[0] = v;
        cases.push_back(dc);
    }
    const Results r = must_run(cases, p_.k_inst);
    bool all = true;
    std::string meas, exp;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const double e = exact(cases[i]);
        all = all && r.d[i] == e;
        append(meas, fmt_f32(r.d[i]));
        append(exp, fmt_f64(e));
    }
    Finding f = row("product of two inputs with full significands, (2-2^-" + std::to_string(p - 1) + ")^2 and (1+2^-" +
                    std::to_string(p - 1) + ")^2 (" + std::to_string(2 * p) + "-bit exact products)");
    f.measured = std::string(all ? "exact: " : "not exact: ") + meas;
    f.expected = exp;
    if (p_.doc_products_single) {
        f.relation = all ? DocRelation::confirms : DocRelation::contradicts;
        f.doc_statement = "element-wise multiplication is performed with at least single precision";
    } else {
        f.relation = DocRelation::fills_in;
        f.doc_statement = "element-wise multiplication is performed with specified precision";
    }
    f.detail = "C = 0 and one nonzero product, so D is the product itself (" + std::to_string(2 * p) +
               " significant bits fit fp32's 24).";
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::subnormals(std::vector<Finding>& out) {
    // Subnormal inputs times a power of two that lands the product among fp32's normals.
    {
        const long s0 = stray_;
        // Each operand's subnormals are its own type's: with e4m3 x e5m2
        // operands A's 2^-9 is normal in e5m2, so B gets e5m2's 2^-16.
        const TypeFacts fa = facts(p_.type), fb = facts(b_type(p_));
        const double tiny = std::ldexp(1.0, fa.sub_exp);
        const double largest_sub = std::ldexp(1.0, fa.emin) - tiny;
        const double tiny_b = std::ldexp(1.0, fb.sub_exp);
        const double scale = std::ldexp(1.0, std::min(f_.emax, 100));  // normal in both types
        std::vector<DotCase> cases(3, empty_case(p_.k_inst));
        cases[0].a[0] = tiny, cases[0].b[0] = scale;
        cases[1].a[0] = largest_sub, cases[1].b[0] = scale;
        cases[2].a[0] = scale, cases[2].b[0] = tiny_b;  // in B too
        const Results r = must_run(cases, p_.k_inst);
        int kept = 0, zero = 0;
        std::string meas, exp;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            const double e = exact(cases[i]);
            kept += r.d[i] == e;
            zero += r.d[i] == 0.0;
            append(meas, fmt_f32(r.d[i]));
            append(exp, fmt_f64(e));
        }
        subnormal_in_ = kept == 3;
        const std::string scale_text = " times 2^" + std::to_string(std::min(f_.emax, 100));
        Finding f = row(mixed(p_) ? "subnormal inputs (" + std::string(fa.name) + " 2^" + std::to_string(fa.sub_exp) +
                                        " and its largest subnormal in A, " + fb.name + " 2^" +
                                        std::to_string(fb.sub_exp) + " in B)" + scale_text
                                  : "subnormal " + std::string(f_.name) + " inputs (2^" + std::to_string(f_.sub_exp) +
                                        " and the largest subnormal, in A and in B)" + scale_text);
        f.measured = std::string(kept == 3 ? "kept (exact): " : zero == 3 ? "flushed to zero: " : "mixed: ") + meas;
        f.expected = exp;
        f.relation = DocRelation::fills_in;
        f.doc_statement = "handling of subnormal inputs is unspecified";
        f.detail = "the products are normal fp32 numbers, so any difference comes from the inputs.";
        finish(f, s0);
        out.push_back(f);
    }
    // fp32-subnormal results: a subnormal C with no products, and (where the
    // input type's range reaches) a product below 2^-126.
    {
        const long s0 = stray_;
        std::vector<DotCase> cases;
        for (double c : {std::ldexp(1.0, -140), -3.0 * std::ldexp(1.0, -145)}) {
            DotCase dc = empty_case(p_.k_inst);
            dc.c = c;
            cases.push_back(dc);
        }
        const bool products_reach = 2 * f_.emin < -126;
        if (products_reach) {
            DotCase dc = empty_case(p_.k_inst);
            dc.a[0] = std::ldexp(1.0, -70), dc.b[0] = std::ldexp(1.0, -70);
            cases.push_back(dc);
            dc.a[0] = 1.5 * std::ldexp(1.0, -70);
            cases.push_back(dc);
        }
        const Results r = must_run(cases, p_.k_inst);
        const auto verdict = [&](std::size_t from, std::size_t to, std::string& meas, std::string& exp) {
            int kept = 0, zero = 0;
            for (std::size_t i = from; i < to; ++i) {
                const double e = exact(cases[i]);
                kept += r.d[i] == e;
                zero += r.d[i] == 0.0;
                append(meas, fmt_f32(r.d[i]));
                append(exp, fmt_f64(e));
            }
            const int n = int(to - from);
            return std::string(kept == n ? "kept (exact): " : zero == n ? "flushed to zero: " : "mixed: ");
        };
        {
            std::string meas, exp;
            const std::string v = verdict(0, 2, meas, exp);
            // Where no product reaches fp32's subnormal range this C is the
            // only witness of how the result treats it (fp8 wgmma flushes it).
            if (!products_reach) subnormal_out_ = v.rfind("kept", 0) == 0;
            Finding f = row("fp32-subnormal C (2^-140, -3*2^-145) with all products zero");
            f.measured = v + meas;
            f.expected = exp;
            f.relation = DocRelation::fills_in;
            f.doc_statement = "silent on subnormal C and results";
            finish(f, s0);
            out.push_back(f);
        }
        if (products_reach) {
            std::string meas, exp;
            const std::string v = verdict(2, 4, meas, exp);
            subnormal_out_ = v.rfind("kept", 0) == 0;
            Finding f = row("product in fp32's subnormal range (2^-70 * 2^-70, 1.5*2^-70 * 2^-70)");
            f.measured = v + meas;
            f.expected = exp;
            f.relation = DocRelation::fills_in;
            f.doc_statement = "silent on subnormal results";
            finish(f, s0);
            out.push_back(f);
        }
    }
}

inline void PathProbe::c_passthrough(std::vector<Finding>& out) {
    const long s0 = stray_;
    // A = B = 0 and every element of C distinct: D must equal C bit for bit.
    SplitMix rng(ctx_.seed * 0x100 + 17);
    std::vector<float> c(std::size_t(p_.m) * p_.n);
    for (auto& x : c) x = static_cast<float>(random_f32(rng, -100, 100));
    const float specials[] = {-0.0f, std::bit_cast<float>(0x00000001u), 1.0f + 0x1p-23f, -0x1.fffffep127f,
                              std::bit_cast<float>(0x007FFFFFu)};
    for (std::size_t i = 0; i < std::size(specials); ++i) c[i * 9 + 1] = specials[i];
    Batch bt = make_batch(p_, {empty_case(p_.k_inst)}, p_.k_inst);
    bt.c = c;
    const auto d = runner_(bt, p_.k_inst);
    if (!d) throw std::runtime_error("accumulation: the path stopped being available");
    long same = 0;
    std::string first;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const bool eq = std::bit_cast<std::uint32_t>((*d)[i]) == std::bit_cast<std::uint32_t>(c[i]);
        same += eq;
        if (!eq && first.empty()) first = "C " + fmt_f32(c[i]) + " came back as " + fmt_f32((*d)[i]);
    }
    Finding f = row("D = C when A*B = 0: all " + std::to_string(c.size()) +
                    " elements, random fp32 plus -0, the smallest and largest subnormals, 1+2^-23, -max");
    f.measured = std::to_string(same) + "/" + std::to_string(c.size()) + " bit-identical";
    f.expected = std::to_string(c.size()) + "/" + std::to_string(c.size()) + " (C unchanged)";
    f.relation = DocRelation::fills_in;
    f.doc_statement = "silent on whether C is rounded when nothing is added to it";
    f.detail =
        first.empty() ? "C passes through unrounded, sign of zero and subnormals included." : "first change: " + first;
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::blocks(std::vector<Finding>& out) {
    const long s0 = stray_;
    const int k = p_.k_inst;
    const double big = std::ldexp(1.0, e_big_);
    const double s = std::ldexp(1.0, e_big_ - g_max_);
    std::vector<DotCase> cases;
    std::vector<std::pair<int, int>> where;  // (pair start, position of s)
    for (int p = 0; p + 1 < k; p += 2)
        for (int j = 0; j < k; ++j) {
            if (j == p || j == p + 1) continue;
            DotCase dc = empty_case(k);
            put(dc, p, big);
            put(dc, p + 1, -big);
            put(dc, j, s);
            cases.push_back(dc);
            where.emplace_back(p, j);
        }
    const Results r = must_run(cases, k);
    std::vector<std::vector<bool>> vanished(k / 2, std::vector<bool>(k, false));
    int odd = 0, kept = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        vanished[where[i].first / 2][where[i].second] = r.d[i] == 0.0;
        kept += r.d[i] == s;
        odd += r.d[i] != 0.0 && r.d[i] != s;
    }
    blocks_ = infer_blocks(k, vanished);
    if (blocks_.consistent)
        for (int x : blocks_.groups.front())
            if (x > 1) {
                j0_ = x;
                break;
            }
    // The tiny term survived everywhere: the grouping is unknown, but the
    // bits kept can still be bounded next to the pair.
    if (kept == int(cases.size()) && k > 2) j0_ = 2;
    Finding f =
        row("products fused per alignment step: +2^" + std::to_string(e_big_) + " and -2^" + std::to_string(e_big_) +
            " at k = p, p+1, one 2^" + std::to_string(e_big_ - g_max_) + " at every other k");
    f.expected = "exact sum 2^" + std::to_string(e_big_ - g_max_) + " at every position";
    f.relation = DocRelation::fills_in;
    f.doc_statement = "the accumulation order is unspecified";
    std::string groups;
    for (const auto& g : blocks_.groups)
        append(groups, std::to_string(g.front()) + "-" + std::to_string(g.back()), " | ");
    if (!blocks_.consistent || odd > 0) {
        f.measured = "no consistent grouping (" + std::to_string(odd) + " results neither 0 nor the small term)";
        f.verified = odd == 0;
    } else if (kept == 0 && blocks_.groups.size() == 1) {
        f.measured = std::to_string(k) + " (all products of the instruction in one step)";
    } else if (blocks_.uniform_size == 2 && kept == int(cases.size())) {
        f.measured = "inconclusive: the small term survived everywhere (it lies within the bits kept)";
        f.verified = false;
    } else if (blocks_.uniform_size > 0) {
        f.measured = std::to_string(blocks_.uniform_size) + " consecutive products per step (k " + groups + ")";
    } else {
        f.measured = "groups of k: " + groups;
    }
    // Terms placed in an earlier step than the pair: a sequential accumulator
    // carries them as a partial sum into the pair's step, where they vanish.
    int earlier = 0, earlier_vanished = 0;
    if (blocks_.consistent) {
        const auto group_of = [&](int x) {
            for (std::size_t g = 0; g < blocks_.groups.size(); ++g)
                if (x >= blocks_.groups[g].front() && x <= blocks_.groups[g].back()) return int(g);
            return -1;
        };
        for (std::size_t i = 0; i < cases.size(); ++i)
            if (group_of(where[i].second) < group_of(where[i].first)) {
                ++earlier;
                earlier_vanished += r.d[i] == 0.0;
            }
    }
    f.detail =
        "the small term vanishes exactly when it is aligned together with the large pair; the grouping is read "
        "from terms placed after the pair; " +
        std::to_string(cases.size()) + " placements, " + std::to_string(kept) +
        " kept it. Assumes k = p and p+1 share a step (every known tensor core fuses at "
        "least 4).";
    if (earlier > 0)
        f.detail += " Placed in an earlier step it vanished " + std::to_string(earlier_vanished) + "/" +
                    std::to_string(earlier) + " times: " +
                    (earlier_vanished == earlier ? "the steps run in sequence, each partial sum aligned with the next "
                                                   "step's terms"
                     : earlier_vanished == 0     ? "the steps' sums are combined side by side, not in sequence"
                                                 : "mixed");
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::alignment(std::vector<Finding>& out) {
    const long s0 = stray_;
    Finding f =
        row("bits kept below the largest term's leading bit when terms are aligned (+-2^" + std::to_string(e_big_) +
            " pair and one 2^(" + std::to_string(e_big_) + "-g), gap g = 1.." + std::to_string(g_max_) + ")");
    f.relation = DocRelation::fills_in;
    f.doc_statement = "accumulation is performed with at least single precision; rounding is unspecified";
    if (j0_ < 0) {
        f.measured = "not measured: no third position shares position 0's alignment step";
        f.verified = false;
        out.push_back(f);
        return;
    }
    const double big = std::ldexp(1.0, e_big_);
    std::vector<DotCase> cases;
    for (int g = 1; g <= g_max_; ++g) {
        DotCase dc = empty_case(p_.k_inst);
        put(dc, 0, big);
        put(dc, 1, -big);
        put(dc, j0_, std::ldexp(1.0, e_big_ - g));
        cases.push_back(dc);
    }
    const Results r = must_run(cases, p_.k_inst);
    std::vector<bool> kept;
    int odd = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const double e = exact(cases[i]);
        kept.push_back(r.d[i] == e);
        odd += r.d[i] != e && r.d[i] != 0.0;
    }
    const GapInference gi = infer_gap(kept);
    f.expected = "exact: the small term itself at every gap";
    if (gi.all_kept) {
        f.measured = "at least " + std::to_string(gi.last_kept) + " (kept at every gap tried)";
    } else {
        frac_bits_ = gi.last_kept;
        f.measured = std::to_string(gi.last_kept) + " bits (" +
                     (gi.last_kept >= 23 ? std::to_string(gi.last_kept - 23) + " beyond fp32's 23"
                                         : std::to_string(23 - gi.last_kept) + " fewer than fp32's 23") +
                     "); the term 2^-" + std::to_string(gi.last_kept + 1) + " below the pair vanishes";
    }
    f.unit = "bits";
    f.verified = odd == 0 && gi.monotone;
    f.detail = "measured inside one alignment step (k = 0, 1, " + std::to_string(j0_) + "). " +
               (gi.monotone ? "" : "Not monotone in the gap. ") +
               (odd ? std::to_string(odd) + " results were neither the term nor zero. " : "") +
               "An fp32 adder keeps 23 bits below the leading bit; more means guard bits in the aligner.";
    finish(f, s0);
    out.push_back(f);

    // How the bits below the last kept one are cut: +0.75q, -0.75q, -0.25q.
    if (!frac_bits_ || e_big_ - *frac_bits_ - 2 < 2 * f_.emin) return;
    const long s1 = stray_;
    const double q = std::ldexp(1.0, e_big_ - *frac_bits_);
    std::vector<DotCase> cut_cases;
    for (double v : {0.75 * q, -0.75 * q, -0.25 * q}) {
        DotCase dc = empty_case(p_.k_inst);
        put(dc, 0, big);
        put(dc, 1, -big);
        put(dc, j0_, v);
        cut_cases.push_back(dc);
    }
    const Results rc = must_run(cut_cases, p_.k_inst);
    cut_ = infer_align_cut(rc.d[0], rc.d[1], rc.d[2], q);
    Finding c =
        row("how alignment cuts the bits below the last kept one (q = 2^" + std::to_string(e_big_ - *frac_bits_) +
            "): +0.75q, -0.75q, -0.25q next to the +-2^" + std::to_string(e_big_) + " pair");
    c.measured = (cut_ ? std::string(name(*cut_)) + ": " : "none of the three rules: ") + fmt_f32(rc.d[0]) + "; " +
                 fmt_f32(rc.d[1]) + "; " + fmt_f32(rc.d[2]);
    c.expected = fmt_f64(0.75 * q) + "; " + fmt_f64(-0.75 * q) + "; " + fmt_f64(-0.25 * q) +
                 " (exact); toward zero predicts 0; 0; 0, toward -inf 0; -q; -q, nearest q; -q; 0";
    c.relation = DocRelation::fills_in;
    c.doc_statement = "rounding is unspecified";
    finish(c, s1);
    out.push_back(c);
}

inline void PathProbe::c_alignment(std::vector<Finding>& out) {
    const long s0 = stray_;
    const double big = std::ldexp(1.0, e_big_);
    const double s = std::ldexp(1.0, e_big_ - g_max_);
    DotCase dc = empty_case(p_.k_inst);
    dc.c = s;
    put(dc, 0, big);
    put(dc, 1, -big);
    const Results r = must_run({dc}, p_.k_inst);
    Finding f = row("C aligned together with the first step's products (C = 2^" + std::to_string(e_big_ - g_max_) +
                    ", products +-2^" + std::to_string(e_big_) + ")");
    f.expected = "exact " + fmt_f64(s) + "; 0 if C is aligned with the pair";
    if (r.d[0] == 0.0) {
        c_aligned_ = true;
        f.measured = "yes: C vanished (D = 0)";
    } else if (r.d[0] == s) {
        c_aligned_ = false;
        f.measured = "no: C survived (D = " + fmt_f32(r.d[0]) + ")";
    } else {
        f.measured = "neither: D = " + fmt_f32(r.d[0]);
        f.verified = false;
    }
    f.relation = DocRelation::fills_in;
    f.doc_statement = "the accumulation order is unspecified";
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::inter_block(std::vector<Finding>& out) {
    if (!blocks_.consistent || blocks_.groups.size() < 3) return;
    const long s0 = stray_;
    const int k0 = blocks_.groups[0].front(), k1 = blocks_.groups[1].front(), k2 = blocks_.groups[2].front();
    const double big = std::ldexp(1.0, e_big_);
    std::vector<DotCase> cases;
    for (int g = 1; g <= g_max_; ++g) {
        DotCase dc = empty_case(p_.k_inst);
        put(dc, k0, big);
        put(dc, k1, std::ldexp(1.0, e_big_ - g));
        put(dc, k2, -big);
        cases.push_back(dc);
    }
    const Results r = must_run(cases, p_.k_inst);
    std::vector<bool> kept;
    for (std::size_t i = 0; i < cases.size(); ++i) kept.push_back(r.d[i] == exact(cases[i]));
    const GapInference gi = infer_gap(kept);
    Finding f = row("a term of a later step against a large partial sum: +2^" + std::to_string(e_big_) + " at k " +
                    std::to_string(k0) + ", 2^(" + std::to_string(e_big_) + "-g) at k " + std::to_string(k1) + ", -2^" +
                    std::to_string(e_big_) + " at k " + std::to_string(k2));
    f.measured = gi.all_kept ? "kept at every gap up to " + std::to_string(gi.last_kept)
                             : "kept up to gap " + std::to_string(gi.last_kept) + ", lost beyond";
    f.expected =
        "exact: the small term at every gap; an fp32 partial sum keeps it up to gap 23 (24 with a tie to even)";
    f.unit = "bits";
    f.relation = DocRelation::fills_in;
    f.doc_statement = "the accumulation order is unspecified";
    f.verified = gi.monotone;
    f.detail =
        "distinguishes steps whose partial sums are rounded to fp32 (limit near 23) from a wider tree of partial sums.";
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::output_rounding(std::vector<Finding>& out) {
    const long s0 = stray_;
    std::vector<DotCase> cases;
    for (double sign : {1.0, -1.0})
        for (int x : rounding_offsets) cases.push_back(rounding_case(p_.k_inst, x, sign));
    const Results r = must_run(cases, p_.k_inst);
    roundings_ = consistent_roundings(cases, r.d);
    Finding f =
        row("rounding of the fp32 result: C = +-(1 + x*2^-23), three products +-1, exact +-(4 + x*2^-23) "
            "for x = 1, 2, 3, 6 (a quarter, a tie, three quarters, a tie above an odd number)");
    std::string meas, exp;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        append(meas, fmt_f32(r.d[i]));
        append(exp, fmt_f64(exact(cases[i])));
    }
    std::string modes;
    for (Rounding m : roundings_) append(modes, name(m), " or ");
    const bool hidden = frac_bits_ && *frac_bits_ < 23;
    f.measured = (!modes.empty() ? modes
                  : hidden       ? std::string("not observable")
                                 : std::string("none of the five modes")) +
                 ": " + meas;
    f.expected = exp;
    f.relation = DocRelation::fills_in;
    f.doc_statement = "rounding is unspecified";
    f.detail = "every bit of these sums survives alignment when at least 23 bits are kept";
    if (hidden)
        f.detail += "; here only " + std::to_string(*frac_bits_) +
                    " are, so C's low bits are cut before any rounding and the output rule is not observable";
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::hostile(std::vector<Finding>& out) {
    const long s0 = stray_;
    const double big = std::ldexp(1.0, e_big_);
    std::vector<DotCase> cases;
    for (int g = 1; g <= g_max_; ++g) {
        DotCase dc = empty_case(chain_k);
        put(dc, 0, big);
        for (int k = 1; k < chain_k; ++k) put(dc, k, std::ldexp(1.0, e_big_ - g));
        cases.push_back(dc);
    }
    DotCase famous = empty_case(chain_k);
    famous.a[0] = 448.0, famous.b[0] = 1.0;
    for (int k = 1; k < chain_k; ++k) famous.a[k] = 0.0625, famous.b[k] = 1.0;
    cases.push_back(famous);
    const Results r = must_run(cases, chain_k);

    std::vector<bool> survived, exact_ok;
    for (int g = 1; g <= g_max_; ++g) {
        survived.push_back(r.d[g - 1] > big);
        exact_ok.push_back(r.d[g - 1] == exact(cases[g - 1]));
    }
    const GapInference gs = infer_gap(survived), ge = infer_gap(exact_ok);
    const int insts = chain_k / p_.k_inst;
    Finding f = row("RIGEL's hostile sum: 2^" + std::to_string(e_big_) + " + 127 x 2^(" + std::to_string(e_big_) +
                    "-g), one 128-term dot product (" + std::to_string(insts) + " chained instructions), g = 1.." +
                    std::to_string(g_max_));
    f.measured = "small terms survive up to gap " + std::to_string(gs.last_kept) + (gs.all_kept ? "+" : "") +
                 "; result exact up to gap " + std::to_string(ge.last_kept) + (ge.all_kept ? "+" : "");
    const int g_show = std::min(g_max_, std::max(1, gs.last_kept + 1));
    f.expected = "exact at every gap (e.g. gap " + std::to_string(g_show) + ": " + fmt_f64(exact(cases[g_show - 1])) +
                 ", device " + fmt_f32(r.d[g_show - 1]) + "); any fp32 summation order is exact up to gap 23";
    f.unit = "bits";
    f.doc_statement = "accumulation of the intermediate values is performed with at least single precision";
    f.relation = gs.last_kept >= 23 ? DocRelation::confirms : DocRelation::contradicts;
    f.detail =
        "for g <= 23 every partial sum of these terms, in any order, is an fp32 number, so an accumulator of at "
        "least single precision must return the exact sum; small terms lost at a smaller gap show a narrower "
        "accumulator. fp32 sequential summation predicts " +
        fmt_f32(predict_fp32_sequential(cases[std::min(g_max_, 23) - 1])) + " at gap " +
        std::to_string(std::min(g_max_, 23)) + ".";
    finish(f, s0);
    out.push_back(f);

    Finding h = row("448 + 127 x 0.0625 in one 128-term dot product (RIGEL's check)");
    const double want = exact(famous);
    h.measured = fmt_f32(r.d.back());
    h.expected = fmt_f64(want) + " (an fp16 accumulator gives " + fmt_f32(predict_fp16_sequential(famous)) + ")";
    // Every partial sum of this check is an fp32 number, so a wrong answer
    // contradicts "at least single precision"; a right one rules out only an
    // fp16 accumulator: the small terms sit 12 binades down, so an
    // accumulator keeping 13 bits passes too. It confirms the statement only
    // beside the hostile sum's confirmation, which tests every gap to 23.
    const bool famous_ok = r.d.back() == want;
    h.relation = !famous_ok                            ? DocRelation::contradicts
                 : f.relation == DocRelation::confirms ? DocRelation::confirms
                                                       : DocRelation::fills_in;
    h.doc_statement = "accumulation of the intermediate values is performed with at least single precision";
    h.detail =
        "0.0625 is 12 binades below 448: an fp16 accumulator's half-ulp there is 0.125, so each term is lost; "
        "an accumulator keeping 13 bits or more keeps them all, so passing rules out an fp16 accumulator and no "
        "more.";
    if (famous_ok && h.relation != DocRelation::confirms)
        h.detail += " The hostile sum above shows a narrower accumulator than fp32 on this path.";
    finish(h, s0);
    out.push_back(h);

    // One row per gap: the points of reproduce's accumulator figure.
    for (int g = 1; g <= g_max_; ++g) {
        const double sum = exact(cases[g - 1]), got = r.d[g - 1];
        Finding pg = row("RIGEL's hostile sum at one gap: relative error of the 128-term sum");
        pg.swept = g;
        pg.value = got == sum ? 0.0 : std::abs(got - sum) / sum;
        pg.measured = fmt_f32(got);
        pg.expected = fmt_f64(sum);
        pg.doc_statement = f.doc_statement;
        pg.detail = "2^" + std::to_string(e_big_) + " + 127 x 2^(" + std::to_string(e_big_) + "-" +
                    std::to_string(g) + "); value is |device - exact| / exact.";
        finish(pg, s0);
        out.push_back(pg);
    }
}

inline void PathProbe::monotonicity(std::vector<Finding>& out) {
    Finding f =
        row("monotonicity: C = 2^E - 2^(E-24), then the larger C = 2^E, with -(2^E - 2^(E-p)) and small "
            "products 2^(E-1-F) in the first step");
    f.relation = DocRelation::fills_in;
    f.doc_statement = "silent";
    if (!frac_bits_ || !c_aligned_ || !*c_aligned_ || !blocks_.consistent || blocks_.groups.front().size() < 3) {
        f.measured =
            "not measured: needs the kept bits F, C aligned with the first step's products, and a first step "
            "of at least 3 products";
        f.verified = false;
        out.push_back(f);
        return;
    }
    const long s0 = stray_;
    const int e = e_big_;
    const int exp_small = e - 1 - *frac_bits_;
    const std::vector<int>& g0 = blocks_.groups.front();
    const double small = std::ldexp(1.0, exp_small);
    // The largest input-precision number below 2^E, negated: it cancels most
    // of C, so the result is small and fp32's granularity there is fine.
    const double cancel = -(std::ldexp(1.0, e) - std::ldexp(1.0, e - f_.precision));
    if (!split_product(p_.type, b_type(p_), small) || !split_product(p_.type, b_type(p_), cancel)) {
        f.measured = "not measured: 2^" + std::to_string(exp_small) + " is not a product of two normal inputs";
        f.verified = false;
        out.push_back(f);
        return;
    }
    std::vector<DotCase> cases;
    for (double c : {std::ldexp(1.0, e) - std::ldexp(1.0, e - 24), std::ldexp(1.0, e)}) {
        DotCase dc = empty_case(p_.k_inst);
        dc.c = c;
        put(dc, g0[0], cancel);
        for (std::size_t i = 1; i < g0.size(); ++i) put(dc, g0[i], small);
        cases.push_back(dc);
    }
    const Results r = must_run(cases, p_.k_inst);
    const bool decreasing = r.d[0] > r.d[1];
    const int m = static_cast<int>(g0.size()) - 1;
    f.quantity = "monotonicity: C = 2^" + std::to_string(e) + " - 2^" + std::to_string(e - 24) +
                 ", then the larger C = 2^" + std::to_string(e) + ", with " + fmt_f64(cancel) + " and " +
                 std::to_string(m) + " products 2^" + std::to_string(exp_small) + " in the first step";
    f.measured =
        std::string(decreasing ? "not monotone: " : "monotone here: ") + fmt_f32(r.d[0]) + " then " + fmt_f32(r.d[1]);
    f.expected = fmt_f64(exact(cases[0])) + " then " + fmt_f64(exact(cases[1])) + " (exact, increasing)";
    f.detail =
        "raising C by one fp32 ulp moves the alignment point up one binade and the small products fall off: "
        "Fasi et al.'s non-monotonicity of multi-operand adders that align before they normalize.";
    if (!decreasing && double(m) <= std::ldexp(1.0, *frac_bits_ - 23))
        f.detail += " Here the small products together weigh no more than C's step: inconclusive.";
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::model_check(std::vector<Finding>& out) {
    const long s0 = stray_;
    BlockModel m;
    m.block = blocks_.uniform_size > 0 ? blocks_.uniform_size : p_.k_inst;
    m.frac_bits = frac_bits_ ? *frac_bits_ : g_max_;
    m.align = cut_ ? *cut_ : AlignCut::toward_zero;
    m.out = roundings_.empty() ? Rounding::toward_zero : roundings_.front();
    m.c_in_first_block = c_aligned_.value_or(true);
    m.subnormal_in = subnormal_in_;
    m.subnormal_out = subnormal_out_;

    // Random dot products over a wide exponent range, 10% zeros, and now and
    // then an instruction with no products at all: its C (the running sum)
    // still goes through the output rule, which a C of 23 fraction bits or a
    // -0 shows.
    const int elo = p_.type == DType::f16 || p_.type == DType::e5m2 ? -8 : p_.type == DType::e4m3 ? -6 : -16;
    const int ehi = p_.type == DType::f16 || p_.type == DType::e5m2 ? 8 : p_.type == DType::e4m3 ? 8 : 16;
    SplitMix rng(ctx_.seed * 0x1000 + static_cast<std::uint64_t>(p_.id) + 1);
    const auto random_case = [&](int k_total) {
        DotCase dc = empty_case(k_total);
        for (int k0 = 0; k0 < k_total; k0 += p_.k_inst) {
            if (rng.chance(6)) continue;  // an instruction of zero products
            for (int k = k0; k < k0 + p_.k_inst; ++k) {
                if (rng.chance(10)) continue;
                dc.a[k] = random_value(rng, p_.type, elo, ehi);
                dc.b[k] = random_value(rng, b_type(p_), elo, ehi);
            }
        }
        dc.c = rng.chance(10) ? (rng.chance(50) ? -0.0 : 0.0) : random_f32(rng, 2 * elo, 2 * ehi);
        return dc;
    };
    const int n_single = ctx_.quick ? 256 : 2048;
    const int n_chain = ctx_.quick ? 32 : 256;
    std::vector<DotCase> single, chain;
    for (int i = 0; i < n_single; ++i) single.push_back(random_case(p_.k_inst));
    for (int i = 0; i < n_chain; ++i) chain.push_back(random_case(chain_k));
    const Results rs = must_run(single, p_.k_inst);
    const Results rc = must_run(chain, chain_k);

    struct Score {
        int single = 0, chain = 0;
        std::string first;
    };
    const auto score = [&](const auto& predict_fn) {
        Score s;
        for (int i = 0; i < n_single; ++i) {
            const double want = predict_fn(single[i], p_.k_inst);
            if (want == rs.d[i])
                ++s.single;
            else if (s.first.empty())
                s.first = "a single-instruction case: device " + fmt_f32(rs.d[i]) + ", model " + fmt_f32(want) +
                          ", exact " + fmt_f64(predict_exact_rounded(single[i]));
        }
        for (int i = 0; i < n_chain; ++i) s.chain += predict_fn(chain[i], p_.k_inst) == rc.d[i];
        return s;
    };
    // The alignment exponent's rule, and the result's width: fp32's 23
    // fraction bits, or only the bits the sum kept (MMA-Sim's e8m13 output of
    // Hopper's fp8 wgmma, where 13 are kept).
    BlockModel best = m;
    Score best_score;
    bool first_candidate = true;
    std::vector<int> widths{23};
    if (m.frac_bits < 23) widths.push_back(m.frac_bits);
    for (ExpRule rule : {ExpRule::value, ExpRule::factors})
        for (int out_bits : widths) {
            BlockModel v = m;
            v.exp_rule = rule;
            v.out_frac_bits = out_bits;
            const Score s = score([&](const DotCase& dc, int k) { return predict(v, dc, k, p_.type, b_type(p_)); });
            if (first_candidate || s.single + s.chain > best_score.single + best_score.chain) {
                best = v;
                best_score = s;
                first_candidate = false;
            }
        }
    std::string best_text = best.describe();
    std::optional<LoweredModel> best_lowered;
    // mma.sync with fp8 operands, which sm_90 runs as f16 HMMA steps: the
    // lowering's candidates (each step the f16 path's model as measured, 16
    // products aligned by their factors' exponents, 25 bits kept, truncated,
    // with the kept bits and the roundings varied around it).
    if (!p_.wgmma && (p_.type == DType::e4m3 || p_.type == DType::e5m2)) {
        for (int bits : {24, 25, 26})
            for (Rounding step_out : {Rounding::toward_zero, Rounding::nearest_even})
                for (bool first_c : {false, true})
                    for (int order = 0; order < 4; ++order) {
                        LoweredModel lm;
                        lm.split = order < 2 ? StepSplit::contiguous : StepSplit::register_halves;
                        lm.reversed = order % 2 == 1;
                        lm.step.block = 16;
                        lm.step.frac_bits = bits;
                        lm.step.align = AlignCut::toward_zero;
                        lm.step.out = step_out;
                        lm.step.c_in_first_block = true;
                        lm.step.exp_rule = ExpRule::factors;
                        lm.first_c = first_c;
                        const Score s = score([&](const DotCase& dc, int k) { return predict(lm, dc, k); });
                        if (s.single + s.chain > best_score.single + best_score.chain) {
                            best_score = s;
                            best_text = lm.describe();
                            best_lowered = lm;
                        }
                    }
    }
    const Score exact_rn = score([](const DotCase& dc, int) { return predict_exact_rounded(dc); });
    const Score seq = score([](const DotCase& dc, int) { return predict_fp32_sequential(dc); });

    Finding f =
        row("the model assembled from these answers vs " + std::to_string(n_single) + " random " +
            std::to_string(p_.k_inst) + "-term and " + std::to_string(n_chain) + " random 128-term dot products");
    f.measured = std::to_string(best_score.single) + "/" + std::to_string(n_single) + " single, " +
                 std::to_string(best_score.chain) + "/" + std::to_string(n_chain) + " chained bit-identical";
    f.expected = "all bit-identical if the model is complete; exact-then-round-to-nearest matches " +
                 std::to_string(exact_rn.single) + "/" + std::to_string(exact_rn.chain) + ", fp32 FMA in k order " +
                 std::to_string(seq.single) + "/" + std::to_string(seq.chain);
    f.relation = DocRelation::fills_in;
    f.doc_statement = "accumulation order, rounding and subnormal handling are unspecified";
    // The model's parameters as columns (the report reads these, not the words).
    const BlockModel& step = best_lowered ? best_lowered->step : best;
    Finding::Model cols;
    cols.block = step.block;
    cols.frac_bits = step.frac_bits;
    cols.out_frac_bits = step.out_frac_bits;
    cols.align = name(step.align);
    cols.out = name(step.out);
    cols.c_joins = step.c_in_first_block ? "C aligned with the first block" : "C added after the first block";
    cols.exp_rule = step.exp_rule == ExpRule::factors ? "factors" : "value";
    if (best_lowered) {
        const std::string order = best_lowered->describe_split();
        cols.lowering = "f16 HMMA steps of " + std::to_string(best_lowered->k_step) + " products" +
                        (order.empty() ? "" : ", " + order);
        cols.c_joins = best_lowered->first_c ? "C enters the first step"
                                             : "C added last by an fp32 add rounded to nearest";
    }
    cols.single_ok = best_score.single, cols.single_n = n_single;
    cols.chain_ok = best_score.chain, cols.chain_n = n_chain;
    f.model = cols;
    f.detail = "model: " + best_text + ". Inputs: exponents " + std::to_string(elo) + ".." + std::to_string(ehi) +
               ", random significands and signs, 10% zeros, 6% of instructions with no products; C fp32 with "
               "exponents " +
               std::to_string(2 * elo) + ".." + std::to_string(2 * ehi) + " or 10% +-0, seed " +
               std::to_string(ctx_.seed) + "." +
               (best_score.first.empty() ? "" : " First disagreement: " + best_score.first);
    finish(f, s0);
    out.push_back(f);
}

inline void PathProbe::run_all(std::vector<Finding>& out) {
    products_exact(out);
    subnormals(out);
    c_passthrough(out);
    blocks(out);
    alignment(out);
    c_alignment(out);
    inter_block(out);
    output_rounding(out);
    hostile(out);
    monotonicity(out);
    model_check(out);
}

}  // namespace rigel::probes
