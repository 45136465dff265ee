// Host tests of the core: shapes, recipes, the reference and the verification
// gate, timing statistics, the writers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/recipe.hpp"
#include "core/reference.hpp"
#include "harness/report_io.hpp"
#include "harness/timing.hpp"
#include "ladder/runner.hpp"

using namespace rigel;

TEST(Shape, ParsesCubesAndTriples) {
    const Shape c = parse_shape("17");
    EXPECT_EQ(c.m, 17);
    EXPECT_EQ(c.n, 17);
    EXPECT_EQ(c.k, 17);
    const Shape t = parse_shape("4096x11008x4096");
    EXPECT_EQ(t.m, 4096);
    EXPECT_EQ(t.n, 11008);
    EXPECT_EQ(t.k, 4096);
}

TEST(Shape, RejectsBadText) {
    for (const char* bad : {"0", "-3", "", "x", "12x", "1x2", "1x2x3x4", "abc", "1.5", "3000000000",
                            "2000000000x2000000000x2000000000"})
        EXPECT_THROW(parse_shape(bad), std::invalid_argument) << bad;
}

TEST(Recipe, SameSeedSameBytesOtherSeedOtherBytes) {
    const Operand a = make_operand(DType::bf16, Recipe::uniform, 7, 0, 1000);
    const Operand b = make_operand(DType::bf16, Recipe::uniform, 7, 0, 1000);
    const Operand c = make_operand(DType::bf16, Recipe::uniform, 8, 0, 1000);
    const Operand d = make_operand(DType::bf16, Recipe::uniform, 7, 1, 1000);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_NE(a.bytes, c.bytes);
    EXPECT_NE(a.bytes, d.bytes);
}

TEST(Recipe, ValuesAreTheExactValuesOfTheBytes) {
    for (DType t : {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::i8}) {
        const Operand op = make_operand(t, Recipe::normal, 3, 0, 4096);
        int nonzero = 0;
        for (std::size_t i = 0; i < op.count; ++i) {
            Operand one;
            one.type = t;
            one.bytes.assign(storage_bytes(t, 1), 0);
            one.values.resize(1);
            quantize_into(t, op.values[i], 0, one);  // re-quantizing an exact value is the identity
            EXPECT_EQ(one.values[0], op.values[i]);
            EXPECT_EQ(0, std::memcmp(one.bytes.data(), op.bytes.data() + i * one.bytes.size(), one.bytes.size()));
            nonzero += op.values[i] != 0;
        }
        EXPECT_GT(nonzero, 3500) << name(t) << ": inputs must not be mostly zeros";
    }
}

TEST(Recipe, SmallIntIsIntegral) {
    const Operand op = make_operand(DType::f16, Recipe::small_int, 1, 0, 1000);
    for (double v : op.values) {
        EXPECT_EQ(v, std::round(v));
        EXPECT_LE(std::fabs(v), 4.0);
    }
}

TEST(Recipe, TransposeMovesEveryElement) {
    const Operand op = make_operand(DType::f16, Recipe::uniform, 1, 0, 6 * 5);
    const Operand t = transposed(op, 6, 5);
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 5; ++c) EXPECT_EQ(t.values[c * 6 + r], op.values[r * 5 + c]);
}

namespace {

Reference small_reference(std::int64_t m, std::int64_t n, std::int64_t k, std::vector<double>& a,
                          std::vector<double>& b) {
    a = make_operand(DType::f32, Recipe::uniform, 1, 0, static_cast<std::size_t>(m * k)).values;
    b = make_operand(DType::f32, Recipe::uniform, 1, 1, static_cast<std::size_t>(k * n)).values;
    return compute_reference(a, b, m, n, k, 1, 2);
}

std::vector<float> exact_product(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                                 std::int64_t n, std::int64_t k) {
    std::vector<float> c(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = static_cast<float>(s);
        }
    return c;
}

}  // namespace

TEST(Reference, MatchesPlainLoop) {
    std::vector<double> a, b;
    const Reference r = small_reference(13, 7, 29, a, b);
    ASSERT_TRUE(r.full());
    for (std::int64_t i = 0; i < 13; ++i)
        for (std::int64_t j = 0; j < 7; ++j) {
            double s = 0, sa = 0;
            for (std::int64_t p = 0; p < 29; ++p) {
                s += a[i * 29 + p] * b[p * 7 + j];
                sa += std::fabs(a[i * 29 + p] * b[p * 7 + j]);
            }
            EXPECT_NEAR(r.ref[i * 7 + j], s, 1e-12);
            EXPECT_NEAR(r.abs_ref[i * 7 + j], sa, 1e-12);
        }
}

TEST(Reference, SampledRowsCoverEveryBlock) {
    std::vector<double> a(300 * 4, 1.0), b(4 * 5, 1.0);
    const Reference r = compute_reference(a, b, 300, 5, 4, 9, 1, /*full_limit=*/600.0);
    EXPECT_FALSE(r.full());
    EXPECT_EQ(r.rows.front(), 0);
    EXPECT_EQ(r.rows.back(), 299);
    // work 6000 over a limit of 600: one row in each block of 10.
    for (std::int64_t blk = 0; blk < 30; ++blk)
        EXPECT_TRUE(std::any_of(r.rows.begin(), r.rows.end(), [&](std::int64_t x) { return x / 10 == blk; }));
}

TEST(Verify, PassesTheRightAnswer) {
    std::vector<double> a, b;
    const Reference r = small_reference(31, 17, 45, a, b);
    auto c = exact_product(a, b, 31, 17, 45);
    const Verdict v = verify(DType::f32, c.data(), r);
    EXPECT_TRUE(v.pass) << v.reason;
    EXPECT_LT(v.err_max_scaled, 1e-7);
}

TEST(Verify, FailsUnwrittenNanAndWrongValues) {
    std::vector<double> a, b;
    const Reference r = small_reference(31, 17, 45, a, b);
    auto good = exact_product(a, b, 31, 17, 45);

    auto unwritten = good;
    std::memcpy(&unwritten[5], &kPoisonWord, 4);
    Verdict v = verify(DType::f32, unwritten.data(), r);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.unwritten, 1);

    auto nan = good;
    nan[7] = std::nanf("");
    v = verify(DType::f32, nan.data(), r);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.nan_count, 1);

    auto wrong = good;  // a swapped pair of outputs: an indexing bug
    std::swap(wrong[0], wrong[1]);
    v = verify(DType::f32, wrong.data(), r);
    EXPECT_FALSE(v.pass);

    auto off = good;  // one ulp-scale change passes, a 1e-3 relative change does not
    off[3] += 1e-3f * static_cast<float>(r.abs_ref[3]);
    EXPECT_FALSE(verify(DType::f32, off.data(), r).pass);
}

TEST(Verify, ToleranceGrowsWithKAndIsCapped) {
    EXPECT_LT(element_tolerance(DType::f32, 16), element_tolerance(DType::f32, 4096));
    EXPECT_LE(element_tolerance(DType::e4m3, 1 << 20), info(DType::e4m3).elem_tol_cap);
    EXPECT_EQ(element_tolerance(DType::i8, 4096), 0.0);
}

TEST(Timing, SummaryStatistics) {
    const TimingStats s = summarize({5, 1, 3, 2, 4});
    EXPECT_EQ(s.reps, 5);
    EXPECT_DOUBLE_EQ(s.median_s, 3);
    EXPECT_DOUBLE_EQ(s.min_s, 1);
    EXPECT_DOUBLE_EQ(s.mean_s, 3);
    EXPECT_NEAR(s.noise_rel, std::sqrt(2.5) / 3, 1e-12);
    EXPECT_NEAR(s.p10_s, 1.4, 1e-12);
    EXPECT_DOUBLE_EQ(gflops(1000, 1000, 1000, 1.0), 2.0);
}

TEST(Timing, MeasureHonoursMinimumRepsAndTime) {
    int calls = 0;
    TimingConfig cfg{0.0, 0.01, 7, 100, 5.0};
    const TimingStats s = measure([&] { ++calls; return 0.001; }, cfg);
    EXPECT_GE(s.reps, 7);
    EXPECT_GE(s.reps * 0.001, 0.01 - 1e-12);
    EXPECT_GT(calls, s.reps - 1);  // warm-up ran at least once
}

TEST(ReportIo, CsvQuotesAndRejectsRaggedRows) {
    EXPECT_EQ(csv_cell("plain"), "plain");
    EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(to_csv({"a", "b"}, {{"1", "2"}}), "a,b\n1,2\n");
    EXPECT_THROW(to_csv({"a", "b"}, {{"1"}}), std::logic_error);
}

TEST(ReportIo, AtomicWriteReplacesWholeFile) {
    const auto dir = std::filesystem::temp_directory_path() / "rigel_test_io";
    std::filesystem::create_directories(dir);
    const auto p = dir / "x.csv";
    write_file_atomic(p, "first\n");
    write_file_atomic(p, "second\n");
    std::ifstream f(p);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(s, "second\n");
    std::size_t n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++n;
    EXPECT_EQ(n, 1u) << "no temporary file left behind";
    std::filesystem::remove_all(dir);
}

TEST(ReportIo, JsonEscapesAndNests) {
    JsonObject inner;
    inner.str("k", "v\"q");
    JsonObject o;
    o.str("a", "line\nbreak").num("n", 1.5).integer("i", 3).boolean("b", true).object("o", inner);
    const std::string s = o.dump();
    EXPECT_NE(s.find("\"a\": \"line\\nbreak\""), std::string::npos);
    EXPECT_NE(s.find("\"v\\\"q\""), std::string::npos);
    EXPECT_NE(s.find("\"b\": true"), std::string::npos);
}
