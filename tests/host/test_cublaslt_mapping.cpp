// Host tests of the row-major to column-major mapping the cuBLASLt baseline hands to
// cublasLtMatmul (src/cuda/vendor/cublaslt_gemm.hpp): a column-major GEMM computed from the
// mapped operands, transposes and leading dimensions must write exactly rigel's D (gemm.hpp's
// storage rules) in every layout, with leading dimensions larger than the extents.
#include "cuda/vendor/cublaslt_gemm.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using rigel::cuda::vendor::lt_gemm;
using rigel::cuda::vendor::LtGemm;
using rigel::cuda::vendor::LtMatrix;
using rigel::gemm::Desc;
using rigel::gemm::Op;

// Every stored element, padding included, gets a distinct small integer, so that a wrong leading
// dimension or a swapped index changes the exact result.
std::vector<double> filled(std::int64_t rows, std::int64_t ld, int seed) {
    std::vector<double> v(static_cast<std::size_t>(rows * ld));
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<double>((i * 7 + static_cast<std::size_t>(seed)) % 23) - 11;
    return v;
}

// gemm.hpp: A op n is stored M x K (lda), op t K x M; B op n is stored K x N (ldb), op t N x K.
std::vector<double> rigel_d(const Desc& d, const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(static_cast<std::size_t>(d.m * d.ldd), 0.0);
    for (std::int64_t i = 0; i < d.m; ++i)
        for (std::int64_t j = 0; j < d.n; ++j) {
            double sum = 0.0;
            for (std::int64_t p = 0; p < d.k; ++p) {
                const double av = d.a_op == Op::n ? a[static_cast<std::size_t>(i * d.lda + p)]
                                                  : a[static_cast<std::size_t>(p * d.lda + i)];
                const double bv = d.b_op == Op::n ? b[static_cast<std::size_t>(p * d.ldb + j)]
                                                  : b[static_cast<std::size_t>(j * d.ldb + p)];
                sum += av * bv;
            }
            out[static_cast<std::size_t>(i * d.ldd + j)] = sum;
        }
    return out;
}

// Element (r, c) of op(X), X column-major as the mapping describes it; checks the bounds.
double op_at(const LtMatrix& x, bool trans, const std::vector<double>& data, std::int64_t r, std::int64_t c) {
    const std::int64_t row = trans ? c : r, col = trans ? r : c;
    EXPECT_LT(row, x.rows);
    EXPECT_LT(col, x.cols);
    return data[static_cast<std::size_t>(row + col * x.ld)];
}

// What cublasLtMatmul computes: D (m x n, column-major) = op(A) op(B), A and B as mapped.
std::vector<double> column_major_d(const LtGemm& g, const std::vector<double>& first,
                                   const std::vector<double>& second) {
    std::vector<double> out(static_cast<std::size_t>(g.d.ld * g.d.cols), 0.0);
    for (std::int64_t r = 0; r < g.m; ++r)
        for (std::int64_t c = 0; c < g.n; ++c) {
            double sum = 0.0;
            for (std::int64_t p = 0; p < g.k; ++p)
                sum += op_at(g.a, g.trans_a, first, r, p) * op_at(g.b, g.trans_b, second, p, c);
            out[static_cast<std::size_t>(r + c * g.d.ld)] = sum;
        }
    return out;
}

// The shapes cuBLASLt checks: op(A) is m x k, op(B) k x n, C, D and aux m x n, every ld >= rows.
void expect_consistent(const LtGemm& g) {
    EXPECT_EQ(g.trans_a ? g.a.cols : g.a.rows, g.m);
    EXPECT_EQ(g.trans_a ? g.a.rows : g.a.cols, g.k);
    EXPECT_EQ(g.trans_b ? g.b.cols : g.b.rows, g.k);
    EXPECT_EQ(g.trans_b ? g.b.rows : g.b.cols, g.n);
    for (const LtMatrix& x : {g.c, g.d, g.aux}) {
        EXPECT_EQ(x.rows, g.m);
        EXPECT_EQ(x.cols, g.n);
    }
    for (const LtMatrix& x : {g.a, g.b, g.c, g.d, g.aux}) EXPECT_GE(x.ld, x.rows);
}

TEST(CublasltMapping, EveryLayoutComputesRigelsD) {
    for (Op a_op : {Op::n, Op::t})
        for (Op b_op : {Op::n, Op::t}) {
            Desc d{.m = 5, .n = 7, .k = 3, .a_op = a_op, .b_op = b_op};
            d.lda = (a_op == Op::n ? d.k : d.m) + 3;
            d.ldb = (b_op == Op::n ? d.n : d.k) + 2;
            d.ldd = d.n + 4;
            d.ldc = d.n + 1;
            d.ldaux = d.n + 5;
            SCOPED_TRACE(rigel::gemm::layout_name(a_op, b_op));
            const std::vector<double> a = filled(a_op == Op::n ? d.m : d.k, d.lda, 1);
            const std::vector<double> b = filled(b_op == Op::n ? d.k : d.n, d.ldb, 5);
            const LtGemm g = lt_gemm(d);
            expect_consistent(g);
            EXPECT_EQ(g.d.ld, d.ldd);
            EXPECT_EQ(g.c.ld, d.ldc);
            EXPECT_EQ(g.aux.ld, d.ldaux);
            // cuBLASLt's first operand is rigel's B, its second rigel's A.
            EXPECT_EQ(column_major_d(g, b, a), rigel_d(d, a, b));
        }
}

TEST(CublasltMapping, PackedLeadingDimensionsAreTheStoredRowLengths) {
    const Desc d{.m = 9, .n = 4, .k = 6, .a_op = Op::t, .b_op = Op::n};
    const LtGemm g = lt_gemm(d);
    EXPECT_EQ(g.b.ld, 9);  // A stored K x M
    EXPECT_EQ(g.a.ld, 4);  // B stored K x N
    EXPECT_EQ(g.d.ld, 4);
    EXPECT_EQ(g.c.ld, 4);
    EXPECT_EQ(g.aux.ld, 4);
    expect_consistent(g);
}

// cuBLASLt's fp8 kernels take only A transposed and B not ("TN"): rigel's fp8 layout NT.
TEST(CublasltMapping, RigelsNtIsCublasltsTn) {
    const LtGemm g = lt_gemm(Desc{.m = 64, .n = 32, .k = 128, .a_type = rigel::gemm::Type::e4m3,
                                  .b_type = rigel::gemm::Type::e4m3, .a_op = Op::n, .b_op = Op::t});
    EXPECT_TRUE(g.trans_a);
    EXPECT_FALSE(g.trans_b);
    EXPECT_EQ(g.m, 32);
    EXPECT_EQ(g.n, 64);
}

}  // namespace
