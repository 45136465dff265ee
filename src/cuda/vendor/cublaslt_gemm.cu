// cuBLASLt as the baseline of rigel's GEMM library (issue 10, item 3): the GEMM of a gemm::Desc
// (any layout, bf16/f16/fp8 operands, f32/bf16/f16 output, bias, ReLU, GELU, GELU with aux, the
// GELU backward with the bias gradient, beta * C) through cublasLtMatmul, with the fastest of up to
// 8 algorithms its heuristic offers, timed on the call's own arguments.
//
// What cuBLASLt documents, and this file relies on (cublasLt.h of the CUDA toolkit rigel builds
// with, and the cublasLtMatmul section of the cuBLAS documentation):
//  - Compute type CUBLAS_COMPUTE_32F with scale type CUDA_R_32F takes bf16 or f16 operands with C and
//    D of one type; fp8 kernels need the same compute and scale types and A transposed, B not ("TN",
//    in cuBLASLt's column-major terms), which is rigel's NT (cublaslt_gemm.hpp). fp8 accumulation is
//    left at cuBLASLt's default, which promotes partial sums to full fp32 now and then; FAST_ACCUM
//    (no promotion) stays off, and no scale pointer is set (every scale is 1).
//  - The bias is a packed vector, one element per row of cuBLASLt's D (a column of rigel's), added
//    before the activation. Its type is D's type unless CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE says
//    otherwise; the header names that attribute for the bias gradient of DGELU_BGRAD too, and lists
//    fp8 kernels with an f32 output among the exceptions to the default (the documentation gives
//    them a bf16 bias). rigel's vector types (bias in D's type but f32 beside an f32 D, bgrad always
//    f32) are set explicitly wherever they may differ from the default, and the heuristic says
//    whether this library version takes them.
//  - GELU_AUX_BIAS writes GELU's input (pre + bias) to the aux matrix, in D's type by default;
//    DGELU_BGRAD reads it back, writes pre * GELU'(aux) to D and the bias gradient (the reduction of
//    D over cuBLASLt's columns: rigel's column sums) through the bias pointer. The aux leading
//    dimension is in elements, at least D's rows (rigel's N) and a multiple of 8.
//  - GELU: cublasLt.h and the cublasLtEpilogue_t documentation say only "x := GELU(x)", not which
//    formula. rigel takes it to be the tanh approximation (GPT-2's), as PyTorch does: its addmm
//    uses this epilogue for GELU and, where it cannot, applies gelu(x, "tanh") instead. rigel's
//    float64 verification of this path on the H200 machine holds it to that. No epilogue computes
//    the erf form, so bias_gelu_erf is refused.
//  - CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE names the bias gradient's type too, and cuBLASLt 13 takes
//    DGELU_BGRAD's gradient beside a bf16 D only in bf16, not in rigel's f32. The bench asks for the
//    product as a user of cuBLASLt would run it (LtConfig::as_a_user): the gradient in that type, in a
//    buffer of the baseline's own, the row labelled; the trainer's vendor mode keeps rigel's types.
//  - Block scales (cublaslt_block_scaled.hpp): CUBLASLT_MATMUL_DESC_A_SCALE_MODE and _B_SCALE_MODE
//    with VEC128_32F and BLK128x128_32F, the scale pointers in A_SCALE_POINTER and B_SCALE_POINTER;
//    their layouts are the documentation's, stated in that header.
//  - The heuristic does not dereference the bias and aux pointers but takes the alignment it may
//    assume from their values; for A, B, C and D it assumes 256-byte alignment unless the
//    preference's MIN_ALIGNMENT_*_BYTES says less, which admits only algorithms that work with less.
//    So an algorithm is chosen per alignment of the call's pointers, and support is asked for
//    256-byte aligned ones (what cudaMalloc returns).
#include "cuda/vendor/cublaslt_gemm.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/device_cache.hpp"
#include "cuda/vendor/cublaslt_block_scaled.hpp"
#include "cuda/vendor/vendor.cuh"

namespace rigel::cuda::vendor {

namespace {

using gemm::Desc;
using gemm::Epilogue;
using gemm::Type;

constexpr int kCandidates = 8;       // algorithms asked of the heuristic and timed
// Runs timed per candidate after one warm-up each, in rounds of one run of every candidate (the median
// counts): timed one after another, the SM clock's drift under the power cap (a few per cent over a
// tuning) chose among candidates 1-3 % apart, as at 4096^3 bias + GELU on the H200 machine (docs/gemm.md).
constexpr int kTimedRuns = 7;
constexpr std::uint32_t kMaxAlignment = 256;  // cuBLASLt's default assumption (cublasLt.h)
constexpr std::int64_t kAuxLdMultiple = 8;    // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD for GELU (cublasLt.h)

bool is_fp8(Type t) { return t == Type::e4m3 || t == Type::e5m2; }

cudaDataType lt_type(Type t) {
    switch (t) {
        case Type::f32: return CUDA_R_32F;
        case Type::bf16: return CUDA_R_16BF;
        case Type::f16: return CUDA_R_16F;
        case Type::e4m3: return CUDA_R_8F_E4M3;
        case Type::e5m2: return CUDA_R_8F_E5M2;
    }
    throw std::invalid_argument("cuBLASLt baseline: unknown element type");
}

// bias_gelu_erf has no counterpart: refused before this is asked.
cublasLtEpilogue_t lt_epilogue(Epilogue e) {
    switch (e) {
        case Epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
        case Epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
        case Epilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
        case Epilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
        case Epilogue::bias_gelu_aux: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        case Epilogue::dgelu_bgrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
        case Epilogue::bias_gelu_erf: break;
    }
    throw std::invalid_argument(std::string("cuBLASLt baseline: no epilogue for ") + gemm::name(e));
}

// Whether the type of the vector behind CUBLASLT_MATMUL_DESC_BIAS_POINTER must be set: where it
// differs from D's type, and beside fp8 operands, whose default has exceptions.
bool set_vector_type(const Desc& d, Type vector) { return vector != d.d_type || is_fp8(d.a_type); }

std::string lt_version() {
    const std::size_t v = cublasLtGetVersion();
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// "bf16 x bf16 -> bf16, layout NT, epilogue bias_gelu"
std::string describe_gemm(const Desc& d) {
    return std::string(gemm::name(d.a_type)) + " x " + gemm::name(d.b_type) + " -> " + gemm::name(d.d_type) +
           ", layout " + gemm::layout_name(d.a_op, d.b_op) + ", epilogue " + gemm::name(d.epilogue);
}

const char* vector_name(const Desc& d) { return d.epilogue == Epilogue::dgelu_bgrad ? "bias gradient" : "bias"; }

// What a plan is for: a desc in one of the configs of cublaslt_gemm.hpp, or the block-scaled fp8
// problem of cublaslt_block_scaled.hpp (its desc the plain NT fp8 GEMM with an f32 D).
enum class Kind : std::uint8_t { same, as_a_user, block_scaled };

Kind kind_of(LtConfig c) { return c == LtConfig::as_a_user ? Kind::as_a_user : Kind::same; }

cublasLtMatmulMatrixScale_t lt_scale_mode(LtScaleMode m) {
    return m == LtScaleMode::vec128 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                    : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
}

std::string block_scales_text() {
    return std::string("block scales (rigel's A 1 x 128 as cuBLASLt's B, ") + lt_scale_mode_name(kLtDeepSeekModes.b) +
           "; rigel's B 128 x 128 as cuBLASLt's A, " + lt_scale_mode_name(kLtDeepSeekModes.a) + ")";
}

// What is refused without asking the GPU: rigel's own checks, and what cuBLASLt documents it lacks.
std::string refusal_before_heuristic(const Desc& d) {
    if (std::string why = gemm::check(d); !why.empty()) return why;
    if (d.epilogue == Epilogue::bias_gelu_erf)
        return "cuBLASLt has no erf GELU epilogue (its GELU epilogues compute the tanh approximation)";
    const gemm::EpilogueTraits t = gemm::traits(d.epilogue);
    if ((t.aux_in || t.aux_out) && d.ldaux % kAuxLdMultiple != 0)
        return "cuBLASLt needs the GELU aux leading dimension to be a multiple of 8 elements "
               "(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD), not " +
               std::to_string(d.ldaux);
    return {};
}

// Alignment in bytes (a power of two, at most 256) of the pointers an algorithm is chosen for.
enum Slot { kA, kB, kC, kD, kVector, kAux, kSlots };
using Alignments = std::array<std::uint32_t, kSlots>;

std::uint32_t alignment_of(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t al = 1;
    while (al < kMaxAlignment && a % (2 * al) == 0) al *= 2;
    return al;  // a null pointer (an unused slot) counts as fully aligned
}

// A placeholder value for the bias and aux pointers while support is asked: the heuristic reads
// only its alignment (cublasLt.h: such routines do not dereference these pointers).
const void* const kAlignedPlaceholder = reinterpret_cast<const void*>(std::uintptr_t{kMaxAlignment});

// What an algorithm is chosen for besides the desc: the alignments of the call's pointers, and
// whether C is D (beta 0, or in place). cuBLASLt takes C == D only with one layout for both, so
// then D's descriptor serves as C's (a C layout with another ld is refused as an invalid value).
struct Variant {
    Alignments alignments{};
    bool c_is_d = true;
    bool operator==(const Variant&) const = default;
};

struct Tuned {
    Variant variant;
    cublasLtMatmulAlgo_t algo{};
    std::string line;
};

// The descriptors of one desc, made once, and the algorithms chosen for it. The bias and aux
// pointers live in the matmul descriptor: they are rewritten only when a call brings new ones.
struct Plan {
    Desc desc;
    Kind kind = Kind::same;
    LtGemm g;
    Type vector = Type::f32;  // the bias or bias gradient's type as cuBLASLt is told it
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;  // c is d when ldc == ldd
    const void* vector_set = nullptr;
    const void* aux_set = nullptr;
    const void* a_scales_set = nullptr;  // block_scaled: rigel's A's, cuBLASLt's B_SCALE_POINTER
    const void* b_scales_set = nullptr;  // rigel's B's, cuBLASLt's A_SCALE_POINTER
    void* own_bgrad = nullptr;           // as_a_user: the bias gradient's buffer, N elements of `vector`
    std::string note;                    // where the plan departs from the desc, for the row
    std::string refusal;                 // non-empty: cuBLASLt cannot compute it
    std::vector<Tuned> tuned;
    int latest = -1;  // index into tuned of the latest tuning
};

// describe_gemm with the vector type where it may be what makes cuBLASLt say no, and the block scales.
std::string describe(const Plan& p) {
    const Desc& d = p.desc;
    const gemm::EpilogueTraits t = gemm::traits(d.epilogue);
    std::string s = describe_gemm(d);
    if (p.kind == Kind::block_scaled) s += " with " + block_scales_text();
    if (set_vector_type(d, p.vector) && (t.bias || t.bgrad))
        s += std::string(" with ") + vector_name(d) + " type " + gemm::name(p.vector);
    return s;
}

using Key = std::array<std::int64_t, 15>;
Key key_of(const Desc& d, Kind kind) {
    return {static_cast<std::int64_t>(kind),
            d.m,
            d.n,
            d.k,
            static_cast<std::int64_t>(d.a_type),
            static_cast<std::int64_t>(d.b_type),
            static_cast<std::int64_t>(d.a_op),
            static_cast<std::int64_t>(d.b_op),
            static_cast<std::int64_t>(d.d_type),
            static_cast<std::int64_t>(d.epilogue),
            d.lda,
            d.ldb,
            d.ldd,
            d.ldc,
            d.ldaux};
}

// Plans live until release_plans() (run by cuda::release_device_caches()) destroys their descriptors.
// Host-side state without a lock: rigel calls the library from one host thread.
std::map<Key, Plan> plans;

void destroy(Plan& p) noexcept {
    if (p.op) (void)cublasLtMatmulDescDestroy(p.op);
    if (p.c && p.c != p.d) (void)cublasLtMatrixLayoutDestroy(p.c);
    for (cublasLtMatrixLayout_t l : {p.a, p.b, p.d})
        if (l) (void)cublasLtMatrixLayoutDestroy(l);
    if (p.own_bgrad) (void)cudaFree(p.own_bgrad);
    p.op = nullptr;
    p.a = p.b = p.c = p.d = nullptr;
    p.own_bgrad = nullptr;
}

void release_plans() noexcept {
    for (auto& [key, plan] : plans) destroy(plan);
    plans.clear();
}

template <typename T>
void set_attribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const T& value) {
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attr, &value, sizeof value));
}

cublasLtMatrixLayout_t make_layout(Type t, const LtMatrix& m) {
    cublasLtMatrixLayout_t l = nullptr;
    RIGEL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, lt_type(t), static_cast<std::uint64_t>(m.rows),
                                                  static_cast<std::uint64_t>(m.cols), m.ld));
    return l;
}

// Writes the bias (or bgrad) and aux pointers into the matmul descriptor when they changed.
void point(Plan& p, const void* vector, const void* aux) {
    const gemm::EpilogueTraits t = gemm::traits(p.desc.epilogue);
    if ((t.bias || t.bgrad) && vector != p.vector_set) {
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, vector);
        p.vector_set = vector;
    }
    if ((t.aux_in || t.aux_out) && aux != p.aux_set) {
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
        p.aux_set = aux;
    }
}

// Writes the block scales' pointers into the matmul descriptor when they changed (cuBLASLt's A is
// rigel's B).
void point_scales(Plan& p, const void* a_scales, const void* b_scales) {
    if (a_scales != p.a_scales_set) {
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scales);
        p.a_scales_set = a_scales;
    }
    if (b_scales != p.b_scales_set) {
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scales);
        p.b_scales_set = b_scales;
    }
}

void make_descriptors(Plan& p) {
    const Desc& d = p.desc;
    const gemm::EpilogueTraits t = gemm::traits(d.epilogue);
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    set_attribute(p.op, CUBLASLT_MATMUL_DESC_POINTER_MODE, static_cast<std::int32_t>(CUBLASLT_POINTER_MODE_HOST));
    const auto op_of = [](bool trans) { return static_cast<std::int32_t>(trans ? CUBLAS_OP_T : CUBLAS_OP_N); };
    set_attribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, op_of(p.g.trans_a));
    set_attribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, op_of(p.g.trans_b));
    set_attribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<std::uint32_t>(lt_epilogue(d.epilogue)));
    if ((t.bias || t.bgrad) && set_vector_type(d, p.vector))
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(lt_type(p.vector)));
    if (t.aux_in || t.aux_out) set_attribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, p.g.aux.ld);
    point(p, kAlignedPlaceholder, kAlignedPlaceholder);
    if (p.kind == Kind::block_scaled) {
        // The header gives both attributes as int32_t.
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                      static_cast<std::int32_t>(lt_scale_mode(kLtDeepSeekModes.a)));
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                      static_cast<std::int32_t>(lt_scale_mode(kLtDeepSeekModes.b)));
    }

    p.a = make_layout(d.b_type, p.g.a);
    p.b = make_layout(d.a_type, p.g.b);
    p.d = make_layout(d.d_type, p.g.d);
    // One descriptor for C and D when they match: cuBLASLt's in-place case (C == D) then sees one layout.
    p.c = p.g.c.ld == p.g.d.ld ? p.d : make_layout(d.d_type, p.g.c);
}

struct Preference {
    cublasLtMatmulPreference_t pref = nullptr;
    Preference() { RIGEL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref)); }
    ~Preference() { (void)cublasLtMatmulPreferenceDestroy(pref); }
    Preference(const Preference&) = delete;
    Preference& operator=(const Preference&) = delete;
    template <typename T>
    void set(cublasLtMatmulPreferenceAttributes_t attr, T value) {
        RIGEL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value));
    }
};

// A fixed array: nvcc 13's front end fails on a std::vector of cuBLASLt's unnamed result struct.
struct Heuristic {
    std::array<cublasLtMatmulHeuristicResult_t, kCandidates> results{};
    std::size_t count = 0;  // the leading results with state SUCCESS, best guess first
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
};

Heuristic ask_heuristic(const Plan& p, const Variant& v, int count) {
    const Alignments& al = v.alignments;
    const LtContext lt = cublaslt();
    Preference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t{lt.workspace_bytes});
    // cuBLASLt's A is rigel's B and its B rigel's A.
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al[kB]);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al[kA]);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al[kC]);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al[kD]);
    Heuristic h;
    int found = 0;
    h.status = cublasLtMatmulAlgoGetHeuristic(lt.handle, p.op, p.a, p.b, v.c_is_d ? p.d : p.c, p.d, pref.pref,
                                              std::min(count, kCandidates), h.results.data(), &found);
    if (h.status != CUBLAS_STATUS_SUCCESS) found = 0;
    const auto end = std::remove_if(h.results.begin(), h.results.begin() + std::clamp(found, 0, kCandidates),
                                    [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
    h.count = static_cast<std::size_t>(end - h.results.begin());
    return h;
}

std::string no_algorithm(const Plan& p, const Heuristic& h, const std::string& pointers) {
    return "cuBLASLt " + lt_version() + " has no algorithm on this GPU for " + describe(p) + pointers +
           " (cublasLtMatmulAlgoGetHeuristic: " +
           (h.status == CUBLAS_STATUS_SUCCESS ? std::string("0 results") : cublas_status_text(h.status)) + ")";
}

// Why the heuristic has nothing for a plan. When rigel's bias or bgrad type differs from cuBLASLt's
// default (lt_default_vector_type) and the default would be taken, that is the sentence; the plan is
// refused either way, so its descriptor may be changed for the question.
std::string refusal_from_heuristic(Plan& p, const Variant& v, const Heuristic& h) {
    const Desc& d = p.desc;
    const gemm::EpilogueTraits t = gemm::traits(d.epilogue);
    const Type fallback = lt_default_vector_type(d);
    if ((t.bias || t.bgrad) && fallback != rigel_vector_type(d)) {
        set_attribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(lt_type(fallback)));
        if (ask_heuristic(p, v, 1).count > 0)
            return "cuBLASLt " + lt_version() + " takes the " + vector_name(d) + " of " + describe_gemm(d) +
                   " only in " + gemm::name(fallback) + ", not in rigel's " + gemm::name(rigel_vector_type(d));
    }
    return no_algorithm(p, h, " with 256-byte aligned pointers");
}

// as_a_user: where cuBLASLt refuses rigel's f32 bias gradient but takes its default type, the plan
// keeps that type and a buffer of its own for the gradient, as a user of cuBLASLt would run the
// product. False (the descriptor then to be refused) where there is no such type or it is refused too.
bool adopt_own_bgrad(Plan& p, const Variant& v) {
    const std::optional<Type> t = lt_own_bgrad_type(p.desc);
    if (!t) return false;
    set_attribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(lt_type(*t)));
    if (ask_heuristic(p, v, 1).count == 0) return false;
    RIGEL_CUDA_CHECK(cudaMalloc(&p.own_bgrad, static_cast<std::size_t>(p.desc.n) *
                                                  static_cast<std::size_t>(gemm::type_bytes(*t))));
    p.vector = *t;
    p.note = lt_own_bgrad_note(*t);
    return true;
}

// block_scaled: the sentence for a plan the heuristic has nothing for, with what it answers for the same
// question with a bf16 D (whether the scale modes or the f32 output are what it lacks).
std::string block_scaled_refusal(const Plan& p, const Heuristic& h) {
    std::string s = no_algorithm(p, h, " and 256-byte aligned pointers");
    const LtContext lt = cublaslt();
    Preference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t{lt.workspace_bytes});
    cublasLtMatrixLayout_t bf16_d = make_layout(Type::bf16, p.g.d);
    cublasLtMatmulHeuristicResult_t r{};
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt.handle, p.op, p.a, p.b, bf16_d, bf16_d, pref.pref, 1, &r, &found);
    (void)cublasLtMatrixLayoutDestroy(bf16_d);
    s += "; asked the same with a bf16 D, it answers ";
    s += st != CUBLAS_STATUS_SUCCESS ? std::string(cublas_status_text(st))
         : found > 0 && r.state == CUBLAS_STATUS_SUCCESS ? std::string("with an algorithm")
                                                         : std::string("0 results");
    return s;
}

// The plan of `desc` in `kind`, made and asked about on first use; block_scaled plans are asked with
// the given scale pointers set.
Plan& plan_for(const Desc& desc, Kind kind, const void* a_scales = nullptr, const void* b_scales = nullptr) {
    const Desc d = gemm::with_packed_leading_dimensions(desc);
    const Key key = key_of(d, kind);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    register_release(&release_plans);
    Plan& p = plans[key];
    p.desc = d;
    p.kind = kind;
    p.g = lt_gemm(d);
    p.vector = rigel_vector_type(d);
    p.refusal = refusal_before_heuristic(d);
    if (!p.refusal.empty()) return p;
    try {
        make_descriptors(p);
        if (kind == Kind::block_scaled) point_scales(p, a_scales, b_scales);
        Variant aligned;
        aligned.alignments.fill(kMaxAlignment);
        if (const Heuristic h = ask_heuristic(p, aligned, 1); h.count == 0) {
            if (kind == Kind::block_scaled)
                p.refusal = block_scaled_refusal(p, h);
            else if (kind != Kind::as_a_user || !adopt_own_bgrad(p, aligned))
                p.refusal = refusal_from_heuristic(p, aligned, h);
        }
    } catch (...) {
        // Not cached: a failure to set cuBLASLt up is not an answer about the desc.
        destroy(p);
        plans.erase(key);
        throw;
    }
    return p;
}

// The device pointers of one call in cuBLASLt's order.
struct Operands {
    const void* first;   // cuBLASLt's A: rigel's B
    const void* second;  // cuBLASLt's B: rigel's A
    const void* c;
    void* d;
};

cublasStatus_t launch(const Plan& p, const cublasLtMatmulAlgo_t& algo, const Operands& o, const gemm::Args& args,
                      cudaStream_t s) {
    const LtContext lt = cublaslt();
    return cublasLtMatmul(lt.handle, p.op, &args.alpha, o.first, p.a, o.second, p.b, &args.beta, o.c,
                          o.c == o.d ? p.d : p.c, o.d, p.d, &algo, lt.workspace, lt.workspace_bytes, s);
}

template <typename T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    T value{};
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS)
        return T{};
    return value;
}

// cuBLASLt's tile and cluster ids for the shapes a Hopper GEMM uses, in its own rows x cols (rigel's
// N x M); the compiler checks every name against cublasLt.h. Others are printed as their id.
struct Shape {
    int id, rows, cols;
};
#define RIGEL_LT_TILE(r, c) Shape{CUBLASLT_MATMUL_TILE_##r##x##c, r, c}
constexpr std::array kTiles{
    RIGEL_LT_TILE(64, 64),   RIGEL_LT_TILE(64, 128),  RIGEL_LT_TILE(128, 64),  RIGEL_LT_TILE(64, 256),
    RIGEL_LT_TILE(256, 64),  RIGEL_LT_TILE(128, 128), RIGEL_LT_TILE(128, 256), RIGEL_LT_TILE(256, 128),
    RIGEL_LT_TILE(256, 256), RIGEL_LT_TILE(128, 192), RIGEL_LT_TILE(192, 128), RIGEL_LT_TILE(128, 96),
    RIGEL_LT_TILE(96, 128),  RIGEL_LT_TILE(128, 160), RIGEL_LT_TILE(160, 128), RIGEL_LT_TILE(64, 96),
    RIGEL_LT_TILE(96, 64),   RIGEL_LT_TILE(192, 256), RIGEL_LT_TILE(256, 192), RIGEL_LT_TILE(64, 192),
    RIGEL_LT_TILE(192, 64),  RIGEL_LT_TILE(128, 512), RIGEL_LT_TILE(512, 128), RIGEL_LT_TILE(32, 256),
    RIGEL_LT_TILE(256, 32),
};
#undef RIGEL_LT_TILE
#define RIGEL_LT_CLUSTER(r, c) Shape{CUBLASLT_CLUSTER_SHAPE_##r##x##c##x1, r, c}
constexpr std::array kClusters{
    RIGEL_LT_CLUSTER(1, 1), RIGEL_LT_CLUSTER(2, 1), RIGEL_LT_CLUSTER(1, 2), RIGEL_LT_CLUSTER(2, 2),
    RIGEL_LT_CLUSTER(4, 1), RIGEL_LT_CLUSTER(1, 4), RIGEL_LT_CLUSTER(4, 2), RIGEL_LT_CLUSTER(2, 4),
    RIGEL_LT_CLUSTER(4, 4), RIGEL_LT_CLUSTER(8, 1), RIGEL_LT_CLUSTER(1, 8),
};
#undef RIGEL_LT_CLUSTER

// "256x128 (M x N)" from cuBLASLt's rows x cols, or "id 600" when the table lacks it.
template <std::size_t N>
std::string shape_name(const std::array<Shape, N>& table, unsigned id, const char* none) {
    if (id == 0) return none;
    for (const Shape& s : table)
        if (s.id == static_cast<int>(id)) return std::to_string(s.cols) + "x" + std::to_string(s.rows) + " (M x N)";
    return "id " + std::to_string(id);
}

std::string algorithm_line(const cublasLtMatmulAlgo_t& algo) {
    std::ostringstream o;
    o << "algo " << algo_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID) << " tile "
      << shape_name(kTiles, algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID), "undefined")
      << " stages id " << algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID) << " splitK "
      << algo_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) << " reduction "
      << algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) << " swizzle "
      << algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) << " custom "
      << algo_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION) << " inner shape id "
      << algo_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID) << " cluster "
      << shape_name(kClusters, algo_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID), "auto");
    return o.str();
}

// RIGEL_CUBLAS_CHECK's message, naming the GEMM and the algorithm instead of the expression.
void launch_checked(const Plan& p, const cublasLtMatmulAlgo_t& algo, const Operands& o, const gemm::Args& args,
                    cudaStream_t s) {
    if (const cublasStatus_t st = launch(p, algo, o, args, s); st != CUBLAS_STATUS_SUCCESS)
        throw_cuda_error(("cublasLtMatmul of " + describe(p) + " with " + algorithm_line(algo)).c_str(),
                         "cublasStatus " + std::to_string(static_cast<int>(st)), cublas_status_text(st), __FILE__,
                         __LINE__);
}

struct EventPair {
    cudaEvent_t start = nullptr, stop = nullptr;
    EventPair() {
        RIGEL_CUDA_CHECK(cudaEventCreate(&start));
        RIGEL_CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~EventPair() {
        (void)cudaEventDestroy(start);
        (void)cudaEventDestroy(stop);
    }
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
};

// Stream-ordered scratch memory, freed on the stream when it goes.
struct Scratch {
    void* ptr = nullptr;
    cudaStream_t stream = nullptr;
    Scratch(std::size_t bytes, cudaStream_t s) : stream(s) { RIGEL_CUDA_CHECK(cudaMallocAsync(&ptr, bytes, s)); }
    ~Scratch() { (void)cudaFreeAsync(ptr, stream); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};

// The benchmark's L2 flush (the CUDA executor's time_once, src/cuda/cuda_executor.cu): a memset of
// twice the L2's size enqueued before each timed call's start event, so that A and B come from memory,
// not from L2 where the last run left them, and the stream is busy when the start event is recorded
// (the launch's host cost then falls outside the events). The baseline is handed a stream, not the
// executor, so its tuning flushes through a buffer of its own of the same size, made on first use and
// freed by release_device_caches().
struct FlushBuffer {
    void* ptr = nullptr;
    std::size_t bytes = 0;
};
FlushBuffer flush_buffer;  // trivially destructible: nothing runs at exit after the context is gone

void release_flush() noexcept {
    if (flush_buffer.ptr) (void)cudaFree(flush_buffer.ptr);
    flush_buffer = FlushBuffer{};
}

void flush_l2(cudaStream_t s) {
    if (!flush_buffer.ptr) {
        int device = 0, l2 = 0;
        RIGEL_CUDA_CHECK(cudaGetDevice(&device));
        RIGEL_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
        register_release(&release_flush);
        const std::size_t bytes = 2 * static_cast<std::size_t>(std::max(l2, 1 << 20));
        RIGEL_CUDA_CHECK(cudaMalloc(&flush_buffer.ptr, bytes));
        flush_buffer.bytes = bytes;
    }
    RIGEL_CUDA_CHECK(cudaMemsetAsync(flush_buffer.ptr, 0, flush_buffer.bytes, s));
}

// One launch of `algo` timed as the benchmark times a call, in milliseconds: `prepare` (untimed), the
// L2 flush, then the launch between the events.
float time_once(const Plan& p, const cublasLtMatmulAlgo_t& algo, const Operands& o, const gemm::Args& args,
                cudaStream_t s, EventPair& ev, const std::function<void()>& prepare) {
    float ms = 0.0f;
    prepare();
    flush_l2(s);
    RIGEL_CUDA_CHECK(cudaEventRecord(ev.start, s));
    launch_checked(p, algo, o, args, s);
    RIGEL_CUDA_CHECK(cudaEventRecord(ev.stop, s));
    RIGEL_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    RIGEL_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    return ms;
}

// Asks the heuristic for up to kCandidates algorithms for this variant, times each on the call's
// arguments under the benchmark's conditions (time_once) and keeps the fastest.
const Tuned& tune(Plan& p, const Variant& v, const Operands& call, const gemm::Args& args, cudaStream_t s) {
    const Heuristic h = ask_heuristic(p, v, kCandidates);
    if (h.count == 0) {
        const Alignments& al = v.alignments;
        std::ostringstream why;
        why << " with pointers aligned to A " << al[kA] << ", B " << al[kB] << ", C " << al[kC] << ", D " << al[kD]
            << ", bias/bgrad " << al[kVector] << ", aux " << al[kAux] << " bytes";
        throw std::invalid_argument(no_algorithm(p, h, why.str()));
    }
    // With C == D (in place, beta != 0) every timed run would feed the last one's D back in as C, and
    // the call's own run below must read C untouched: each candidate's run reads and writes a scratch
    // copy of C instead, in place as the call runs, refreshed from C before the run's flush.
    Operands timed = call;
    std::unique_ptr<Scratch> scratch;
    std::function<void()> prepare = [] {};
    if (args.beta != 0.0f && args.c == args.d) {
        const std::size_t bytes = static_cast<std::size_t>(p.g.d.ld) * static_cast<std::size_t>(p.g.d.cols) *
                                  static_cast<std::size_t>(gemm::type_bytes(p.desc.d_type));
        scratch = std::make_unique<Scratch>(bytes, s);
        timed.c = timed.d = scratch->ptr;
        prepare = [&, bytes] {
            RIGEL_CUDA_CHECK(cudaMemcpyAsync(scratch->ptr, call.c, bytes, cudaMemcpyDeviceToDevice, s));
        };
    }
    EventPair ev;
    // Each candidate's warm-up (a refusal at launch leaves it out), then kTimedRuns rounds of one timed
    // run of every candidate left, each candidate's median kept.
    std::string errors;
    std::vector<std::size_t> launched;
    for (std::size_t i = 0; i < h.count; ++i) {
        prepare();
        if (const cublasStatus_t st = launch(p, h.results[i].algo, timed, args, s); st != CUBLAS_STATUS_SUCCESS) {
            errors += (errors.empty() ? "" : ", ") + std::string(cublas_status_text(st));
            continue;
        }
        launched.push_back(i);
    }
    std::vector<std::array<float, kTimedRuns>> runs(launched.size());
    for (int r = 0; r < kTimedRuns; ++r)
        for (std::size_t j = 0; j < launched.size(); ++j)
            runs[j][static_cast<std::size_t>(r)] =
                time_once(p, h.results[launched[j]].algo, timed, args, s, ev, prepare);
    const int timed_count = static_cast<int>(launched.size());
    int best = -1;
    float best_ms = 0.0f, first_ms = -1.0f;
    for (std::size_t j = 0; j < launched.size(); ++j) {
        std::sort(runs[j].begin(), runs[j].end());
        const float ms = runs[j][kTimedRuns / 2];
        if (launched[j] == 0) first_ms = ms;
        if (best < 0 || ms < best_ms) {
            best = static_cast<int>(launched[j]);
            best_ms = ms;
        }
    }
    if (best < 0)
        throw std::runtime_error("cuBLASLt refused to launch every one of the " + std::to_string(h.count) +
                                 " algorithms its heuristic offered for " + describe(p) + " (" + errors + ")");

    std::ostringstream line;
    line << algorithm_line(h.results[static_cast<std::size_t>(best)].algo) << "; fastest of " << timed_count
         << " timed in rounds after an L2 flush (heuristic's #" << best + 1 << ", median " << std::fixed
         << std::setprecision(4) << best_ms << " ms";
    if (best != 0 && first_ms >= 0.0f) line << "; its #1 " << first_ms << " ms";
    if (static_cast<std::size_t>(timed_count) < h.count)
        line << "; " << h.count - static_cast<std::size_t>(timed_count) << " refused at launch";
    line << ")";
    p.tuned.push_back({.variant = v, .algo = h.results[static_cast<std::size_t>(best)].algo, .line = line.str()});
    p.latest = static_cast<int>(p.tuned.size()) - 1;
    return p.tuned.back();
}

// One call of a plan: the algorithm chosen for the call's variant (tuned on first sight), launched.
void run(Plan& p, const Operands& o, const gemm::Args& args, cudaStream_t s, const void* vector, const void* aux) {
    const Variant v{.alignments = {alignment_of(o.second), alignment_of(o.first), alignment_of(o.c),
                                   alignment_of(o.d), alignment_of(vector), alignment_of(aux)},
                    .c_is_d = o.c == o.d};
    point(p, vector, aux);
    const auto known = std::find_if(p.tuned.begin(), p.tuned.end(), [&](const Tuned& x) { return x.variant == v; });
    if (known != p.tuned.end()) p.latest = static_cast<int>(known - p.tuned.begin());
    const Tuned& chosen = known != p.tuned.end() ? *known : tune(p, v, o, args, s);
    launch_checked(p, chosen.algo, o, args, s);
}

const Plan* known_plan(const gemm::Desc& d, Kind kind) {
    const auto it = plans.find(key_of(gemm::with_packed_leading_dimensions(d), kind));
    return it == plans.end() ? nullptr : &it->second;
}

// The block-scaled problem as the plain NT fp8 GEMM with an f32 D that carries its shape and types.
Desc block_scaled_desc(const LtBlockScaled& b) {
    return {.m = b.m, .n = b.n, .k = b.k, .a_type = b.type, .b_type = b.type, .a_op = gemm::Op::n,
            .b_op = gemm::Op::t, .d_type = Type::f32};
}

}  // namespace

std::string cublaslt_gemm_support(const gemm::Desc& d, LtConfig config) {
    try {
        return plan_for(d, kind_of(config)).refusal;
    } catch (const std::exception& e) {
        return std::string("cuBLASLt could not be set up: ") + e.what();
    }
}

void cublaslt_gemm(const gemm::Desc& desc, const gemm::Args& args, gemm::Stream stream, LtConfig config) {
    Plan& p = plan_for(desc, kind_of(config));
    if (!p.refusal.empty()) throw std::invalid_argument(p.refusal);
    if (std::string why = gemm::check_args(p.desc, args); !why.empty()) throw std::invalid_argument(why);
    if (args.bgrad_accumulate)
        throw std::invalid_argument("cuBLASLt's DGELU_BGRAD writes the bias gradient afresh: it cannot add into bgrad "
                                    "(bgrad_accumulate)");
    const gemm::EpilogueTraits t = gemm::traits(p.desc.epilogue);
    const void* bgrad = p.own_bgrad ? p.own_bgrad : static_cast<const void*>(args.bgrad);
    const void* vector = t.bgrad ? bgrad : t.bias ? args.bias : nullptr;
    const void* aux = t.aux_in || t.aux_out ? args.aux : nullptr;
    // C is not read when beta is 0 (gemm.hpp): D stands in for it, so a null C is never passed.
    const Operands o{.first = args.b, .second = args.a, .c = args.beta != 0.0f ? args.c : args.d, .d = args.d};
    run(p, o, args, static_cast<cudaStream_t>(stream), vector, aux);
}

std::string cublaslt_gemm_algorithm(const gemm::Desc& d, LtConfig config) {
    const Plan* p = known_plan(d, kind_of(config));
    if (!p || p->latest < 0) return {};
    return p->tuned[static_cast<std::size_t>(p->latest)].line;
}

std::string cublaslt_gemm_note(const gemm::Desc& d, LtConfig config) {
    const Plan* p = known_plan(d, kind_of(config));
    return p ? p->note : std::string();
}

LtOwnBgrad cublaslt_gemm_own_bgrad(const gemm::Desc& d) {
    const Plan* p = known_plan(d, Kind::as_a_user);
    if (!p || !p->own_bgrad) return {};
    return {.data = p->own_bgrad, .type = p->vector, .count = p->desc.n};
}

std::string cublaslt_block_scaled_support(const LtBlockScaled& b) {
    try {
        return plan_for(block_scaled_desc(b), Kind::block_scaled, b.a_scales, b.b_scales).refusal;
    } catch (const std::exception& e) {
        return std::string("cuBLASLt could not be set up: ") + e.what();
    }
}

void cublaslt_block_scaled(const LtBlockScaled& b, gemm::Stream stream) {
    if (!is_fp8(b.type))
        throw std::invalid_argument(std::string("cuBLASLt's block scales are for e4m3 and e5m2 operands, not ") +
                                    gemm::name(b.type));
    if (!b.a_scales || !b.b_scales)
        throw std::invalid_argument("cuBLASLt's block-scaled GEMM needs the scales of A and of B");
    Plan& p = plan_for(block_scaled_desc(b), Kind::block_scaled, b.a_scales, b.b_scales);
    if (!p.refusal.empty()) throw std::invalid_argument(p.refusal);
    const gemm::Args args{.a = b.a, .b = b.b, .d = b.d};
    if (std::string why = gemm::check_args(p.desc, args); !why.empty()) throw std::invalid_argument(why);
    point_scales(p, b.a_scales, b.b_scales);
    const Operands o{.first = b.b, .second = b.a, .c = b.d, .d = b.d};
    // The scales' alignments stand in the vector and aux slots: an algorithm is chosen per alignment.
    run(p, o, args, static_cast<cudaStream_t>(stream), b.a_scales, b.b_scales);
}

std::string cublaslt_block_scaled_algorithm(const LtBlockScaled& b) {
    const Plan* p = known_plan(block_scaled_desc(b), Kind::block_scaled);
    if (!p || p->latest < 0) return {};
    return p->tuned[static_cast<std::size_t>(p->latest)].line;
}

}  // namespace rigel::cuda::vendor
