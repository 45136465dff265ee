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
    // With sampled rows, every row is still checked as a whole (Freivalds):
    // row i of C x against (A (B x))_i for one vector x of random signs, n
    // long, all in float64. `product_x` is A (B x) (m values); `row_sum` is
    // sum_j S_ij and `row_max` a bound on max_j S_ij, S_ij = sum_k |a_ik b_kj|
    // (m values each): verify() derives each row's allowance from them. All
    // four are empty when every row is checked element by element.
    std::vector<double> x, product_x, row_sum, row_max;
    bool full() const { return static_cast<std::int64_t>(rows.size()) == m; }
};

// The longest block of consecutive rows that a sampled reference checks one
// row of: every 128-row tile of a rung holds at least three checked rows (four
// when the block is 32, one per quarter), and the float64 work stays about
// max(full_limit, M N K / 32) multiply-adds, twice (the values and sum |a b|),
// plus the row check's O(M K + K N).
inline constexpr std::int64_t kMaxRowBlock = 32;

// Rows checked: all when m*n*k <= full_limit, else one random row in every block
// of consecutive rows (ceil(m*n*k / full_limit) rows, at most kMaxRowBlock, so
// every row tile of any rung is touched) plus the first and the last row. a is
// m x k row-major, b is k x n row-major (values).
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
    // ||C - ref||_F / ||ref||_F over the checked rows; reported, not gated:
    // with truncating accumulators it grows with K (to 3e-3 for honest fp8 at
    // K = 16384) past what some wrong results give.
    double err_rel_fro = 0;
    double err_max_scaled = 0;   // max |C - ref| / sum_k|a||b| over the checked rows
    double tolerance = 0;        // bound on err_max_scaled for this type and K
    // Sampled references: max over all rows of |C x - A (B x)| over its
    // allowance (above 1 fails); 0 when every row is checked element by element.
    double row_check = 0;
    std::int64_t nan_count = 0;  // over the whole output
    std::int64_t unwritten = 0;  // elements still holding the poison, whole output
    std::uint64_t out_hash = 0;
};

// Per-element tolerance, as a share of sum_k |a b|: the likely bound
// max(tol_floor_u u, tol_sqrt_k sqrt(K) u) of the type's accumulator (dtype.cpp
// says why), never above the worst case min(cap, max(16 u, 2 K u)); exact
// (0) for int8.
double element_tolerance(DType t, std::int64_t k);

// Fails an output with unwritten elements, NaNs, an error above the element
// tolerance in a checked row, or (sampled references) a row whose C x misses
// A (B x) by more than that tolerance allows: under Hoeffding's inequality
// over the random signs of x, an output whose every element is within
// tolerance fails a given row with probability below 2 exp(-32), about 3e-14.
Verdict verify(DType t, const void* out, const Reference& ref);

}  // namespace rigel
