// The alignment probe's host logic: expectations for a TMA box and an fp8
// GEMM on the same bytes, the verdict on one swept case, and the minimal rule
// a table of verdicts supports, set beside the documented rule.
#include "probes/alignment/alignment_rules.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/formats.hpp"
#include "core/hash.hpp"

namespace rigel {
namespace {

constexpr std::int64_t kNoBound = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kChunk = 16;  // TMA's swizzle moves 16-byte chunks

std::string with_unit(std::int64_t v, std::string_view unit) {
    return std::to_string(v) + (unit.empty() ? "" : " " + std::string(unit));
}

struct Tally {
    int cases = 0, refused = 0, exact = 0, rearranged = 0, wrong = 0, failed = 0, unchecked = 0;
    std::map<std::string, int> refusals;  // evidence -> count
    void add(const SweptCase& c) {
        ++cases;
        switch (c.outcome) {
            case CaseOutcome::refused:
                ++refused;
                ++refusals[c.evidence];
                break;
            case CaseOutcome::exact: ++exact; break;
            case CaseOutcome::rearranged: ++rearranged; break;
            case CaseOutcome::wrong: ++wrong; break;
            case CaseOutcome::failed: ++failed; break;
            case CaseOutcome::unchecked: ++unchecked; break;
            case CaseOutcome::not_run: break;
        }
    }
    std::string text() const {
        if (cases == 0) return "none swept";
        const int largest = std::max({refused, exact, rearranged, wrong, failed, unchecked});
        std::string out = largest == cases
                              ? (cases == 1 ? std::string("the only case ") : "all " + std::to_string(cases) + " ")
                              : std::to_string(cases) + " cases: ";
        std::string parts;
        auto part = [&](int n, const std::string& what) {
            if (n == 0) return;
            parts += (parts.empty() ? "" : ", ") + (n == cases ? what : std::to_string(n) + " " + what);
        };
        if (refused > 0) {
            std::string why;
            for (const auto& [ev, n] : refusals)
                why += (why.empty() ? "" : "; ") + ev + (n > 1 && refusals.size() > 1 ? " x" + std::to_string(n) : "");
            part(refused, "refused (" + why + ")");
        }
        part(exact, "accepted and exact");
        part(rearranged, "accepted, the right bytes in another arrangement");
        part(wrong, "accepted and WRONG");
        part(failed, "accepted and then failed");
        part(unchecked, "accepted (not run: encode only)");
        return out + parts;
    }
};

}  // namespace

std::string_view name(CaseOutcome o) {
    switch (o) {
        case CaseOutcome::refused: return "refused";
        case CaseOutcome::exact: return "exact";
        case CaseOutcome::rearranged: return "rearranged";
        case CaseOutcome::wrong: return "WRONG";
        case CaseOutcome::failed: return "failed";
        case CaseOutcome::unchecked: return "accepted";
        case CaseOutcome::not_run: return "not run";
    }
    return "?";
}

bool accepted(CaseOutcome o) { return o != CaseOutcome::refused && o != CaseOutcome::not_run; }

bool compared(CaseOutcome o) {
    return o == CaseOutcome::exact || o == CaseOutcome::rearranged || o == CaseOutcome::wrong;
}
namespace {

// " (the sweep places the bound between lo and hi)" when the sweep leaves a
// range, else nothing.
std::string bound_range_text(std::int64_t lo, std::int64_t hi) {
    return hi > lo ? " (the sweep places the bound between " + std::to_string(lo) + " and " + std::to_string(hi) + ")"
                   : "";
}

}  // namespace


DerivedRule derive_rule(RuleForm form, const std::vector<SweptCase>& cases, std::string_view unit) {
    DerivedRule r;
    std::vector<const SweptCase*> active;
    for (const SweptCase& c : cases)
        if (c.outcome != CaseOutcome::not_run) active.push_back(&c);
    if (active.empty()) {
        r.text = "nothing ran";
        return r;
    }
    std::int64_t min_acc = kNoBound, max_acc = std::numeric_limits<std::int64_t>::min();
    std::int64_t min_ref = kNoBound, max_ref = std::numeric_limits<std::int64_t>::min();
    for (const SweptCase* c : active) {
        if (accepted(c->outcome)) {
            r.any_accepted = true;
            min_acc = std::min(min_acc, c->value);
            max_acc = std::max(max_acc, c->value);
        } else {
            r.any_refused = true;
            min_ref = std::min(min_ref, c->value);
            max_ref = std::max(max_ref, c->value);
        }
    }
    switch (form) {
        case RuleForm::multiple_of: {
            for (int p = 0; p <= 62; ++p) {
                const std::int64_t g = std::int64_t{1} << p;
                bool fits = true;
                for (const SweptCase* c : active)
                    if (accepted(c->outcome) != (c->value % g == 0)) {
                        fits = false;
                        break;
                    }
                if (!fits) continue;
                if (r.lo == 0) r.lo = g;
                r.hi = g;
            }
            r.consistent = r.lo != 0;
            if (!r.any_refused)
                r.text = "no alignment rule: every swept value accepted";
            else if (!r.any_accepted)
                r.text = "every swept value refused";
            else if (!r.consistent)
                r.text = "no power-of-two alignment separates the accepted values from the refused ones";
            else
                r.text =
                    "multiple of " + with_unit(r.lo, unit) +
                    (r.hi > r.lo ? " (the sweep cannot tell it from a multiple of up to " + std::to_string(r.hi) + ")"
                                 : "");
            return r;
        }
        case RuleForm::at_most: {
            if (!r.any_refused) {
                r.consistent = true;
                r.lo = max_acc;
                r.hi = kNoBound;
                r.text = "no bound: every swept value accepted, up to " + with_unit(max_acc, unit);
            } else if (!r.any_accepted) {
                r.text = "every swept value refused";
            } else if (max_acc < min_ref) {
                r.consistent = true;
                r.lo = max_acc;
                r.hi = min_ref - 1;
                r.text = "at most " + with_unit(r.lo, unit) + bound_range_text(r.lo, r.hi);
            } else {
                r.text = "no upper bound separates the accepted values from the refused ones";
            }
            return r;
        }
        case RuleForm::at_least: {
            if (!r.any_refused) {
                r.consistent = true;
                r.lo = std::numeric_limits<std::int64_t>::min();
                r.hi = min_acc;
                r.text = "no bound: every swept value accepted, down to " + with_unit(min_acc, unit);
            } else if (!r.any_accepted) {
                r.text = "every swept value refused";
            } else if (max_ref < min_acc) {
                r.consistent = true;
                r.lo = max_ref + 1;
                r.hi = min_acc;
                r.text = "at least " + with_unit(r.hi, unit) + bound_range_text(r.lo, r.hi);
            } else {
                r.text = "no lower bound separates the accepted values from the refused ones";
            }
            return r;
        }
        case RuleForm::listed: {
            r.consistent = true;
            std::string acc, ref;
            for (const SweptCase* c : active) {
                std::string& list = accepted(c->outcome) ? acc : ref;
                list += (list.empty() ? "" : ", ") + c->label;
            }
            r.text = "accepted: " + (acc.empty() ? std::string("none") : acc) +
                     "; refused: " + (ref.empty() ? std::string("none") : ref);
            return r;
        }
    }
    return r;
}

std::string sweep_text(const std::vector<SweptCase>& cases) {
    std::string out;
    const SweptCase* previous = nullptr;
    for (const SweptCase& c : cases) {
        const bool repeated = previous && previous->outcome == c.outcome && previous->evidence == c.evidence;
        const std::string why = c.evidence.empty() ? "" : repeated ? " (as above)" : " (" + c.evidence + ")";
        out += (out.empty() ? "" : "; ") + c.label + ": " + std::string(name(c.outcome)) + why;
        previous = &c;
    }
    return out;
}

// The fields every rule's finding takes from its spec.
Finding rule_finding(const std::string& probe, const RuleSpec& spec) {
    Finding f;
    f.probe = probe;
    f.path = spec.path;
    f.dtype = spec.dtype;
    f.quantity = spec.quantity;
    f.doc_statement = spec.doc_statement;
    f.doc_source = spec.doc_source;
    return f;
}

Finding judge_rule(const std::string& probe, const RuleSpec& spec, const std::vector<SweptCase>& cases) {
    Finding f = rule_finding(probe, spec);
    const std::string sweep = "Sweep: " + sweep_text(cases);
    f.detail = spec.note.empty() ? sweep : spec.note + " " + sweep;

    Tally legal, illegal;
    int not_run = 0;
    bool any_compared = false;
    for (const SweptCase& c : cases) {
        if (c.outcome == CaseOutcome::not_run) {
            ++not_run;
            continue;
        }
        any_compared = any_compared || compared(c.outcome);
        (c.doc_legal || spec.documented.empty() ? legal : illegal).add(c);
    }
    if (legal.cases + illegal.cases == 0) {
        f.measured = "not available";
        f.relation = DocRelation::not_available;
        const std::string why = cases.empty() ? "no case swept" : cases.front().evidence;
        f.detail = (spec.note.empty() ? "" : spec.note + " ") + "Not run: " + why;
        return f;
    }
    const DerivedRule derived = derive_rule(spec.form, cases, spec.unit);
    f.verified = any_compared;
    if (spec.documented.empty()) {
        f.measured = derived.text + "; " + legal.text();
        f.relation = DocRelation::fills_in;
    } else {
        f.measured = derived.text + "; violations of the documented rule: " + illegal.text() +
                     "; documented-legal: " + legal.text();
        f.expected = spec.documented + (illegal.cases > 0 ? "; every violation refused" : "");
        if (legal.refused + legal.wrong + legal.failed + illegal.wrong + illegal.failed > 0)
            f.relation = DocRelation::contradicts;
        else if (illegal.exact + illegal.rearranged + illegal.unchecked > 0)
            f.relation = DocRelation::fills_in;
        else
            f.relation = DocRelation::confirms;
    }
    if (not_run > 0) f.measured += " (" + std::to_string(not_run) + " cases not run)";
    return f;
}

std::uint32_t pointer_alignment(std::int64_t offset) {
    if (offset % 256 == 0) return 256;
    return static_cast<std::uint32_t>(offset & -offset);
}

// ---------------------------------------------------------------------------
// TMA.

std::uint64_t tma_box_extent(const TmaGeometry& g, int d) {
    const std::uint32_t box = g.box[static_cast<std::size_t>(d)];
    const std::uint32_t step = g.elem_strides[static_cast<std::size_t>(d)];
    if ((d == 0 && g.interleave_bytes == 0) || step == 0) return box;
    return (box + step - 1) / step;
}

std::uint64_t tma_row_bytes(const TmaGeometry& g) {
    return tma_box_extent(g, 0) * static_cast<std::uint64_t>(g.elem_bytes);
}

std::uint64_t tma_box_rows(const TmaGeometry& g) {
    std::uint64_t rows = 1;
    for (int d = 1; d < g.rank; ++d) rows *= tma_box_extent(g, d);
    return rows;
}

std::uint64_t tma_box_bytes(const TmaGeometry& g) { return tma_row_bytes(g) * tma_box_rows(g); }

std::uint64_t tma_allocation_extent(const TmaGeometry& g) {
    std::uint64_t end =
        static_cast<std::uint64_t>(g.base_offset) + g.dims[0] * static_cast<std::uint64_t>(g.elem_bytes);
    if (g.rank >= 2) end += (g.dims[1] - 1) * g.strides[0];
    if (g.rank >= 3) end += (g.dims[2] - 1) * g.strides[1];
    return end;
}

std::size_t swizzle_offset(std::size_t logical, int swizzle_bytes) {
    int bits = 0;
    if (swizzle_bytes == 32)
        bits = 1;
    else if (swizzle_bytes == 64)
        bits = 2;
    else if (swizzle_bytes == 128)
        bits = 3;
    if (bits == 0) return logical;
    const std::size_t mask = (std::size_t{1} << bits) - 1;
    return logical ^ (((logical >> 7) & mask) << 4);
}

std::string_view name(TmaSmemModel m) {
    return m == TmaSmemModel::packed_rows ? "rows packed at the inner box bytes" : "one row per swizzle span";
}

namespace {

std::size_t row_pitch(const TmaGeometry& g, TmaSmemModel m) {
    const std::size_t row = tma_row_bytes(g);
    if (m == TmaSmemModel::span_rows && g.swizzle_bytes > 0)
        return std::max(row, static_cast<std::size_t>(g.swizzle_bytes));
    return row;
}

}  // namespace

std::size_t tma_image_bytes(const TmaGeometry& g, TmaSmemModel m) { return row_pitch(g, m) * tma_box_rows(g); }

std::size_t tma_dump_bytes(const TmaGeometry& g) {
    // The swizzle permutes 16-byte chunks inside 128-byte blocks, so a box
    // stays inside its image rounded up to 128 bytes; 1 KB of guard after it.
    constexpr std::size_t kGuard = 1024;
    const std::size_t image =
        std::max(tma_image_bytes(g, TmaSmemModel::packed_rows), tma_image_bytes(g, TmaSmemModel::span_rows));
    return (image + 127) / 128 * 128 + kGuard;
}

TmaImage tma_expected_image(const TmaGeometry& g, std::span<const std::uint8_t> allocation, TmaSmemModel m,
                            std::size_t dump_bytes, std::uint8_t poison) {
    TmaImage img;
    img.bytes.assign(dump_bytes, poison);
    img.kind.assign(dump_bytes, ByteKind::untouched);
    const std::size_t pitch = row_pitch(g, m);
    const std::size_t row_bytes = tma_row_bytes(g);
    const std::uint64_t rows = tma_box_rows(g);
    const std::uint64_t n1 = g.rank >= 2 ? tma_box_extent(g, 1) : 1;
    const std::int64_t step0 = g.interleave_bytes == 0 ? 1 : std::max<std::uint32_t>(g.elem_strides[0], 1);
    const std::int64_t eb = g.elem_bytes;
    for (std::uint64_t r = 0; r < rows; ++r) {
        const std::int64_t i1 = static_cast<std::int64_t>(r % n1), i2 = static_cast<std::int64_t>(r / n1);
        const std::int64_t c1 = g.coords[1] + i1 * std::max<std::uint32_t>(g.elem_strides[1], 1);
        const std::int64_t c2 = g.rank >= 3 ? g.coords[2] + i2 * std::max<std::uint32_t>(g.elem_strides[2], 1) : 0;
        const bool row_in = c1 >= 0 && c1 < static_cast<std::int64_t>(g.dims[1]) &&
                            (g.rank < 3 || (c2 >= 0 && c2 < static_cast<std::int64_t>(g.dims[2])));
        for (std::size_t b = 0; b < row_bytes; ++b) {
            const std::int64_t c0 = g.coords[0] + static_cast<std::int64_t>(b) / eb * step0;
            const bool in = row_in && c0 >= 0 && c0 < static_cast<std::int64_t>(g.dims[0]);
            const std::size_t at = swizzle_offset(r * pitch + b, g.swizzle_bytes);
            if (at >= dump_bytes) throw std::logic_error("tma_expected_image: the dump is smaller than the box");
            if (!in) {
                img.bytes[at] = 0;
                img.kind[at] = ByteKind::fill;
                continue;
            }
            const std::uint64_t src = static_cast<std::uint64_t>(g.base_offset) + static_cast<std::uint64_t>(c0 * eb) +
                                      static_cast<std::uint64_t>(c1) * g.strides[0] +
                                      static_cast<std::uint64_t>(c2) * g.strides[1] + b % static_cast<std::size_t>(eb);
            if (src >= allocation.size()) throw std::logic_error("tma_expected_image: element outside the allocation");
            img.bytes[at] = allocation[src];
            img.kind[at] = ByteKind::data;
        }
    }
    return img;
}

ImageDiff diff_image(const TmaImage& expected, std::span<const std::uint8_t> got) {
    if (got.size() != expected.bytes.size()) throw std::logic_error("diff_image: sizes differ");
    ImageDiff d;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const bool bad = got[i] != expected.bytes[i];
        switch (expected.kind[i]) {
            case ByteKind::data:
                ++d.data;
                d.data_wrong += bad;
                break;
            case ByteKind::fill:
                ++d.fill;
                d.fill_wrong += bad;
                break;
            case ByteKind::untouched:
                ++d.untouched;
                d.untouched_wrong += bad;
                break;
        }
    }
    return d;
}

bool same_chunks(const TmaImage& expected, std::span<const std::uint8_t> got, std::uint8_t poison) {
    using Chunk = std::array<std::uint8_t, kChunk>;
    std::map<Chunk, int> balance;  // chunks written minus chunks expected
    for (std::size_t at = 0; at + kChunk <= got.size(); at += kChunk) {
        bool written = false;
        for (std::size_t i = at; i < at + kChunk; ++i) written = written || got[i] != poison;
        if (!written) continue;
        Chunk c{};
        std::memcpy(c.data(), got.data() + at, kChunk);
        ++balance[c];
    }
    bool any = false;
    for (std::size_t at = 0; at + kChunk <= expected.bytes.size(); at += kChunk) {
        bool written = false;
        for (std::size_t i = at; i < at + kChunk; ++i) written = written || expected.kind[i] != ByteKind::untouched;
        if (!written) continue;
        any = true;
        Chunk c{};
        std::memcpy(c.data(), expected.bytes.data() + at, kChunk);
        --balance[c];
    }
    if (!any) return false;
    for (const auto& [chunk, n] : balance)
        if (n != 0) return false;
    return true;
}

TmaLoadVerdict judge_tma_load(const TmaGeometry& g, std::span<const std::uint8_t> allocation,
                              std::span<const std::uint8_t> got, std::uint8_t poison) {
    TmaLoadVerdict v;
    const bool narrow = g.swizzle_bytes > 0 && tma_row_bytes(g) < static_cast<std::uint64_t>(g.swizzle_bytes);
    const TmaImage packed = tma_expected_image(g, allocation, TmaSmemModel::packed_rows, got.size(), poison);
    v.diff = diff_image(packed, got);
    auto bytes_text = [](const ImageDiff& d) {
        return std::to_string(d.data) + " data and " + std::to_string(d.fill) + " zero-fill bytes as expected";
    };
    if (v.diff.exact()) {
        v.outcome = CaseOutcome::exact;
        v.model = TmaSmemModel::packed_rows;
        v.evidence = bytes_text(v.diff) + (narrow ? ", " + std::string(name(*v.model)) : "");
        return v;
    }
    if (narrow && tma_image_bytes(g, TmaSmemModel::span_rows) <= got.size()) {
        const TmaImage spans = tma_expected_image(g, allocation, TmaSmemModel::span_rows, got.size(), poison);
        const ImageDiff d = diff_image(spans, got);
        if (d.exact()) {
            v.outcome = CaseOutcome::exact;
            v.model = TmaSmemModel::span_rows;
            v.diff = d;
            v.evidence = bytes_text(d) + ", " + std::string(name(*v.model));
            return v;
        }
    }
    if (same_chunks(packed, got, poison)) {
        v.outcome = CaseOutcome::rearranged;
        v.evidence = "every expected 16-byte chunk arrived, not where rigel's swizzle model puts it";
        return v;
    }
    v.outcome = CaseOutcome::wrong;
    v.evidence = std::to_string(v.diff.data_wrong) + " of " + std::to_string(v.diff.data) + " data bytes, " +
                 std::to_string(v.diff.fill_wrong) + " of " + std::to_string(v.diff.fill) + " zero-fill bytes and " +
                 std::to_string(v.diff.untouched_wrong) + " bytes outside the box differ from the host copy";
    return v;
}

std::vector<std::uint8_t> nonzero_pattern(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(1 + mix64(seed + i) % 255);
    return out;
}

// ---------------------------------------------------------------------------
// cuBLASLt fp8 GEMM.

int lt_out_bytes(DType t) {
    if (t != DType::f32 && t != DType::bf16)
        throw std::invalid_argument("alignment: cuBLASLt's D is f32 or bf16 here, not " + std::string(name(t)));
    return static_cast<int>(storage_bytes(t, 1));
}

std::int64_t lt_a_rows(const LtGemmCase& c) { return c.a_transposed ? c.k : c.m; }
std::int64_t lt_a_cols(const LtGemmCase& c) { return c.a_transposed ? c.m : c.k; }
std::int64_t lt_b_rows(const LtGemmCase& c) { return c.b_transposed ? c.n : c.k; }
std::int64_t lt_b_cols(const LtGemmCase& c) { return c.b_transposed ? c.k : c.n; }

namespace {
constexpr std::size_t kGuardBytes = 256;
}

std::size_t lt_a_allocation(const LtGemmCase& c) {
    return static_cast<std::size_t>(c.a_offset + c.lda * lt_a_cols(c)) + kGuardBytes;
}
std::size_t lt_b_allocation(const LtGemmCase& c) {
    return static_cast<std::size_t>(c.b_offset + c.ldb * lt_b_cols(c)) + kGuardBytes;
}
std::size_t lt_d_allocation(const LtGemmCase& c) {
    return static_cast<std::size_t>(c.d_offset + c.ldd * c.n * lt_out_bytes(c.out)) + kGuardBytes;
}

LtOperands make_lt_operands(const LtGemmCase& c, std::uint64_t seed) {
    // e4m3 codes of -2, -1, 0, 1, 2: sums of K <= 64 products stay integers
    // of magnitude <= 256, exact in fp32 and in bf16 (8 significant bits).
    constexpr std::uint8_t kCodes[] = {0xC0, 0xB8, 0x00, 0x38, 0x40};
    LtOperands ops;
    ops.a.resize(lt_a_allocation(c));
    ops.b.resize(lt_b_allocation(c));
    for (std::size_t i = 0; i < ops.a.size(); ++i) ops.a[i] = kCodes[mix64(seed ^ (0xA000000000ull + i)) % 5];
    for (std::size_t i = 0; i < ops.b.size(); ++i) ops.b[i] = kCodes[mix64(seed ^ (0xB000000000ull + i)) % 5];
    return ops;
}

std::vector<double> lt_reference(const LtGemmCase& c, const LtOperands& ops) {
    std::vector<double> d(static_cast<std::size_t>(c.m) * static_cast<std::size_t>(c.n));
    for (int j = 0; j < c.n; ++j)
        for (int i = 0; i < c.m; ++i) {
            double s = 0;
            for (int kk = 0; kk < c.k; ++kk) {
                const std::int64_t ai = c.a_transposed ? kk + i * c.lda : i + kk * c.lda;
                const std::int64_t bi = c.b_transposed ? j + kk * c.ldb : kk + j * c.ldb;
                s += static_cast<double>(e4m3_to_f32(ops.a.at(static_cast<std::size_t>(c.a_offset + ai)))) *
                     static_cast<double>(e4m3_to_f32(ops.b.at(static_cast<std::size_t>(c.b_offset + bi))));
            }
            d[static_cast<std::size_t>(i + j * c.m)] = s;
        }
    return d;
}

std::vector<std::uint8_t> lt_expected_d(const LtGemmCase& c, const std::vector<double>& reference,
                                        std::uint8_t poison) {
    std::vector<std::uint8_t> img(lt_d_allocation(c), poison);
    const int eb = lt_out_bytes(c.out);
    for (int j = 0; j < c.n; ++j)
        for (int i = 0; i < c.m; ++i) {
            const double v = reference[static_cast<std::size_t>(i + j * c.m)];
            const float f = static_cast<float>(v);
            if (static_cast<double>(f) != v)
                throw std::logic_error("lt_expected_d: the reference is not exact in fp32");
            const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
            const std::size_t at = static_cast<std::size_t>(c.d_offset + (i + j * c.ldd) * eb);
            if (c.out == DType::f32) {
                std::memcpy(img.data() + at, &bits, 4);
            } else {
                if ((bits & 0xFFFFu) != 0) throw std::logic_error("lt_expected_d: the reference is not exact in bf16");
                const std::uint16_t hi = static_cast<std::uint16_t>(bits >> 16);
                std::memcpy(img.data() + at, &hi, 2);
            }
        }
    return img;
}

LtOutputVerdict judge_lt_output(const LtGemmCase& c, std::span<const std::uint8_t> expected,
                                std::span<const std::uint8_t> got) {
    if (expected.size() != got.size()) throw std::logic_error("judge_lt_output: sizes differ");
    const int eb = lt_out_bytes(c.out);
    std::vector<bool> output_byte(got.size(), false);
    std::size_t wrong = 0;
    std::string first;
    auto value_at = [&](std::span<const std::uint8_t> img, std::size_t at) {
        if (c.out == DType::f32) {
            std::uint32_t u = 0;
            std::memcpy(&u, img.data() + at, 4);
            return static_cast<double>(std::bit_cast<float>(u));
        }
        std::uint16_t u = 0;
        std::memcpy(&u, img.data() + at, 2);
        return static_cast<double>(bf16_to_f32(u));
    };
    for (int j = 0; j < c.n; ++j)
        for (int i = 0; i < c.m; ++i) {
            const std::size_t at = static_cast<std::size_t>(c.d_offset + (i + j * c.ldd) * eb);
            bool bad = false;
            for (int b = 0; b < eb; ++b) {
                output_byte[at + static_cast<std::size_t>(b)] = true;
                bad = bad || got[at + static_cast<std::size_t>(b)] != expected[at + static_cast<std::size_t>(b)];
            }
            if (!bad) continue;
            if (wrong++ == 0) {
                char buf[160];
                std::snprintf(buf, sizeof buf, "first: D(%d,%d) = %.9g, float64 reference %.17g", i, j,
                              value_at(got, at), value_at(expected, at));
                first = buf;
            }
        }
    std::size_t outside = 0;
    for (std::size_t i = 0; i < got.size(); ++i) outside += !output_byte[i] && got[i] != expected[i];
    const std::size_t outputs = static_cast<std::size_t>(c.m) * static_cast<std::size_t>(c.n);
    LtOutputVerdict v;
    if (wrong == 0 && outside == 0) {
        v.outcome = CaseOutcome::exact;
        v.evidence = std::to_string(outputs) + " outputs equal the float64 reference";
        return v;
    }
    v.outcome = CaseOutcome::wrong;
    v.evidence = std::to_string(wrong) + " of " + std::to_string(outputs) +
                 " outputs differ from the float64 reference" + (first.empty() ? "" : " (" + first + ")") + ", " +
                 std::to_string(outside) + " bytes outside D's outputs written";
    return v;
}

// ---------------------------------------------------------------------------
// rigel's Hopper rungs.

Finding judge_checks(const std::string& probe, const RuleSpec& spec, const std::vector<CheckCase>& cases) {
    Finding f = rule_finding(probe, spec);
    f.expected = spec.documented;
    int refused_named = 0, refused_unnamed = 0, illegal_accepted = 0, legal_accepted = 0, legal_refused = 0;
    std::string sweep, bad;
    for (const CheckCase& c : cases) {
        const bool refused = !c.message.empty();
        const bool named = refused && c.message.find(c.rule_phrase) != std::string::npos;
        std::string verdict;
        if (c.should_refuse && named) {
            ++refused_named;
            verdict = "refused, naming the rule";
        } else if (c.should_refuse && refused) {
            ++refused_unnamed;
            verdict = "refused WITHOUT naming the rule";
        } else if (c.should_refuse) {
            ++illegal_accepted;
            verdict = "ACCEPTED although illegal";
        } else if (refused) {
            ++legal_refused;
            verdict = "REFUSED although legal";
        } else {
            ++legal_accepted;
            verdict = "accepted";
        }
        const std::string line = c.label + ": " + verdict + (refused ? " ('" + c.message + "')" : "");
        sweep += (sweep.empty() ? "" : "; ") + line;
        const bool ok = c.should_refuse ? named : !refused;
        if (!ok) bad += (bad.empty() ? "" : "; ") + line;
    }
    const int illegal = refused_named + refused_unnamed + illegal_accepted;
    const int legal = legal_accepted + legal_refused;
    f.verified = !cases.empty();
    if (cases.empty()) {
        f.measured = "not available";
        f.relation = DocRelation::not_available;
        f.detail = spec.note.empty() ? "no case" : spec.note;
        return f;
    }
    f.measured = std::to_string(refused_named) + " of " + std::to_string(illegal) +
                 " illegal cases refused naming the rule; " + std::to_string(legal_accepted) + " of " +
                 std::to_string(legal) + " legal cases accepted";
    f.relation = bad.empty() ? DocRelation::confirms : DocRelation::contradicts;
    f.detail = (spec.note.empty() ? "" : spec.note + " ") + (bad.empty() ? "" : "Off the rule: " + bad + ". ") +
               "Cases: " + sweep;
    return f;
}

std::string k_rule_phrase(int elem_bytes) {
    if (elem_bytes <= 0 || 16 % elem_bytes != 0) return "K must be a multiple of ?";
    return "K must be a multiple of " + std::to_string(16 / elem_bytes);
}

bool names_k_rule(std::string_view message, int elem_bytes) {
    if (elem_bytes <= 0 || 16 % elem_bytes != 0) return false;
    return message.find(k_rule_phrase(elem_bytes)) != std::string_view::npos &&
           message.find("16-byte") != std::string_view::npos;
}

}  // namespace rigel
