// Host tests of the core: shapes, recipes, the reference and the verification
// gate, timing statistics, the writers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/recipe.hpp"
#include "core/reference.hpp"
#include "harness/report_io.hpp"
#include "harness/timing.hpp"
#include "ladder/runner.hpp"
#include "probes/numerics/emulate.hpp"
#include "temp_dir.hpp"

using namespace rigel;

namespace {

std::string read_file(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

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

TEST(Reference, SampledBlocksAreAtMost32Rows) {
    // 16384^3 over the default limit asked for one row in 256 (64 of 16384,
    // half of every 128-row tile's rows never among them); the block is
    // capped so that each 32 rows hold one. Here work / limit is 6000.
    std::vector<double> a(1024 * 4, 1.0), b(4 * 6, 1.0);
    const Reference r = compute_reference(a, b, 1024, 6, 4, 3, 1, /*full_limit=*/4.096);
    for (std::int64_t blk = 0; blk < 1024 / kMaxRowBlock; ++blk)
        EXPECT_TRUE(std::any_of(r.rows.begin(), r.rows.end(),
                                [&](std::int64_t x) { return x / kMaxRowBlock == blk; }))
            << "rows " << blk * kMaxRowBlock << "..";
    EXPECT_LE(r.rows.size(), static_cast<std::size_t>(1024 / kMaxRowBlock + 2));
    // Sampled: every row is still checked as a whole.
    EXPECT_EQ(r.x.size(), 6u);
    EXPECT_EQ(r.product_x.size(), 1024u);
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
    // The likely bound, 8 sqrt(K) u for fp32 accumulation, floored at 16 u;
    // fp8's floored at 64 u (u = 2^-14); never above the worst case 2 K u.
    EXPECT_DOUBLE_EQ(element_tolerance(DType::f32, 1024), 8 * 32 * 0x1p-24);
    EXPECT_DOUBLE_EQ(element_tolerance(DType::bf16, 1), 16 * 0x1p-24);
    EXPECT_DOUBLE_EQ(element_tolerance(DType::e4m3, 4096), 64 * 0x1p-14);
    EXPECT_DOUBLE_EQ(element_tolerance(DType::e4m3, 16384), 128 * 0x1p-14);
    EXPECT_DOUBLE_EQ(element_tolerance(DType::e4m3, 16), 2 * 16 * 0x1p-14);
    for (const auto& d : dtype_table())
        for (std::int64_t k : {1, 7, 64, 1000, 4096, 65536, 1 << 22}) {
            const double u = d.unit_roundoff_accum;
            EXPECT_LE(element_tolerance(d.type, k), std::min(d.elem_tol_cap, std::max(16 * u, 2.0 * k * u)))
                << d.name << " K=" << k;
        }
}

namespace {

// An operand's values rounded to tf32 (10 fraction bits, to nearest even), as
// a tensor core reads fp32 inputs in TF32 mode.
std::vector<double> tf32_rounded(std::vector<double> v) {
    for (double& x : v) {
        std::uint32_t w = 0;
        const float f = static_cast<float>(x);
        std::memcpy(&w, &f, 4);
        w = (w + 0xFFFu + ((w >> 13) & 1u)) & ~0x1FFFu;
        float r = 0;
        std::memcpy(&r, &w, 4);
        x = r;
    }
    return v;
}

// C = A B (A m x k, B k x n, row-major values) in float64 through the
// reference's own product, rounded once to f32: an exact rung.
std::vector<float> product_f32(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                               std::int64_t n, std::int64_t k) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) rows[static_cast<std::size_t>(i)] = i;
    std::vector<double> c(static_cast<std::size_t>(m * n));
    reference_rows(a.data(), b.data(), n, k, rows, c.data(), 2);
    return {c.begin(), c.end()};
}

struct Operands {
    std::vector<double> a, b;
};
Operands operands(DType t, std::int64_t m, std::int64_t n, std::int64_t k) {
    return {make_operand(t, Recipe::uniform, 5, 0, static_cast<std::size_t>(m), static_cast<std::size_t>(k),
                         KAxis::cols).values,
            make_operand(t, Recipe::uniform, 5, 1, static_cast<std::size_t>(k), static_cast<std::size_t>(n),
                         KAxis::rows).values};
}

}  // namespace

// Wrong results that the worst-case rule 2 K u let pass: each must fail now,
// while the same product done right passes.
TEST(Verify, FailsAnF32RungThatComputesInTf32) {
    const std::int64_t m = 128, n = 128, k = 1024;
    const Operands in = operands(DType::f32, m, n, k);
    const Reference r = compute_reference(in.a, in.b, m, n, k, 1, 2);
    EXPECT_TRUE(verify(DType::f32, product_f32(in.a, in.b, m, n, k).data(), r).pass);
    // A serial fp32 FMA chain, the honest rung at its plainest, passes too.
    std::vector<float> chain(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            float acc = 0;
            for (std::int64_t p = 0; p < k; ++p)
                acc = std::fma(static_cast<float>(in.a[i * k + p]), static_cast<float>(in.b[p * n + j]), acc);
            chain[i * n + j] = acc;
        }
    EXPECT_TRUE(verify(DType::f32, chain.data(), r).pass);
    const Verdict v = verify(DType::f32, product_f32(tf32_rounded(in.a), tf32_rounded(in.b), m, n, k).data(), r);
    EXPECT_FALSE(v.pass) << "err " << v.err_max_scaled << " tolerance " << v.tolerance;
}

TEST(Verify, FailsOneDroppedKTerm) {
    const std::int64_t m = 128, n = 128, k = 8192;
    Operands in = operands(DType::f32, m, n, k);
    const Reference r = compute_reference(in.a, in.b, m, n, k, 1, 2);
    EXPECT_TRUE(verify(DType::f32, product_f32(in.a, in.b, m, n, k).data(), r).pass);
    for (std::int64_t i = 0; i < m; ++i) in.a[i * k + 4321] = 0;  // the term k = 4321 never added
    const Verdict v = verify(DType::f32, product_f32(in.a, in.b, m, n, k).data(), r);
    EXPECT_FALSE(v.pass) << "err " << v.err_max_scaled << " tolerance " << v.tolerance;
}

TEST(Verify, FailsAnE4m3ResultMissingA32WideKSlice) {
    const std::int64_t m = 128, n = 128, k = 4096;
    Operands in = operands(DType::e4m3, m, n, k);
    const Reference r = compute_reference(in.a, in.b, m, n, k, 1, 2);
    EXPECT_TRUE(verify(DType::e4m3, product_f32(in.a, in.b, m, n, k).data(), r).pass);
    // The fp8 wgmma's own truncating sums (the k33 model, bit for bit) pass.
    std::vector<double> b_nk(in.b.size());
    for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t j = 0; j < n; ++j) b_nk[j * k + p] = in.b[p * n + j];
    const auto k33 = emulate::gemm(*emulate::path_named("wgmma_e4m3"), in.a, b_nk, m, n, k, {}, 2);
    const Verdict honest = verify(DType::e4m3, k33.data(), r);
    EXPECT_TRUE(honest.pass) << honest.reason;
    for (std::int64_t i = 0; i < m; ++i)  // one fp8 wgmma's K step (32 values) skipped
        for (std::int64_t p = 2048; p < 2048 + 32; ++p) in.a[i * k + p] = 0;
    const Verdict v = verify(DType::e4m3, product_f32(in.a, in.b, m, n, k).data(), r);
    EXPECT_FALSE(v.pass) << "err " << v.err_max_scaled << " tolerance " << v.tolerance;
}

// Sampled rows leave most of C unchecked element by element; the row check
// (C x against A (B x)) still sees a row that is wrong as a whole.
TEST(Verify, RowCheckCatchesAWrongRowTheSampleMissed) {
    const std::int64_t m = 512, n = 96, k = 64;
    const Operands in = operands(DType::f32, m, n, k);
    const Reference r = compute_reference(in.a, in.b, m, n, k, 1, 2, /*full_limit=*/1.0);
    ASSERT_FALSE(r.full());
    const auto good = product_f32(in.a, in.b, m, n, k);
    const Verdict ok = verify(DType::f32, good.data(), r);
    EXPECT_TRUE(ok.pass) << ok.reason;
    EXPECT_GT(ok.row_check, 0.0);
    EXPECT_LT(ok.row_check, 1.0);
    std::int64_t unchecked = 1;
    while (std::binary_search(r.rows.begin(), r.rows.end(), unchecked)) ++unchecked;

    auto copied = good;  // row `unchecked` holds its neighbour's values: an indexing bug
    std::copy_n(good.begin() + (unchecked + 1) * n, n, copied.begin() + unchecked * n);
    Verdict v = verify(DType::f32, copied.data(), r);
    EXPECT_FALSE(v.pass);
    EXPECT_NE(v.reason.find("row " + std::to_string(unchecked) + ":"), std::string::npos) << v.reason;

    auto inf = good;
    inf[static_cast<std::size_t>(unchecked * n + 5)] = std::numeric_limits<float>::infinity();
    v = verify(DType::f32, inf.data(), r);
    EXPECT_FALSE(v.pass) << "an infinity outside the sampled rows";
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
    const TimingConfig cfg{.warmup_s = 0.0, .min_time_s = 0.01, .min_reps = 7, .max_reps = 100, .max_time_s = 5.0};
    const TimingStats s = measure([&] { ++calls; return 0.001; }, cfg);
    // Seven reps add up to 0.007 s: the 0.01 s minimum asks for ten, no more.
    EXPECT_EQ(s.reps, 10);
    // A zero warm-up still runs one untimed repetition, and only one.
    EXPECT_EQ(calls, s.reps + 1);
}

TEST(Timing, OneRepetitionHasNoNoiseFigure) {
    const TimingStats one = summarize({0.25});
    EXPECT_EQ(one.reps, 1);
    EXPECT_DOUBLE_EQ(one.median_s, 0.25);
    EXPECT_TRUE(std::isnan(one.noise_rel)) << "a single sample says nothing of the spread";
    EXPECT_TRUE(std::isnan(summarize({}).noise_rel));
    EXPECT_DOUBLE_EQ(summarize({0.25, 0.25}).noise_rel, 0.0);
}

TEST(Timing, TheTimeCapWinsOverMinimumReps) {
    // Each repetition takes 20 ms of wall time and the cap is 10 ms: one
    // repetition, not min_reps, and the statistics say so.
    const TimingConfig cfg{.warmup_s = 0, .min_time_s = 0, .min_reps = 5, .max_reps = 100, .max_time_s = 0.01};
    const TimingStats s = measure(
        [] {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            return 0.02;
        },
        cfg);
    EXPECT_EQ(s.reps, 1);
    EXPECT_TRUE(s.capped);
    EXPECT_TRUE(std::isnan(s.noise_rel));
    const TimingStats quick = measure([] { return 0.001; }, TimingConfig{.warmup_s = 0, .min_time_s = 0,
                                                                          .min_reps = 3, .max_reps = 3});
    EXPECT_FALSE(quick.capped);
}

TEST(Timing, MeasureRefusesSettingsThatCouldRunForever) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    int calls = 0;
    const auto sample = [&] { ++calls; return 0.001; };
    for (double bad : {inf, nan, -1.0, kMaxMeasureSeconds * 2, 1e9}) {
        EXPECT_THROW(measure(sample, TimingConfig{.warmup_s = bad}), std::invalid_argument) << bad;
        EXPECT_THROW(measure(sample, TimingConfig{.min_time_s = bad}), std::invalid_argument) << bad;
    }
    EXPECT_THROW(measure(sample, TimingConfig{.max_time_s = inf}), std::invalid_argument);
    EXPECT_THROW(measure(sample, TimingConfig{.min_reps = 0}), std::invalid_argument);
    EXPECT_THROW(measure(sample, TimingConfig{.min_reps = 10, .max_reps = 5}), std::invalid_argument);
    EXPECT_EQ(calls, 0) << "a refused setting runs nothing";
    EXPECT_NO_THROW(check_timing_config(TimingConfig{.warmup_s = kMaxMeasureSeconds, .min_time_s = 0}));
}

TEST(Timing, RatesShowTheirOwnUnit) {
    EXPECT_EQ(format_rate(2.414, "Gflop/s"), "2.41 Gflop/s");
    EXPECT_EQ(format_rate(612300, "Gflop/s"), "612.3 Tflop/s");
    // Integer products are operations, not flops (the i8 rows once printed Tflop/s).
    EXPECT_EQ(format_rate(1417500, "Gop/s"), "1417.5 Top/s");
    EXPECT_EQ(format_rate(rate_unit(DType::i8) == "Gop/s" ? 12.5 : 0, rate_unit(DType::i8)), "12.50 Gop/s");
}

TEST(ReportIo, CsvQuotesAndRejectsRaggedRows) {
    EXPECT_EQ(csv_cell("plain"), "plain");
    EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(to_csv({"a", "b"}, {{"1", "2"}}), "a,b\n1,2\n");
    EXPECT_THROW(to_csv({"a", "b"}, {{"1"}}), std::logic_error);
}

TEST(ReportIo, AtomicWriteReplacesWholeFile) {
    const test::TempDir dir;
    const auto p = dir / "x.csv";
    write_file_atomic(p, "first\n");
    write_file_atomic(p, "second\n");
    EXPECT_EQ(read_file(p), "second\n");
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"x.csv"}) << "no temporary file left behind";
}

TEST(ReportIo, AtomicWriteThatFailsLeavesNoTemporaryFile) {
    const test::TempDir dir;
    // Renaming a file over a folder fails after the temporary file is written.
    std::filesystem::create_directory(dir / "taken.csv");
    EXPECT_THROW(write_file_atomic(dir / "taken.csv", "x\n"), std::runtime_error);
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"taken.csv"});
}

TEST(ClaimStem, TakesTheFirstStemWhoseEveryNameIsFreeAndTouchesNothing) {
    const test::TempDir dir;
    const std::vector<std::string> exts{".csv", ".json"};
    EXPECT_EQ(claim_stem(dir.path(), "d_c_ladder", "RUN", exts), "d_c_ladder");
    // Only the sidecar's name is taken, by someone else: the CSV name beside it
    // is not enough.
    std::ofstream(dir / "d_c_ladder_RUN.json") << "theirs";
    EXPECT_EQ(claim_stem(dir.path(), "d_c_ladder", "RUN", exts), "d_c_ladder_RUN_2");
    EXPECT_EQ(claim_stem(dir.path(), "d_c_ladder", "RUN", exts), "d_c_ladder_RUN_3");
    EXPECT_EQ(read_file(dir / "d_c_ladder_RUN.json"), "theirs");
    EXPECT_FALSE(std::filesystem::exists(dir / "d_c_ladder_RUN.csv")) << "a failed claim releases what it took";
    EXPECT_EQ(names_in(dir.path()).size(), 7u);
}

TEST(ClaimStem, RacingClaimsGetDifferentStems) {
    const test::TempDir dir;
    constexpr int kRuns = 8;
    std::vector<std::string> got(kRuns);
    std::vector<std::thread> runs;
    for (int i = 0; i < kRuns; ++i)
        runs.emplace_back([&, i] { got[i] = claim_stem(dir.path(), "d_c_ladder", "RUN", {".csv", ".json"}); });
    for (auto& t : runs) t.join();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "two runs claimed one stem";
    EXPECT_EQ(names_in(dir.path()).size(), 2u * kRuns);
}

TEST(ResultFiles, SidecarCountsTheRowsBesideItAndEarlierFilesStay) {
    const test::TempDir dir;
    std::ofstream(dir / "d_c_ladder.csv") << "earlier\n";
    const ResultFiles files(dir.path(), "d_c_ladder", "RUN");
    EXPECT_EQ(files.csv().filename(), "d_c_ladder_RUN.csv");
    EXPECT_EQ(files.json().filename(), "d_c_ladder_RUN.json");
    Sidecar side;
    side.run_id = "RUN";
    side.what = "ladder";
    side.seed = 18446744073709551615ull;
    side.suite = "bench";
    side.details.str("backend", "cpu");
    files.write({"a", "b"}, {{"1", "2"}}, side);
    side.interrupted = true;
    files.write({"a", "b"}, {{"1", "2"}, {"3", "4"}}, side);
    EXPECT_EQ(read_file(files.csv()), "a,b\n1,2\n3,4\n");
    const std::string json = read_file(files.json());
    EXPECT_NE(json.find("\"rows\": 2,"), std::string::npos) << json;
    EXPECT_NE(json.find("\"csv\": \"d_c_ladder_RUN.csv\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"seed\": 18446744073709551615,"), std::string::npos) << json;
    EXPECT_NE(json.find("\"interrupted\": true"), std::string::npos) << json;
    EXPECT_NE(json.find("\"backend\": \"cpu\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"suite\": \"bench\","), std::string::npos) << json;
    EXPECT_EQ(read_file(dir / "d_c_ladder.csv"), "earlier\n");
    EXPECT_EQ(names_in(dir.path()).size(), 3u) << "no temporary file left behind";
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
