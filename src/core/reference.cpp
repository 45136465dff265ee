// Float64 reference and verification gate.
#include "core/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

#include "core/hash.hpp"
#include "core/recipe.hpp"

#if RIGEL_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace rigel {
namespace {

#if !RIGEL_HAVE_OPENBLAS
// Plain blocked float64 product of the gathered rows: used when OpenBLAS is absent.
void blocked_rows(const double* a_rows, const double* b, std::int64_t r, std::int64_t n, std::int64_t k,
                  double* out, int threads) {
    std::fill(out, out + r * n, 0.0);
    auto work = [&](std::int64_t r0, std::int64_t r1) {
        constexpr std::int64_t kb = 256;
        for (std::int64_t k0 = 0; k0 < k; k0 += kb)
            for (std::int64_t i = r0; i < r1; ++i)
                for (std::int64_t p = k0; p < std::min(k, k0 + kb); ++p) {
                    const double av = a_rows[i * k + p];
                    const double* brow = b + p * n;
                    double* crow = out + i * n;
                    for (std::int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
                }
    };
    const std::int64_t t = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, r));
    std::vector<std::thread> pool;
    for (std::int64_t w = 0; w < t; ++w) pool.emplace_back(work, r * w / t, r * (w + 1) / t);
    for (auto& th : pool) th.join();
}
#endif

// Runs fn(begin, end) over [0, count) split into `threads` contiguous parts.
template <class Fn>
void parallel_for(std::int64_t count, int threads, Fn fn) {
    const std::int64_t t = std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(count, 1));
    if (t == 1) return fn(std::int64_t{0}, count);
    std::vector<std::thread> pool;
    for (std::int64_t w = 0; w < t; ++w) pool.emplace_back([=, &fn] { fn(count * w / t, count * (w + 1) / t); });
    for (auto& th : pool) th.join();
}

// Hoeffding's factor for the row check: a row of an output within tolerance
// fails with probability below 2 exp(-kRowLambda^2 / 2).
constexpr double kRowLambda = 8.0;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The row check's data (Reference::x and the rest): O(M K + K N) float64 work.
void add_row_check(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m, std::int64_t n,
                   std::int64_t k, std::uint64_t seed, int threads, Reference& R) {
    Rng rng(seed ^ 0x46524556ull);
    R.x.resize(static_cast<std::size_t>(n));
    for (double& v : R.x) v = (rng.next() >> 63) != 0 ? 1.0 : -1.0;
    std::vector<double> bx(static_cast<std::size_t>(k)), b_sum(bx.size()), b_max(bx.size());
    parallel_for(k, threads, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t p = p0; p < p1; ++p) {
            const double* row = b.data() + p * n;
            double s = 0, sa = 0, mx = 0;
            for (std::int64_t j = 0; j < n; ++j) {
                s += row[j] * R.x[static_cast<std::size_t>(j)];
                sa += std::fabs(row[j]);
                mx = std::max(mx, std::fabs(row[j]));
            }
            const auto at = static_cast<std::size_t>(p);
            bx[at] = s;
            b_sum[at] = sa;
            b_max[at] = mx;
        }
    });
    R.product_x.resize(static_cast<std::size_t>(m));
    R.row_sum.resize(R.product_x.size());
    R.row_max.resize(R.product_x.size());
    parallel_for(m, threads, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
            const double* row = a.data() + i * k;
            double s = 0, sa = 0, mx = 0;
            for (std::int64_t p = 0; p < k; ++p) {
                const auto q = static_cast<std::size_t>(p);
                s += row[p] * bx[q];
                sa += std::fabs(row[p]) * b_sum[q];
                mx += std::fabs(row[p]) * b_max[q];
            }
            const auto at = static_cast<std::size_t>(i);
            R.product_x[at] = s;
            R.row_sum[at] = sa;
            R.row_max[at] = mx;
        }
    });
}

}  // namespace

void reference_rows(const double* a, const double* b, std::int64_t n, std::int64_t k,
                    const std::vector<std::int64_t>& rows, double* out, int threads) {
    const auto r = static_cast<std::int64_t>(rows.size());
    std::vector<double> a_rows(static_cast<std::size_t>(r * k));
    for (std::int64_t i = 0; i < r; ++i)
        std::memcpy(a_rows.data() + i * k, a + rows[static_cast<std::size_t>(i)] * k, sizeof(double) * k);
#if RIGEL_HAVE_OPENBLAS
    (void)threads;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(r), static_cast<int>(n),
                static_cast<int>(k), 1.0, a_rows.data(), static_cast<int>(k), b, static_cast<int>(n), 0.0, out,
                static_cast<int>(n));
#else
    blocked_rows(a_rows.data(), b, r, n, k, out, threads);
#endif
}

Reference compute_reference(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                            std::int64_t n, std::int64_t k, std::uint64_t seed, int threads, double full_limit) {
    Reference R;
    R.m = m;
    R.n = n;
    R.k = k;
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    if (work <= full_limit) {
        for (std::int64_t i = 0; i < m; ++i) R.rows.push_back(i);
    } else {
        const auto block = std::min(kMaxRowBlock, static_cast<std::int64_t>(std::ceil(work / full_limit)));
        Rng rng(seed ^ 0x524f5753ull);
        R.rows.push_back(0);
        for (std::int64_t r0 = 0; r0 < m; r0 += block) {
            const std::int64_t span = std::min(block, m - r0);
            R.rows.push_back(r0 + static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(span)));
        }
        R.rows.push_back(m - 1);
        std::sort(R.rows.begin(), R.rows.end());
        R.rows.erase(std::unique(R.rows.begin(), R.rows.end()), R.rows.end());
    }
    const std::size_t cells = R.rows.size() * static_cast<std::size_t>(n);
    R.ref.resize(cells);
    R.abs_ref.resize(cells);
    reference_rows(a.data(), b.data(), n, k, R.rows, R.ref.data(), threads);
    std::vector<double> abs_a(a.size()), abs_b(b.size());
    std::transform(a.begin(), a.end(), abs_a.begin(), [](double x) { return std::fabs(x); });
    std::transform(b.begin(), b.end(), abs_b.begin(), [](double x) { return std::fabs(x); });
    reference_rows(abs_a.data(), abs_b.data(), n, k, R.rows, R.abs_ref.data(), threads);
    if (!R.full()) add_row_check(a, b, m, n, k, seed, threads, R);
    return R;
}

double element_tolerance(DType t, std::int64_t k) {
    const DTypeInfo& d = info(t);
    if (d.out == OutType::i32) return 0.0;
    const double u = d.unit_roundoff_accum;
    const double terms = static_cast<double>(std::max<std::int64_t>(k, 1));
    const double worst = std::min(d.elem_tol_cap, std::max(16.0 * u, 2.0 * terms * u));
    const double likely = std::max(d.tol_floor_u * u, d.tol_sqrt_k * std::sqrt(terms) * u);
    return std::min(worst, likely);
}

Verdict verify(DType t, const void* out, const Reference& ref) {
    Verdict v;
    const OutType ot = info(t).out;
    const std::int64_t total = ref.m * ref.n;
    auto value_at = [&](std::int64_t idx) -> double {
        switch (ot) {
            case OutType::f64: return static_cast<const double*>(out)[idx];
            case OutType::f32: return static_cast<const float*>(out)[idx];
            case OutType::i32: return static_cast<const std::int32_t*>(out)[idx];
        }
        return 0.0;
    };
    auto is_poison = [&](std::int64_t idx) -> bool {
        std::uint32_t w[2];
        if (ot == OutType::f64) {
            std::memcpy(w, static_cast<const unsigned char*>(out) + idx * 8, 8);
            return w[0] == kPoisonWord && w[1] == kPoisonWord;
        }
        std::memcpy(w, static_cast<const unsigned char*>(out) + idx * 4, 4);
        return w[0] == kPoisonWord;
    };
    for (std::int64_t idx = 0; idx < total; ++idx) {
        if (is_poison(idx)) {
            ++v.unwritten;
        } else if (std::isnan(value_at(idx))) {
            ++v.nan_count;
        }
    }
    v.out_hash = hash64(out, out_bytes(t, static_cast<std::size_t>(total)));
    v.tolerance = element_tolerance(t, ref.k);

    double num = 0, den = 0, worst = 0;
    bool exact_violation = false;
    for (std::size_t r = 0; r < ref.rows.size(); ++r) {
        for (std::int64_t j = 0; j < ref.n; ++j) {
            const std::size_t cell = r * static_cast<std::size_t>(ref.n) + static_cast<std::size_t>(j);
            const double c = value_at(ref.rows[r] * ref.n + j);
            const double e = std::fabs(c - ref.ref[cell]);
            if (std::isnan(e)) continue;  // counted above
            num += e * e;
            den += ref.ref[cell] * ref.ref[cell];
            const double scale = ref.abs_ref[cell];
            if (scale > 0) {
                worst = std::max(worst, e / scale);
            } else if (e != 0) {
                exact_violation = true;
            }
        }
    }
    v.err_rel_fro = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    v.err_max_scaled = worst;

    // Every row as a whole, where only a sample was checked element by
    // element: |(C x)_i - (A (B x))_i| = |sum_j E_ij x_j| for the error E of
    // row i, against Hoeffding's bound kRowLambda sqrt(sum_j E_ij^2) with
    // |E_ij| <= tolerance S_ij, and sum_j S_ij^2 <= max_j S_ij sum_j S_ij;
    // plus the float64 rounding of both sides, below (N + K + 2) 2^-53
    // (sum_j S_ij + sum_j |C_ij|) since every product in them is exact.
    std::int64_t bad_row = -1;
    double bad_residual = 0, bad_allowance = 0;
    if (!ref.x.empty() && v.unwritten == 0 && v.nan_count == 0) {
        const double terms = static_cast<double>(ref.n + ref.k + 2);
        const double gamma = terms * 0x1p-53 / (1.0 - terms * 0x1p-53);
        for (std::int64_t i = 0; i < ref.m; ++i) {
            double cx = 0, c_abs = 0;
            for (std::int64_t j = 0; j < ref.n; ++j) {
                const double c = value_at(i * ref.n + j);
                cx += c * ref.x[static_cast<std::size_t>(j)];
                c_abs += std::fabs(c);
            }
            const auto at = static_cast<std::size_t>(i);
            const double residual = std::fabs(cx - ref.product_x[at]);
            // (1 + gamma): row_max and row_sum are float64 sums themselves.
            const double allowance =
                kRowLambda * v.tolerance * std::sqrt(ref.row_max[at] * ref.row_sum[at]) * (1.0 + gamma) +
                gamma * (ref.row_sum[at] + c_abs);
            // An infinite element makes the residual infinite or NaN: that row fails.
            const double ratio = !std::isfinite(residual) ? kInfinity
                                 : allowance > 0          ? residual / allowance
                                 : residual > 0           ? kInfinity
                                                          : 0.0;
            if (ratio > v.row_check) {
                v.row_check = ratio;
                bad_row = i, bad_residual = residual, bad_allowance = allowance;
            }
        }
    }
    if (v.unwritten > 0) {
        v.reason = std::to_string(v.unwritten) + " of " + std::to_string(total) + " outputs never written";
    } else if (v.nan_count > 0) {
        v.reason = std::to_string(v.nan_count) + " outputs are NaN";
    } else if (exact_violation) {
        v.reason = "nonzero output where every product is zero";
    } else if (worst > v.tolerance) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "max scaled error %.3g exceeds tolerance %.3g", worst, v.tolerance);
        v.reason = buf;
    } else if (v.row_check > 1) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "row %lld: |C x - A (B x)| = %.3g exceeds its allowance %.3g (row check)",
                      static_cast<long long>(bad_row), bad_residual, bad_allowance);
        v.reason = buf;
    }
    v.pass = v.reason.empty();
    return v;
}

}  // namespace rigel
