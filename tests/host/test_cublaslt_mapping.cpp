// Host tests of the row-major to column-major mapping the cuBLASLt baseline hands to
// cublasLtMatmul (src/cuda/vendor/cublaslt_gemm.hpp): a column-major GEMM computed from the
// mapped operands, transposes and leading dimensions must write exactly rigel's D (gemm.hpp's
// storage rules) in every layout, with leading dimensions larger than the extents. Also the
// baseline's pure choices: the bias gradient's type where cuBLASLt refuses rigel's, and the block
// scales' modes and layouts (src/cuda/vendor/cublaslt_block_scaled.hpp), held to rigel's float64
// block-scaled reference through the same column-major reading.
#include "cuda/vendor/cublaslt_gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/block_scaling.hpp"
#include "cuda/hopper/block_scaled.hpp"
#include "cuda/vendor/cublaslt_block_scaled.hpp"

namespace {

using rigel::BlockScaled;
using rigel::cuda::vendor::lt_gemm;
using rigel::cuda::vendor::LtGemm;
using rigel::cuda::vendor::LtMatrix;
using rigel::cuda::vendor::LtScaleMode;
using rigel::gemm::Desc;
using rigel::gemm::Epilogue;
using rigel::gemm::Op;
using rigel::gemm::Type;

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

// cuBLASLt's default vector type: D's, except bf16 beside fp8 operands and an f32 D (cublasLt.h's
// BIAS_DATA_TYPE); rigel's: the bias in D's type, the bias gradient f32.
TEST(CublasltBgrad, DefaultAndRigelsVectorTypes) {
    using rigel::cuda::vendor::lt_default_vector_type;
    using rigel::cuda::vendor::rigel_vector_type;
    EXPECT_EQ(lt_default_vector_type(Desc{.d_type = Type::bf16}), Type::bf16);
    EXPECT_EQ(lt_default_vector_type(Desc{.d_type = Type::f16}), Type::f16);
    EXPECT_EQ(lt_default_vector_type(Desc{.d_type = Type::f32}), Type::f32);
    EXPECT_EQ(lt_default_vector_type(Desc{.a_type = Type::e4m3, .b_type = Type::e4m3, .d_type = Type::f32}),
              Type::bf16);
    EXPECT_EQ(lt_default_vector_type(Desc{.a_type = Type::e5m2, .b_type = Type::e4m3, .d_type = Type::bf16}),
              Type::bf16);
    EXPECT_EQ(rigel_vector_type(Desc{.d_type = Type::bf16, .epilogue = Epilogue::bias}), Type::bf16);
    EXPECT_EQ(rigel_vector_type(Desc{.d_type = Type::f32, .epilogue = Epilogue::bias_gelu}), Type::f32);
    EXPECT_EQ(rigel_vector_type(Desc{.d_type = Type::bf16, .epilogue = Epilogue::dgelu_bgrad}), Type::f32);
}

// GPT-2's backward product (bf16 D, dgelu_bgrad): the baseline falls back to cuBLASLt's bf16 gradient,
// and the row says so in these words.
TEST(CublasltBgrad, OwnGradientTypeAndNote) {
    using rigel::cuda::vendor::lt_own_bgrad_note;
    using rigel::cuda::vendor::lt_own_bgrad_type;
    const Desc gpt2{.m = 16384, .n = 3072, .k = 768, .d_type = Type::bf16, .epilogue = Epilogue::dgelu_bgrad};
    ASSERT_EQ(lt_own_bgrad_type(gpt2), std::optional<Type>(Type::bf16));
    EXPECT_EQ(lt_own_bgrad_note(*lt_own_bgrad_type(gpt2)), "bias gradient in bf16, cuBLASLt's only type for it");
    EXPECT_EQ(lt_own_bgrad_type(Desc{.d_type = Type::f16, .epilogue = Epilogue::dgelu_bgrad}),
              std::optional<Type>(Type::f16));
    // Nothing to fall back to: the default is rigel's f32 already.
    EXPECT_EQ(lt_own_bgrad_type(Desc{.d_type = Type::f32, .epilogue = Epilogue::dgelu_bgrad}), std::nullopt);
    // A bias is an input in rigel's type: never converted, whatever cuBLASLt's default.
    for (Epilogue e : {Epilogue::none, Epilogue::bias, Epilogue::bias_relu, Epilogue::bias_gelu,
                       Epilogue::bias_gelu_aux})
        EXPECT_EQ(lt_own_bgrad_type(Desc{.a_type = Type::e4m3, .b_type = Type::e4m3, .a_op = Op::n, .b_op = Op::t,
                                         .d_type = Type::f32, .epilogue = e}),
                  std::nullopt)
            << rigel::gemm::name(e);
}

// Values whose size changes from block to block, so that a scale applied to the wrong block shows.
std::vector<float> blocky(std::size_t rows, std::size_t cols, int seed) {
    std::vector<float> x(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
            const int block = static_cast<int>((r / 128) * 7 + r % 5 + (c / 128) * 3) + seed;
            const double wave = std::sin(0.37 * static_cast<double>(r * cols + c) + seed);
            x[r * cols + c] = static_cast<float>(std::ldexp(wave, block % 9 - 4));
        }
    return x;
}

BlockScaled quantized(std::size_t rows, std::size_t k, int block_rows, int seed) {
    return rigel::quantize_blocks(blocky(rows, k, seed), rows, k, block_rows, 128, rigel::DType::e4m3);
}

TEST(CublasltBlockScales, ModesOfDeepSeeksRecipe) {
    using rigel::cuda::vendor::kLtDeepSeekModes;
    using rigel::cuda::vendor::lt_block_scale_modes;
    using rigel::cuda::vendor::lt_scale_mode_of;
    const BlockScaled a = quantized(3, 256, 1, 1), b = quantized(130, 256, 128, 2);
    EXPECT_EQ(lt_scale_mode_of(a), LtScaleMode::vec128);
    EXPECT_EQ(lt_scale_mode_of(b), LtScaleMode::blk128x128);
    // cuBLASLt's A is rigel's B: BLK128x128_32F on its A, VEC128_32F on its B.
    const auto modes = lt_block_scale_modes(a, b);
    EXPECT_EQ(modes.a, LtScaleMode::blk128x128);
    EXPECT_EQ(modes.b, LtScaleMode::vec128);
    EXPECT_EQ(modes.a, kLtDeepSeekModes.a);
    EXPECT_EQ(modes.b, kLtDeepSeekModes.b);
    EXPECT_THROW(lt_scale_mode_of(rigel::quantize_blocks(blocky(2, 128, 0), 2, 128, 1, 64)), std::invalid_argument);
    EXPECT_THROW(lt_scale_mode_of(rigel::quantize_blocks(blocky(128, 128, 0), 128, 128, 64, 128)),
                 std::invalid_argument);
}

// k38's A scales (b scale_ld(M) + row) are VEC128_32F's layout as they are, M a multiple of 4 or not;
// B's are repacked, k-blocks side by side within each 128-row block, padded to 4.
TEST(CublasltBlockScales, LayoutsAgainstK38s) {
    using namespace rigel::cuda::vendor;
    for (std::size_t m : {1, 3, 4, 129}) {
        const BlockScaled a = quantized(m, 300, 1, 3);
        EXPECT_EQ(lt_block_scales(a), a.scales_block_major(static_cast<std::size_t>(rigel::cuda::scale_ld(
                                          static_cast<std::int64_t>(m)))))
            << "M " << m;
    }
    const std::size_t n = 300, k = 1104;  // 3 blocks of rows, 9 of K (rounded up to 12)
    const BlockScaled b = quantized(n, k, 128, 4);
    const std::vector<float> lt = lt_block_scales(b);
    ASSERT_EQ(lt.size(), static_cast<std::size_t>(lt_blk128_count(n, k)));
    EXPECT_EQ(lt.size(), 3u * 12u);
    for (std::int64_t jb = 0; jb < 3; ++jb)
        for (std::int64_t kb = 0; kb < 12; ++kb) {
            const float want = kb < 9 ? b.scales[static_cast<std::size_t>(jb * 9 + kb)] : 0.0f;
            EXPECT_EQ(lt[static_cast<std::size_t>(lt_blk128_index(jb, kb, k))], want) << jb << ", " << kb;
        }
}

// What cuBLASLt computes from the mapped operands (its A rigel's B, read K x N column-major with op T;
// its B rigel's A, K x M with op N), each product scaled through the layouts above, must be rigel's
// block-scaled product, D read back row-major (cuBLASLt's N x M column-major D).
TEST(CublasltBlockScales, MappedScaledProductIsRigelsReference) {
    using namespace rigel::cuda::vendor;
    const std::int64_t m = 5, n = 130, k = 300;
    const BlockScaled a = quantized(m, k, 1, 5), b = quantized(n, k, 128, 6);
    const std::vector<float> a_lt = lt_block_scales(a), b_lt = lt_block_scales(b);
    const Desc desc{.m = m, .n = n, .k = k, .a_type = Type::e4m3, .b_type = Type::e4m3, .a_op = Op::n,
                    .b_op = Op::t, .d_type = Type::f32};
    const LtGemm g = lt_gemm(desc);
    ASSERT_TRUE(g.trans_a);
    ASSERT_FALSE(g.trans_b);
    const std::vector<double> ref = rigel::block_scaled_reference(a, b);
    double worst = 0;
    for (std::int64_t i = 0; i < g.m; ++i)      // cuBLASLt's rows: rigel's columns (N)
        for (std::int64_t j = 0; j < g.n; ++j) {  // its columns: rigel's rows (M)
            double sum = 0;
            for (std::int64_t p = 0; p < g.k; ++p) {
                // op(A)(i, p): column i of B's storage read column-major, ld K.
                const double av = b.values[static_cast<std::size_t>(p + i * g.a.ld)];
                const double bv = a.values[static_cast<std::size_t>(p + j * g.b.ld)];
                const double sa = b_lt[static_cast<std::size_t>(lt_blk128_index(i / 128, p / 128, k))];
                const double sb = a_lt[static_cast<std::size_t>(lt_vec128_index(j, p / 128, m))];
                sum += av * sa * bv * sb;
            }
            const double want = ref[static_cast<std::size_t>(j * n + i)];
            worst = std::max(worst, std::fabs(sum - want) / std::max(std::fabs(want), 1e-300));
        }
    EXPECT_LT(worst, 1e-12);
}

}  // namespace
