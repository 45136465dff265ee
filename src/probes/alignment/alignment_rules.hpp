// The host half of the alignment probe: which base offsets, strides, box
// sizes, leading dimensions and shapes TMA tensor maps, cuBLASLt's fp8 GEMM
// and rigel's own Hopper rungs take, and what happens when a rule is broken
// (refused with an error, or accepted and silently wrong). The device half
// (src/cuda/probes/alignment_rules.cu) only encodes maps, issues TMA loads and
// calls cuBLASLt; here live what a swept case should produce (the bytes of a
// box in shared memory, the float64 GEMM of the same bytes), the verdict on
// one case, and the minimal rule derived from a table of (case, outcome) set
// beside the documented one.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "probes/probe.hpp"

namespace rigel {

// ---------------------------------------------------------------------------
// Cases, outcomes and rules.

enum class CaseOutcome : std::uint8_t {
    refused,     // the API said no up front: encode error, no algorithm, an error status, a check's refusal
    exact,       // accepted, ran, and the output equals the expectation on the same bytes, byte for byte
    rearranged,  // (TMA) accepted and ran; every expected 16-byte chunk arrived, but not where rigel's layout
                 // model puts it
    wrong,       // accepted, ran, and the output differs from the expectation: a silent wrong result
    failed,      // accepted, then failed while running (a fault, an error after launch, a load that never landed)
    unchecked,   // accepted; nothing was run to check it (an encode-only case)
    not_run,     // not attempted (device without the feature, or an earlier case lost the context)
};
std::string_view name(CaseOutcome o);
// Whether the API took the case (everything but refused and not_run).
bool accepted(CaseOutcome o);
// Whether the device's output was compared with the expectation.
bool compared(CaseOutcome o);

struct SweptCase {
    std::string label;       // "bf16 base +8 B"
    std::int64_t value = 0;  // the swept quantity, in the rule's unit
    bool doc_legal = true;   // the documentation's rule allows it
    CaseOutcome outcome = CaseOutcome::not_run;
    std::string evidence;  // "cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE (1)", "4096 bytes exact", ...
};

// The shape of a rule: accepted iff value % g == 0; iff value <= T; iff
// value >= T; or an explicit list (categorical values).
enum class RuleForm : std::uint8_t { multiple_of, at_most, at_least, listed };

struct DerivedRule {
    bool consistent = false;  // one rule of the form separates every accepted case from every refused one
    bool any_accepted = false;
    bool any_refused = false;
    // multiple_of: the moduli (powers of two) consistent with the table are lo..hi;
    // at_most / at_least: the bound lies in [lo, hi] (hi = INT64_MAX: no refusal seen).
    std::int64_t lo = 0, hi = 0;
    std::string text;  // "multiple of 16 bytes", "at most 128 bytes", ...
};

// The weakest rule of `form` that explains which cases were accepted (cases
// not run are ignored).
DerivedRule derive_rule(RuleForm form, const std::vector<SweptCase>& cases, std::string_view unit);

struct RuleSpec {
    std::string path;      // "cuTensorMapEncodeTiled + cp.async.bulk.tensor.2d"
    std::string dtype;     // "bf16, u8 (fp8)"
    std::string quantity;  // "global base address alignment"
    std::string unit;      // "bytes"
    RuleForm form = RuleForm::multiple_of;
    std::string documented;  // the documented rule in words; empty when the documentation is silent
    std::string doc_statement;
    std::string doc_source;
    std::string note;  // prefixed to the detail
};

// One finding per rule: the derived rule, how violations were answered (each
// refusal's evidence counted), how the documented-legal cases came out, and
// the raw sweep in the detail. Relation: not_available when nothing ran;
// contradicts when a documented-legal case was refused or wrong, or a
// violation was accepted and then wrong or failed; fills_in when the
// documentation is silent, or a violation was accepted and came out exact
// (the device is more lenient than the documentation); else confirms.
Finding judge_rule(const std::string& probe, const RuleSpec& spec, const std::vector<SweptCase>& cases);

// "label: outcome (evidence); ..." for a detail field.
std::string sweep_text(const std::vector<SweptCase>& cases);

// The largest power of two (at most 256) dividing a pointer `offset` bytes
// past a 256-byte-aligned allocation: the alignment the pointer really has.
std::uint32_t pointer_alignment(std::int64_t offset);

// ---------------------------------------------------------------------------
// TMA: a tiled tensor map of rank 2 or 3 and the box one load delivers.

struct TmaGeometry {
    int elem_bytes = 2;
    int rank = 2;                                        // 2 or 3
    std::array<std::uint64_t, 3> dims{1, 1, 1};          // elements, innermost first
    std::array<std::uint64_t, 2> strides{0, 0};          // bytes between consecutive indices of dims 1 and 2
    std::array<std::uint32_t, 3> box{1, 1, 1};           // elements per dimension
    std::array<std::uint32_t, 3> elem_strides{1, 1, 1};  // traversal step per dimension
    int interleave_bytes = 0;                            // 0 (none), 16 or 32
    int swizzle_bytes = 0;                               // 0 (none), 32, 64 or 128
    std::int64_t base_offset = 0;                        // bytes past a 256-byte-aligned allocation
    std::array<std::int32_t, 3> coords{0, 0, 0};         // the box's first element, innermost first
};

// Elements the load traverses along dimension d: ceil(box / elementStride)
// (the first dimension's stride is ignored without interleave, per cuda.h).
std::uint64_t tma_box_extent(const TmaGeometry& g, int d);
std::uint64_t tma_row_bytes(const TmaGeometry& g);  // the box's inner dimension in bytes
std::uint64_t tma_box_rows(const TmaGeometry& g);   // rows of the box (all outer dimensions)
std::uint64_t tma_box_bytes(const TmaGeometry& g);  // what the mbarrier's complete_tx counts
// Bytes from the allocation's start to one past the tensor's last element.
std::uint64_t tma_allocation_extent(const TmaGeometry& g);

// The swizzle of a byte offset inside a 1024-byte-aligned tile: 16-byte chunk
// bits [4, 4+b) XOR row bits [7, 7+b), b = log2(span / 16) (PTX ISA "Tensor
// Swizzling Modes"; CUTLASS writes them Swizzle<1,4,3>, <2,4,3>, <3,4,3>).
std::size_t swizzle_offset(std::size_t logical, int swizzle_bytes);

// Where the box's rows sit in shared memory: packed one after another
// (pitch = inner box bytes) or one per swizzle span (pitch = max(inner, span)).
// The two agree whenever the inner box bytes equal the span or no swizzle is
// set; they differ only for boxes narrower than the span.
enum class TmaSmemModel : std::uint8_t { packed_rows, span_rows };
std::string_view name(TmaSmemModel m);
std::size_t tma_image_bytes(const TmaGeometry& g, TmaSmemModel m);
// The shared-memory bytes a load's check reads back: either model's image,
// and a guard after it that the load must leave untouched.
std::size_t tma_dump_bytes(const TmaGeometry& g);

enum class ByteKind : std::uint8_t { untouched, data, fill };
struct TmaImage {
    std::vector<std::uint8_t> bytes;  // what shared memory should hold (untouched bytes keep the poison)
    std::vector<ByteKind> kind;
};
// The expected shared-memory image (dump_bytes long, from the tile's start)
// of one load from `allocation` (the whole allocation, the tensor starting at
// g.base_offset): in-bounds elements copied, out-of-bounds ones zero.
TmaImage tma_expected_image(const TmaGeometry& g, std::span<const std::uint8_t> allocation, TmaSmemModel m,
                            std::size_t dump_bytes, std::uint8_t poison);

struct ImageDiff {
    std::size_t data = 0, data_wrong = 0;            // in-bounds element bytes
    std::size_t fill = 0, fill_wrong = 0;            // out-of-bounds bytes (zero expected)
    std::size_t untouched = 0, untouched_wrong = 0;  // bytes the load must not write
    bool exact() const { return data_wrong == 0 && fill_wrong == 0 && untouched_wrong == 0; }
};
ImageDiff diff_image(const TmaImage& expected, std::span<const std::uint8_t> got);
// Whether the 16-byte chunks of `got` that the load wrote (any byte off the
// poison) are, as a multiset, exactly the chunks of expected data and fill:
// the right bytes arrived, nothing else was written, wherever they were put.
bool same_chunks(const TmaImage& expected, std::span<const std::uint8_t> got, std::uint8_t poison);

struct TmaLoadVerdict {
    CaseOutcome outcome = CaseOutcome::wrong;
    std::optional<TmaSmemModel> model;  // the layout that matched, when exact
    ImageDiff diff;                     // against the matching model (else the packed one)
    std::string evidence;
};
TmaLoadVerdict judge_tma_load(const TmaGeometry& g, std::span<const std::uint8_t> allocation,
                              std::span<const std::uint8_t> got, std::uint8_t poison);

// Nonzero pseudo-random bytes (so that TMA's zero fill cannot pass for data).
std::vector<std::uint8_t> nonzero_pattern(std::size_t n, std::uint64_t seed);

// ---------------------------------------------------------------------------
// cuBLASLt fp8 GEMM: D (M x N) = op(A) op(B), column-major, e4m3 operands.

// D is f32 or bf16 here: bytes of one element; any other DType throws
// std::invalid_argument.
int lt_out_bytes(DType t);

struct LtGemmCase {
    std::string label;
    std::int64_t value = 0;
    bool doc_legal = true;
    bool a_transposed = true;   // op(A) = A^T: A is stored K x M (the "T" of "TN")
    bool b_transposed = false;  // op(B) = B: B is stored K x N (the "N" of "TN")
    int m = 32, n = 32, k = 64;
    std::int64_t lda = 64, ldb = 64, ldd = 32;
    int a_offset = 0, b_offset = 0, d_offset = 0;  // bytes past 256-byte-aligned allocations
    DType out = DType::f32;  // f32 or bf16
    bool honest_alignment = true;  // the heuristic is told each pointer's real alignment (else its default, 256)
};
std::int64_t lt_a_rows(const LtGemmCase& c);
std::int64_t lt_a_cols(const LtGemmCase& c);
std::int64_t lt_b_rows(const LtGemmCase& c);
std::int64_t lt_b_cols(const LtGemmCase& c);
std::size_t lt_a_allocation(const LtGemmCase& c);
std::size_t lt_b_allocation(const LtGemmCase& c);
std::size_t lt_d_allocation(const LtGemmCase& c);

struct LtOperands {
    std::vector<std::uint8_t> a, b;  // whole allocations, e4m3 codes of -2, -1, 0, 1, 2 everywhere (padding too)
};
LtOperands make_lt_operands(const LtGemmCase& c, std::uint64_t seed);
// The float64 product of the same bytes, column-major M x N (index i + j*M).
std::vector<double> lt_reference(const LtGemmCase& c, const LtOperands& ops);
// The expected D allocation: the poison everywhere but the M x N outputs,
// which hold the reference (exact: small-integer sums) in the output type.
std::vector<std::uint8_t> lt_expected_d(const LtGemmCase& c, const std::vector<double>& reference, std::uint8_t poison);
struct LtOutputVerdict {
    CaseOutcome outcome = CaseOutcome::wrong;
    std::string evidence;
};
LtOutputVerdict judge_lt_output(const LtGemmCase& c, std::span<const std::uint8_t> expected,
                                std::span<const std::uint8_t> got);

// ---------------------------------------------------------------------------
// rigel's own shape and pointer checks (the Hopper rungs' CheckFn and their
// launchers' pointer check): each case is a problem put to a check, what the
// check should do, and what a refusal must say to name the rule.

struct CheckCase {
    std::string label;  // "k30_wgmma_tma bf16 17x33x100"
    bool should_refuse = false;
    std::string rule_phrase;  // a refusal must contain it ("K must be a multiple of 8")
    std::string message;      // the check's answer; empty = accepted
};
// One finding: confirms when every illegal case is refused with a message
// naming the rule and every legal one accepted; contradicts otherwise.
Finding judge_checks(const std::string& probe, const RuleSpec& spec, const std::vector<CheckCase>& cases);

// What hopper_tma_check's refusal must say for operands of `elem_bytes`
// ("K must be a multiple of 8" for 2 bytes, "of 16" for 1 byte), and whether
// a message says it together with the 16-byte row stride it comes from.
std::string k_rule_phrase(int elem_bytes);
bool names_k_rule(std::string_view message, int elem_bytes);

}  // namespace rigel
