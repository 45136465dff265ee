// The library's float64 reference and verification gate (reference.hpp).
//
// The allowance of one element: the accumulation's likely bound (the ladder's
// element_tolerance), the rest worst-case bounds. p = sum_k a b and
// S = sum_k |a b| in float64 (exact: products of two stored values are exact
// in double), u = 2^-24 (fp32), u_D and eta_D the output type's unit roundoff
// and half its smallest subnormal (f32: 0 and 0, no rounding after the fp32
// epilogue; bf16: 2^-8, 2^-134; f16: 2^-11, 2^-25).
//   e, the error of the pre-activation pre = alpha p + beta c + bias:
//       acc |alpha| S                  fp32 accumulation; acc is the ladder's
//                                      element_tolerance for the operand type
//                                      and K (fp8: for the 128-long chunks
//                                      between promotions, plus fp32's for
//                                      summing the chunks)
//     + 4u (|alpha| S + |beta c| + |bias|)    alpha acc, beta c, their sum, + bias
//     + u_D (|alpha p| + |beta c| + e) + eta_D    the decomposed path only: its
//                                      product is rounded to D's type before the
//                                      epilogue reads it back
//   D before its rounding is off by at most slope e + f32:
//     none, bias, bias_relu   slope 1, f32 0 (the fp32 ops are in e)
//     both GELUs              slope |gelu'(pre)| + e (|gelu''| <= 0.8 < 1);
//                             f32 4u (|pre| + |D|): erff within 2 ulps, the
//                             tanh form's sigmoid evaluation below 1.5u |pre| +
//                             2.5u |D| (src/cuda/gelu.cuh), the rest a few roundings
//     dgelu_bgrad             D = pre gelu'(aux), aux exact; slope |gelu'(aux)| +
//                             f32_g, f32 f32_g |pre| + u |D|, f32_g = 8u (1 + |dg/dt|
//                             + |h|) the fp32 error of gelu' = 0.5 (1 + t) + h, t the
//                             tanh (its sigmoid form s = 0.5 (1 + t) within a few
//                             ulps, and its argument's roundings)
//   D:    before (1 + u_D) + u_D |D| + eta_D
//   aux:  e (1 + u_D) + u_D |pre| + eta_D
//   bgrad, every row checked: sum over the rows of D's allowances before
//     rounding, + (ceil(M/16) + 16) u sum |D| for the fp32 sum in any order: the
//     kernels chain at most 16 additions per thread and shuffle tree before one
//     atomic add per 16 or more rows (src/cuda/gemm/fused_epilogue.cuh,
//     epilogue_kernel.cu). With sampled rows bgrad is held instead to the column
//     sums of the D the device wrote, every row, + u_D |D| + eta_D per row. Where the call added into
//     bgrad (Args::bgrad_accumulate), what it held is one more term of that sum.
#include "gemm/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <thread>

#include "core/dtype.hpp"
#include "core/formats.hpp"
#include "core/recipe.hpp"
#include "core/reference.hpp"

namespace rigel::gemm {
namespace {

constexpr double kU32 = 0x1p-24;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;
constexpr double kGeluCurvature = 1.0;        // max |gelu''| is 0.798 for both forms
constexpr std::int64_t kFp8PromotionK = 128;  // gemm.hpp: fp8 partial sums promoted every 128 of K
constexpr std::int64_t kBgradRowsPerAdd = 16;
// Rows of the reference cost N (K + this): the allowance of each element is
// worth about this many multiply-adds, so small K does not make a sample huge.
constexpr double kElementCost = 64;

// Rows of a stored matrix: A and B as stored (gemm.hpp), M x N for C, D and aux.
std::int64_t rows_a(const Desc& d) { return d.a_op == Op::n ? d.m : d.k; }
std::int64_t rows_b(const Desc& d) { return d.b_op == Op::n ? d.k : d.n; }

std::size_t matrix_bytes(std::int64_t rows, std::int64_t ld, Type t) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(ld) * static_cast<std::size_t>(type_bytes(t));
}

Type bias_type(const Desc& d) { return d.d_type == Type::f32 ? Type::f32 : d.d_type; }

// Element idx of a buffer of `bytes`-byte elements still holds the poison.
static_assert(kPoisonByte == 0xFF);
bool is_poison(const void* base, std::int64_t idx, int bytes) {
    const auto* p = static_cast<const std::uint8_t*>(base) + idx * bytes;
    std::uint32_t w = 0;
    std::memcpy(&w, p, static_cast<std::size_t>(bytes));
    return w == 0xFFFFFFFFu >> (32 - 8 * bytes);
}

// A rows x cols matrix at leading dimension ld, uniform in [lo, hi], padding poisoned.
std::vector<std::uint8_t> random_matrix(Type t, std::int64_t rows, std::int64_t cols, std::int64_t ld, Rng& rng,
                                        double lo, double hi) {
    std::vector<std::uint8_t> out(matrix_bytes(rows, ld, t), kPoisonByte);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            store_element(t, out.data(), r * ld + c, static_cast<float>(rng.uniform(lo, hi)));
    return out;
}

// Runs fn(begin, end, worker) over [0, count) split into `threads` contiguous parts.
template <class Fn>
void parallel_for(std::int64_t count, int threads, Fn fn) {
    const std::int64_t t = std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(count, 1));
    if (t == 1) return fn(std::int64_t{0}, count, 0);
    std::vector<std::thread> pool;
    for (std::int64_t w = 0; w < t; ++w)
        pool.emplace_back([=, &fn] { fn(count * w / t, count * (w + 1) / t, static_cast<int>(w)); });
    for (auto& th : pool) th.join();
}

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x))); }
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
// d/dx gelu_erf(x) = Phi(x) + x phi(x), phi the standard normal density.
double gelu_erf_grad(double x) {
    constexpr double kInvSqrt2Pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
    return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)) + x * std::exp(-0.5 * x * x) * kInvSqrt2Pi;
}

// gelu_tanh'(x) = 0.5 (1 + t) + h, h = 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2), and the
// bound on the error of its fp32 evaluation (see the top of the file).
struct GeluGrad {
    double g, f32_err;
};
GeluGrad gelu_tanh_grad(double x) {
    const double t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const double poly = kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * x * x);
    const double h = 0.5 * x * (1.0 - t * t) * poly;
    const double dg_dt = 0.5 - x * t * poly;
    return {0.5 * (1.0 + t) + h, 8.0 * kU32 * (1.0 + std::fabs(dg_dt) + std::fabs(h))};
}

// What rounding to D's type costs: unit roundoff and half the smallest subnormal.
struct Rounding {
    double u, eta;
};
Rounding rounding_of(Type t) {
    switch (t) {
        case Type::bf16: return {0x1p-8, 0x1p-134};
        case Type::f16: return {0x1p-11, 0x1p-25};
        default: return {0.0, 0.0};
    }
}

double accumulation_tolerance(const Desc& d) {
    switch (d.a_type) {
        case Type::e4m3:
        case Type::e5m2: {
            const DType t = d.a_type == Type::e4m3 ? DType::e4m3 : DType::e5m2;
            const std::int64_t chunks = (d.k + kFp8PromotionK - 1) / kFp8PromotionK;
            return element_tolerance(t, std::min(d.k, kFp8PromotionK)) + element_tolerance(DType::f32, chunks);
        }
        case Type::f16: return element_tolerance(DType::f16, d.k);
        default: return element_tolerance(DType::bf16, d.k);
    }
}

// Everything the allowance of one element needs that does not change per element.
struct Model {
    Desc d;
    EpilogueTraits e;
    double alpha, beta, acc;
    Rounding out;
    Path path;
};

Model make_model(const Desc& desc, const HostInputs& in, Path path) {
    const Desc d = with_packed_leading_dimensions(desc);
    return {.d = d,
            .e = traits(d.epilogue),
            .alpha = in.alpha,
            .beta = in.beta,
            .acc = accumulation_tolerance(d),
            .out = rounding_of(d.d_type),
            .path = path};
}

// One element from its exact product p = sum_k a b and s = sum_k |a b|.
ElementBound bound(const Model& m, const HostInputs& in, std::int64_t row, std::int64_t col, double p, double s) {
    const Desc& d = m.d;
    const double c = m.beta != 0.0f ? load_element(d.d_type, in.c.data(), row * d.ldc + col) : 0.0;
    const double bias = m.e.bias ? load_element(bias_type(d), in.bias.data(), col) : 0.0;
    const double x = m.alpha * p + m.beta * c;
    const double product_mag = std::fabs(m.alpha) * s + std::fabs(m.beta * c);
    double e_pre = m.acc * std::fabs(m.alpha) * s + 4.0 * kU32 * (product_mag + std::fabs(bias));
    if (m.path == Path::decomposed)
        e_pre += m.out.u * (std::fabs(m.alpha * p) + std::fabs(m.beta * c) + e_pre) + m.out.eta;
    const double pre = x + bias;

    double f = pre, slope = 1.0, f32_err = 0.0;
    switch (d.epilogue) {
        case Epilogue::none:
        case Epilogue::bias: break;
        case Epilogue::bias_relu: f = std::max(pre, 0.0); break;
        case Epilogue::bias_gelu:
        case Epilogue::bias_gelu_aux:
            f = gelu_tanh(pre);
            slope = std::fabs(gelu_tanh_grad(pre).g) + kGeluCurvature * e_pre;
            f32_err = 4.0 * kU32 * (std::fabs(pre) + std::fabs(f));
            break;
        case Epilogue::bias_gelu_erf:
            f = gelu_erf(pre);
            slope = std::fabs(gelu_erf_grad(pre)) + kGeluCurvature * e_pre;
            f32_err = 4.0 * kU32 * (std::fabs(pre) + std::fabs(f));
            break;
        case Epilogue::dgelu_bgrad: {
            const GeluGrad g = gelu_tanh_grad(load_element(d.d_type, in.aux.data(), row * d.ldaux + col));
            f = x * g.g;
            slope = std::fabs(g.g) + g.f32_err;
            f32_err = g.f32_err * std::fabs(x) + kU32 * std::fabs(f);
            break;
        }
    }
    ElementBound b;
    b.d_ref = f;
    b.unrounded_allowed = slope * e_pre + f32_err;
    b.d_allowed = b.unrounded_allowed * (1.0 + m.out.u) + m.out.u * std::fabs(f) + m.out.eta;
    if (m.e.aux_out) {
        b.aux_ref = pre;
        b.aux_allowed = e_pre * (1.0 + m.out.u) + m.out.u * std::fabs(pre) + m.out.eta;
    }
    return b;
}

// Row `i` of op(A) as K floats.
void op_a_row(const Desc& d, const HostInputs& in, std::int64_t i, float* out) {
    for (std::int64_t p = 0; p < d.k; ++p)
        out[p] = load_element(d.a_type, in.a.data(), d.a_op == Op::n ? i * d.lda + p : p * d.lda + i);
}

// op(B) as K x ldb floats, row-major, ldb = N rounded up to kLanes, zero past N.
std::vector<float> op_b(const Desc& d, const HostInputs& in, std::int64_t ldb, int threads) {
    std::vector<float> out(static_cast<std::size_t>(d.k * ldb), 0.0f);
    parallel_for(d.k, threads, [&](std::int64_t p0, std::int64_t p1, int) {
        for (std::int64_t p = p0; p < p1; ++p)
            for (std::int64_t j = 0; j < d.n; ++j)
                out[static_cast<std::size_t>(p * ldb + j)] =
                    load_element(d.b_type, in.b.data(), d.b_op == Op::n ? p * d.ldb + j : j * d.ldb + p);
    });
    return out;
}

// Rows of D compared with the reference: all when M N (K + kElementCost) <=
// full_limit; else the first, the last and one random row in every block of
// consecutive rows, the blocks as short as the budget allows.
std::vector<std::int64_t> checked_rows(const Desc& d, double full_limit, std::uint64_t seed) {
    std::vector<std::int64_t> rows;
    const double per_row = static_cast<double>(d.n) * (static_cast<double>(d.k) + kElementCost);
    const double budget_rows = std::floor(full_limit / per_row);
    if (budget_rows >= static_cast<double>(d.m)) {
        for (std::int64_t i = 0; i < d.m; ++i) rows.push_back(i);
        return rows;
    }
    const auto blocks = static_cast<std::int64_t>(std::max(1.0, budget_rows - 2.0));
    const std::int64_t block = (d.m + blocks - 1) / blocks;
    Rng rng(seed ^ 0x67656d6d61726f77ull);
    rows.push_back(0);
    for (std::int64_t start = 0; start < d.m; start += block)
        rows.push_back(start + static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(
                                                             std::min(block, d.m - start))));
    rows.push_back(d.m - 1);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

// The worst element of one output so far, and the per-worker tallies.
struct Worst {
    double ratio = 0;
    std::string where, detail;
    void offer(double err, double allowed, const char* what, std::int64_t i, std::int64_t j, double got,
               double ref) {
        const double r = err == 0 ? 0.0 : allowed > 0 ? err / allowed : INFINITY;
        if (!(r > ratio) && !(std::isnan(r) && !std::isnan(ratio))) return;
        ratio = std::isnan(r) ? INFINITY : r;
        char buf[96];
        if (i >= 0)
            std::snprintf(buf, sizeof buf, "%s[%lld,%lld]", what, static_cast<long long>(i), static_cast<long long>(j));
        else
            std::snprintf(buf, sizeof buf, "%s[%lld]", what, static_cast<long long>(j));
        where = buf;
        char det[160];
        std::snprintf(det, sizeof det, "%s is %.9g, the reference %.9g, allowance %.3g", buf, got, ref, allowed);
        detail = det;
    }
    void merge(const Worst& o) {
        if (o.ratio > ratio) *this = o;
    }
};

struct Scan {
    std::int64_t unwritten = 0, nan = 0, padding = 0;
};

// Poison, NaN and padding over a whole M x ld output buffer; optionally the
// column sums of D (value and magnitude) for the sampled bgrad check.
Scan scan_output(const Desc& d, Type t, const void* buf, std::int64_t ld, int threads, std::vector<double>* col_sum,
                 std::vector<double>* col_abs) {
    const int bytes = type_bytes(t);
    std::vector<Scan> part(static_cast<std::size_t>(std::max(threads, 1)));
    std::vector<std::vector<double>> sums(part.size()), abss(part.size());
    parallel_for(d.m, threads, [&](std::int64_t r0, std::int64_t r1, int w) {
        Scan& s = part[static_cast<std::size_t>(w)];
        if (col_sum) {
            sums[static_cast<std::size_t>(w)].assign(static_cast<std::size_t>(d.n), 0.0);
            abss[static_cast<std::size_t>(w)].assign(static_cast<std::size_t>(d.n), 0.0);
        }
        for (std::int64_t i = r0; i < r1; ++i)
            for (std::int64_t j = 0; j < ld; ++j) {
                const bool poison = is_poison(buf, i * ld + j, bytes);
                if (j >= d.n) {
                    s.padding += poison ? 0 : 1;
                } else if (poison) {
                    ++s.unwritten;
                } else {
                    const double v = load_element(t, buf, i * ld + j);
                    if (std::isnan(v)) ++s.nan;
                    if (col_sum) {
                        sums[static_cast<std::size_t>(w)][static_cast<std::size_t>(j)] += v;
                        abss[static_cast<std::size_t>(w)][static_cast<std::size_t>(j)] += std::fabs(v);
                    }
                }
            }
    });
    Scan total;
    for (const Scan& s : part) {
        total.unwritten += s.unwritten;
        total.nan += s.nan;
        total.padding += s.padding;
    }
    if (col_sum) {
        col_sum->assign(static_cast<std::size_t>(d.n), 0.0);
        col_abs->assign(static_cast<std::size_t>(d.n), 0.0);
        for (std::size_t w = 0; w < sums.size(); ++w)
            for (std::size_t j = 0; j < sums[w].size(); ++j) {
                (*col_sum)[j] += sums[w][j];
                (*col_abs)[j] += abss[w][j];
            }
    }
    return total;
}

// Per worker: the worst D and aux elements, and the column sums over the
// checked rows that the full bgrad check needs.
struct CompareState {
    Worst worst;
    std::vector<double> ref_sum, allowed_sum, abs_sum;
};

// The library throws on a call it cannot judge: inputs of the wrong size, or
// an output the epilogue writes missing.
void check_buffers(const Model& m, const HostInputs& in, const DeviceOutputs& out) {
    const BufferSizes need = buffer_sizes(m.d, m.beta);
    auto small = [](const std::vector<std::uint8_t>& v, std::size_t bytes) { return v.size() < bytes; };
    if (small(in.a, need.a) || small(in.b, need.b) || small(in.c, need.c) || small(in.bias, need.bias) ||
        (m.e.aux_in && small(in.aux, need.aux)))
        throw std::invalid_argument("verify_gemm: an input buffer is smaller than the desc needs (buffer_sizes)");
    if (!out.d || (m.e.aux_out && !out.aux) || (m.e.bgrad && !out.bgrad))
        throw std::invalid_argument(std::string("verify_gemm: D") + (m.e.aux_out ? ", aux" : "") +
                                    (m.e.bgrad ? ", bgrad" : "") + " must be given for epilogue " +
                                    name(m.d.epilogue));
}

constexpr std::int64_t kRowBlock = 8;
constexpr std::int64_t kColBlock = 256;

// p = sum_k a b and s = sum_k |a b| for kRowBlock rows of op(A) (k floats each,
// zero past the checked rows) and columns j0 .. j0 + nc of op(B) (k x ldb
// floats, ldb a multiple of kLanes, zero past N), into kRowBlock x kColBlock
// doubles. kLanes columns at a time for all the rows, so the partial sums stay
// in vector registers along K. Each product of two floats is exact in double.
// Cloned for AVX-512 and AVX2, chosen by the CPU's features when loaded (an
// arch= clone would go by the CPU model, and miss AMD's).
constexpr std::int64_t kLanes = 8;
using Floats = float __attribute__((vector_size(kLanes * sizeof(float))));
using Doubles = double __attribute__((vector_size(kLanes * sizeof(double))));
[[gnu::target_clones("avx512f", "avx2", "default")]]
void block_products(const float* a, std::int64_t k, const float* b, std::int64_t ldb, std::int64_t nc, double* p,
                    double* s) {
    for (std::int64_t j = 0; j < nc; j += kLanes) {
        Doubles pa[kRowBlock] = {}, sa[kRowBlock] = {};
        for (std::int64_t q = 0; q < k; ++q) {
            Floats bf;
            std::memcpy(&bf, b + q * ldb + j, sizeof bf);
            const Doubles bv = __builtin_convertvector(bf, Doubles);
            const Doubles bb = bv < 0 ? -bv : bv;
            for (std::int64_t r = 0; r < kRowBlock; ++r) {
                const double av = a[r * k + q];
                pa[r] += av * bv;
                sa[r] += std::fabs(av) * bb;
            }
        }
        for (std::int64_t r = 0; r < kRowBlock; ++r) {
            std::memcpy(p + r * kColBlock + j, &pa[r], sizeof(Doubles));
            std::memcpy(s + r * kColBlock + j, &sa[r], sizeof(Doubles));
        }
    }
}

}  // namespace

float load_element(Type t, const void* buf, std::int64_t idx) {
    const auto* p = static_cast<const std::uint8_t*>(buf);
    std::uint16_t h = 0;
    float f = 0;
    switch (t) {
        case Type::f32: std::memcpy(&f, p + idx * 4, 4); return f;
        case Type::bf16: std::memcpy(&h, p + idx * 2, 2); return bf16_to_f32(h);
        case Type::f16: std::memcpy(&h, p + idx * 2, 2); return f16_to_f32(h);
        case Type::e4m3: return e4m3_to_f32(p[idx]);
        case Type::e5m2: return e5m2_to_f32(p[idx]);
    }
    return 0;
}

void store_element(Type t, void* buf, std::int64_t idx, float value) {
    auto* p = static_cast<std::uint8_t*>(buf);
    std::uint16_t h = 0;
    switch (t) {
        case Type::f32: std::memcpy(p + idx * 4, &value, 4); return;
        case Type::bf16: h = f32_to_bf16(value); break;
        case Type::f16: h = f32_to_f16(value); break;
        case Type::e4m3: p[idx] = f32_to_e4m3(value, Overflow::saturate); return;
        case Type::e5m2: p[idx] = f32_to_e5m2(value, Overflow::saturate); return;
    }
    std::memcpy(p + idx * 2, &h, 2);
}

BufferSizes buffer_sizes(const Desc& desc, float beta) {
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueTraits e = traits(d.epilogue);
    BufferSizes s;
    s.a = matrix_bytes(rows_a(d), d.lda, d.a_type);
    s.b = matrix_bytes(rows_b(d), d.ldb, d.b_type);
    s.c = beta != 0.0f ? matrix_bytes(d.m, d.ldc, d.d_type) : 0;
    s.d = matrix_bytes(d.m, d.ldd, d.d_type);
    s.bias = e.bias ? matrix_bytes(1, d.n, bias_type(d)) : 0;
    s.aux = e.aux_in || e.aux_out ? matrix_bytes(d.m, d.ldaux, d.d_type) : 0;
    s.bgrad = e.bgrad ? static_cast<std::size_t>(d.n) * sizeof(float) : 0;
    return s;
}

HostInputs random_inputs(const Desc& desc, std::uint64_t seed, float alpha, float beta) {
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueTraits e = traits(d.epilogue);
    Rng rng(seed);
    HostInputs in;
    in.alpha = alpha;
    in.beta = beta;
    in.a = random_matrix(d.a_type, rows_a(d), d.a_op == Op::n ? d.k : d.m, d.lda, rng, -1, 1);
    in.b = random_matrix(d.b_type, rows_b(d), d.b_op == Op::n ? d.n : d.k, d.ldb, rng, -1, 1);
    if (beta != 0.0f) in.c = random_matrix(d.d_type, d.m, d.n, d.ldc, rng, -1, 1);
    if (e.bias) in.bias = random_matrix(bias_type(d), 1, d.n, d.n, rng, -1, 1);
    if (e.aux_in) in.aux = random_matrix(d.d_type, d.m, d.n, d.ldaux, rng, -4, 4);
    return in;
}

ElementBound element_bound(const Desc& desc, const HostInputs& in, std::int64_t row, std::int64_t col, Path path) {
    const Model m = make_model(desc, in, path);
    std::vector<float> a(static_cast<std::size_t>(m.d.k));
    op_a_row(m.d, in, row, a.data());
    double p = 0, s = 0;
    for (std::int64_t k = 0; k < m.d.k; ++k) {
        const double b =
            load_element(m.d.b_type, in.b.data(), m.d.b_op == Op::n ? k * m.d.ldb + col : col * m.d.ldb + k);
        p += static_cast<double>(a[static_cast<std::size_t>(k)]) * b;
        s += std::fabs(static_cast<double>(a[static_cast<std::size_t>(k)]) * b);
    }
    return bound(m, in, row, col, p, s);
}

GemmVerdict verify_gemm(const Desc& desc, const HostInputs& in, const DeviceOutputs& out, std::uint64_t seed,
                        int threads, const VerifyOptions& opt) {
    const Model m = make_model(desc, in, opt.path);
    const Desc& d = m.d;
    threads = std::max(threads, 1);
    check_buffers(m, in, out);
    GemmVerdict v;
    v.acc_tolerance = m.acc;

    const std::vector<std::int64_t> rows = checked_rows(d, opt.full_limit, seed);
    const bool all_rows = static_cast<std::int64_t>(rows.size()) == d.m;
    v.checked_rows = static_cast<std::int64_t>(rows.size());

    // Poison, NaN and padding over every element written.
    std::vector<double> d_col_sum, d_col_abs;
    const bool sampled_bgrad = m.e.bgrad && !all_rows;
    const Scan sd = scan_output(d, d.d_type, out.d, d.ldd, threads, sampled_bgrad ? &d_col_sum : nullptr,
                                sampled_bgrad ? &d_col_abs : nullptr);
    Scan sa;
    if (m.e.aux_out) sa = scan_output(d, d.d_type, out.aux, d.ldaux, threads, nullptr, nullptr);
    v.unwritten = sd.unwritten + sa.unwritten;
    v.padding_written = sd.padding + sa.padding;
    v.nan_count = sd.nan + sa.nan;
    if (m.e.bgrad)
        for (std::int64_t j = 0; j < d.n; ++j) v.nan_count += std::isnan(out.bgrad[j]) ? 1 : 0;

    // The reference of the checked rows, in blocks of kRowBlock rows x kColBlock
    // columns (the float64 partial sums of a block stay in L1).
    const std::int64_t r_count = v.checked_rows;
    const std::int64_t row_blocks = (r_count + kRowBlock - 1) / kRowBlock;
    std::vector<float> a_rows(static_cast<std::size_t>(row_blocks * kRowBlock * d.k), 0.0f);
    parallel_for(r_count, threads, [&](std::int64_t r0, std::int64_t r1, int) {
        for (std::int64_t r = r0; r < r1; ++r)
            op_a_row(d, in, rows[static_cast<std::size_t>(r)], a_rows.data() + r * d.k);
    });
    const std::int64_t ldbt = (d.n + kLanes - 1) / kLanes * kLanes;
    const std::vector<float> bt = op_b(d, in, ldbt, threads);
    const std::int64_t col_blocks = (d.n + kColBlock - 1) / kColBlock;
    std::vector<CompareState> state(static_cast<std::size_t>(threads));
    const int d_bytes = type_bytes(d.d_type);
    parallel_for(row_blocks * col_blocks, threads, [&](std::int64_t t0, std::int64_t t1, int w) {
        CompareState& st = state[static_cast<std::size_t>(w)];
        if (m.e.bgrad && all_rows) {
            st.ref_sum.assign(static_cast<std::size_t>(d.n), 0.0);
            st.allowed_sum.assign(static_cast<std::size_t>(d.n), 0.0);
            st.abs_sum.assign(static_cast<std::size_t>(d.n), 0.0);
        }
        std::vector<double> p(kRowBlock * kColBlock), s(kRowBlock * kColBlock);
        for (std::int64_t task = t0; task < t1; ++task) {
            const std::int64_t rb = task / col_blocks * kRowBlock, j0 = task % col_blocks * kColBlock;
            const std::int64_t nr = std::min(kRowBlock, r_count - rb), nc = std::min(kColBlock, d.n - j0);
            block_products(a_rows.data() + rb * d.k, d.k, bt.data() + j0, ldbt, nc, p.data(), s.data());
            for (std::int64_t r = 0; r < nr; ++r) {
                const std::int64_t i = rows[static_cast<std::size_t>(rb + r)];
                for (std::int64_t c = 0; c < nc; ++c) {
                    const std::int64_t j = j0 + c;
                    const ElementBound b = bound(m, in, i, j, p[static_cast<std::size_t>(r * kColBlock + c)],
                                                 s[static_cast<std::size_t>(r * kColBlock + c)]);
                    if (!st.ref_sum.empty()) {
                        st.ref_sum[static_cast<std::size_t>(j)] += b.d_ref;
                        st.allowed_sum[static_cast<std::size_t>(j)] += b.unrounded_allowed;
                        st.abs_sum[static_cast<std::size_t>(j)] += std::fabs(b.d_ref) + b.unrounded_allowed;
                    }
                    auto compare = [&](const void* buf, std::int64_t ld, double ref, double allowed, const char* what) {
                        if (is_poison(buf, i * ld + j, d_bytes)) return;  // counted by the scan
                        const double got = load_element(d.d_type, buf, i * ld + j);
                        if (std::isnan(got)) return;                       // counted by the scan
                        const double err = got == ref ? 0.0 : std::fabs(got - ref);
                        st.worst.offer(err, allowed, what, i, j, got, ref);
                    };
                    compare(out.d, d.ldd, b.d_ref, b.d_allowed, "D");
                    if (m.e.aux_out) compare(out.aux, d.ldaux, b.aux_ref, b.aux_allowed, "aux");
                }
            }
        }
    });
    Worst worst;
    for (const CompareState& st : state) worst.merge(st.worst);

    // bgrad: against the reference's column sums when every row is checked,
    // else against the column sums of the D the device wrote.
    if (m.e.bgrad) {
        const double depth = static_cast<double>((d.m + kBgradRowsPerAdd - 1) / kBgradRowsPerAdd + kBgradRowsPerAdd);
        for (std::int64_t j = 0; j < d.n; ++j) {
            const auto jj = static_cast<std::size_t>(j);
            double ref = 0, allowed = 0;
            if (all_rows) {
                double abs = 0;
                for (const CompareState& st : state) {
                    if (st.ref_sum.empty()) continue;
                    ref += st.ref_sum[jj];
                    allowed += st.allowed_sum[jj];
                    abs += st.abs_sum[jj];
                }
                allowed += depth * kU32 * abs;
            } else {
                ref = d_col_sum[jj];
                const double v_abs = (d_col_abs[jj] + static_cast<double>(d.m) * m.out.eta) / (1.0 - m.out.u);
                allowed = m.out.u * v_abs + static_cast<double>(d.m) * m.out.eta + depth * kU32 * v_abs;
            }
            // Added into what bgrad held: one more term of the sum, in any of its atomic additions.
            if (out.bgrad_before) {
                ref += out.bgrad_before[j];
                allowed += depth * kU32 * std::fabs(static_cast<double>(out.bgrad_before[j]));
            }
            const double got = out.bgrad[j];
            if (std::isnan(got)) continue;
            worst.offer(std::fabs(got - ref), allowed, "bgrad", -1, j, got, ref);
        }
    }
    v.err_max_scaled = worst.ratio;
    v.worst = worst.where;

    const std::int64_t total = d.m * d.n;
    if (v.unwritten > 0) {
        v.reason = std::to_string(v.unwritten) + " of the " + std::to_string(total * (m.e.aux_out ? 2 : 1)) +
                   " elements of D" + (m.e.aux_out ? " and aux" : "") + " were never written";
    } else if (v.padding_written > 0) {
        v.reason = std::to_string(v.padding_written) + " elements in the padding between rows (ld > N) were written";
    } else if (v.nan_count > 0) {
        v.reason = std::to_string(v.nan_count) + " outputs are NaN where the reference is finite";
    } else if (v.err_max_scaled > v.tolerance) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " (%.3g allowances off)", v.err_max_scaled);
        v.reason = worst.detail + buf;
    }
    v.pass = v.reason.empty();
    return v;
}

}  // namespace rigel::gemm
