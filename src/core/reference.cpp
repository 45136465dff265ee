// Float64 reference and verification gate.
#include "core/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
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
        const auto block = static_cast<std::int64_t>(std::ceil(work / full_limit));
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
    return R;
}

double element_tolerance(DType t, std::int64_t k) {
    const DTypeInfo& d = info(t);
    if (d.out == OutType::i32) return 0.0;
    const double u = d.unit_roundoff_accum;
    return std::min(d.elem_tol_cap, std::max(16.0 * u, 2.0 * static_cast<double>(k) * u));
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
    }
    v.pass = v.reason.empty();
    return v;
}

}  // namespace rigel
