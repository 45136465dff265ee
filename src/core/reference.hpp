// The float64 reference, computed from exactly the values the rung consumed, and
// the verification gate that compares a rung's output with it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace rigel {

// Reference values for a set of rows of C (all rows for problems small enough;
// a spread sample otherwise, see reference.cpp). `abs_ref` is sum_k |a_ik b_kj|,
// the scale against which accumulation error is judged.
struct Reference {
    std::int64_t m = 0, n = 0, k = 0;
    std::vector<std::int64_t> rows;  // which rows of C are checked
    std::vector<double> ref;         // rows.size() x n
    std::vector<double> abs_ref;     // rows.size() x n
    bool full() const { return static_cast<std::int64_t>(rows.size()) == m; }
};

// Rows checked: all when m*n*k <= full_limit, else one random row in every block
// of consecutive rows (so every row tile of any rung is touched) plus the first
// and the last row. a is m x k row-major, b is k x n row-major (values).
Reference compute_reference(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                            std::int64_t n, std::int64_t k, std::uint64_t seed, int threads,
                            double full_limit = 0x1p34);

// Float64 product of selected rows (dgemm when OpenBLAS is there, else rigel's
// own blocked loop); exposed for tests.
void reference_rows(const double* a, const double* b, std::int64_t n, std::int64_t k,
                    const std::vector<std::int64_t>& rows, double* out, int threads);

// The output poison: a NaN payload for float outputs, a value no int8 GEMM with
// K < 2^17 can produce for int32 outputs.
constexpr std::uint32_t kPoisonWord = 0x7FF8DEADu;

struct Verdict {
    bool pass = false;
    std::string reason;          // empty when pass
    double err_rel_fro = 0;      // ||C - ref||_F / ||ref||_F over the checked rows
    double err_max_scaled = 0;   // max |C - ref| / sum_k|a||b| over the checked rows
    double tolerance = 0;        // bound on err_max_scaled for this type and K
    std::int64_t nan_count = 0;  // over the whole output
    std::int64_t unwritten = 0;  // elements still holding the poison, whole output
    std::uint64_t out_hash = 0;
};

// Per-element tolerance: worst-case accumulation growth 2*K*u for the type's
// accumulator, floored at 16u, capped at the type's cap; exact for int8.
double element_tolerance(DType t, std::int64_t k);

Verdict verify(DType t, const void* out, const Reference& ref);

}  // namespace rigel
