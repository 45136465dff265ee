// The ladder runner on a registry of small host rungs written here: what each
// row says (verified, refused, failed, thrown), the ratios, the progress lines,
// the checkpoints and a stop request between measurements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/cpu_rungs.hpp"
#include "ladder/runner.hpp"
#include "ladder/suites.hpp"

namespace rigel {
namespace {

// C = A * B in f32 with B as K x N: the right answer.
void right_f32(const GemmProblem& p) {
    const auto* a = static_cast<const float*>(p.a);
    const auto* b = static_cast<const float*>(p.b);
    auto* c = static_cast<float*>(p.c);
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.n; ++j) {
            double s = 0;
            for (std::int64_t k = 0; k < p.k; ++k) s += double(a[i * p.k + k]) * double(b[k * p.n + j]);
            c[i * p.n + j] = static_cast<float>(s);
        }
}

// Every element written, every one wrong.
void wrong_f32(const GemmProblem& p) {
    right_f32(p);
    auto* c = static_cast<float*>(p.c);
    for (std::int64_t i = 0; i < p.m * p.n; ++i) c[i] += 1.0f;
}

void throws(const GemmProblem&) { throw std::runtime_error("launch failed"); }

std::string needs_even_k(const GemmProblem& p) { return p.k % 2 ? "K must be even" : ""; }

constexpr std::uint32_t kF32 = dtype_mask(DType::f32);

// A CPU rung of f32 with B as K x N; what differs between the test rungs is
// given, the rest is the same for all.
struct TestRung {
    std::string_view id;
    RunFn run = right_f32;
    CheckFn check = nullptr;
    int min_sm = 0;
    double max_work = 0;
    VendorRank vendor = VendorRank::none;
};

Rung make_rung(const TestRung& t) {
    return Rung{.id = t.id, .backend = Backend::cpu, .group = t.vendor == VendorRank::none ? "test" : "vendor",
                .dtypes = kF32, .b_layout = BLayout::k_by_n, .min_sm = t.min_sm, .parallel = false,
                .vendor = t.vendor, .max_work = t.max_work, .lesson = "", .run = t.run, .check = t.check};
}

const std::vector<Rung>& test_rungs() {
    static const std::vector<Rung> rungs{
        make_rung({.id = "k01_cpu_naive"}),
        make_rung({.id = "t_wrong", .run = wrong_f32}),
        make_rung({.id = "t_throws", .run = throws}),
        make_rung({.id = "t_even_k", .check = needs_even_k}),
        make_rung({.id = "t_small_only", .max_work = 100}),
        make_rung({.id = "t_sm90", .min_sm = 90}),
        make_rung({.id = "t_vendor", .vendor = VendorRank::primary}),
    };
    return rungs;
}

struct Fixture {
    std::unique_ptr<Executor> cpu = make_host_executor();
    std::unique_ptr<Executor> cuda = make_host_executor();  // never asked for: the options name the CPU only
    std::vector<std::string> lines;
    int checkpoints = 0;
    std::size_t last_checkpoint_rows = 0;
    LadderContext ctx;
    LadderOptions opts;

    Fixture() {
        ctx.cpu = cpu.get();
        ctx.cuda = cuda.get();
        ctx.progress = [this](const std::string& s) { lines.push_back(s); };
        ctx.checkpoint = [this](const std::vector<ResultRow>& rows) {
            ++checkpoints;
            last_checkpoint_rows = rows.size();
        };
        for (const Rung& r : test_rungs()) ctx.rungs.push_back(&r);
        opts.shapes = {parse_shape("9x7x5"), parse_shape("6x4x8")};
        opts.dtypes = {DType::f32};
        const TimingConfig quick{.warmup_s = 0, .min_time_s = 0, .min_reps = 2, .max_reps = 2, .max_time_s = 1};
        opts.cpu_timing = quick;
        opts.gpu_timing = quick;
    }
    const ResultRow& row(const std::vector<ResultRow>& rows, std::string_view id, std::int64_t k) const {
        const auto it = std::find_if(rows.begin(), rows.end(),
                                     [&](const ResultRow& r) { return r.rung == id && r.shape.k == k; });
        if (it == rows.end()) throw std::logic_error("no row " + std::string(id));
        return *it;
    }
};

TEST(Runner, EveryRowSaysWhatHappened) {
    Fixture f;
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), 2 * test_rungs().size());
    // Registry order within each shape, shapes in the order asked.
    EXPECT_EQ(rows[0].rung, "k01_cpu_naive");
    EXPECT_EQ(rows[0].shape.k, 5);
    EXPECT_EQ(rows[test_rungs().size()].shape.k, 8);

    const ResultRow& naive = f.row(rows, "k01_cpu_naive", 5);
    EXPECT_EQ(naive.status, Status::pass);
    EXPECT_EQ(naive.timing.reps, 2);
    EXPECT_GT(naive.gflops, 0);
    EXPECT_DOUBLE_EQ(naive.x_over_naive, 1.0);
    EXPECT_GT(naive.pct_of_vendor, 0);

    const ResultRow& wrong = f.row(rows, "t_wrong", 5);
    EXPECT_EQ(wrong.status, Status::fail);
    EXPECT_FALSE(wrong.reason.empty());
    EXPECT_EQ(wrong.timing.reps, 0) << "a rung that fails verification is not timed";
    EXPECT_EQ(wrong.gflops, 0);

    const ResultRow& thrown = f.row(rows, "t_throws", 5);
    EXPECT_EQ(thrown.status, Status::fail);
    EXPECT_EQ(thrown.reason, "error: launch failed");

    EXPECT_EQ(f.row(rows, "t_even_k", 5).status, Status::skip);
    EXPECT_EQ(f.row(rows, "t_even_k", 5).reason, "refused: K must be even");
    EXPECT_EQ(f.row(rows, "t_even_k", 8).status, Status::pass);

    EXPECT_EQ(f.row(rows, "t_small_only", 5).status, Status::skip);
    EXPECT_NE(f.row(rows, "t_small_only", 5).reason.find("--force"), std::string::npos);

    EXPECT_EQ(f.row(rows, "t_sm90", 5).reason, "skipped: needs sm_90, device is sm_0");

    const ResultRow& vendor = f.row(rows, "t_vendor", 8);
    EXPECT_EQ(vendor.status, Status::pass);
    EXPECT_DOUBLE_EQ(vendor.pct_of_vendor, 100.0);
}

TEST(Runner, ForceRunsPastTheSizeLimit) {
    Fixture f;
    f.opts.force = true;
    f.opts.rungs = {"t_small_only"};
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].status, Status::pass);
}

TEST(Runner, VerifyOnlyTimesNothing) {
    Fixture f;
    f.opts.verify_only = true;
    const auto rows = run_ladder(f.opts, f.ctx);
    for (const ResultRow& r : rows) {
        EXPECT_EQ(r.timing.reps, 0) << r.rung;
        EXPECT_EQ(r.gflops, 0) << r.rung;
    }
    EXPECT_EQ(f.row(rows, "k01_cpu_naive", 5).status, Status::pass);
}

TEST(Runner, ProgressCountsEveryStepAndCheckpointsEveryShape) {
    Fixture f;
    const auto rows = run_ladder(f.opts, f.ctx);
    // "[step/steps, elapsed] rung type shape: what"
    const std::string total = "/" + std::to_string(rows.size()) + ", ";
    std::vector<std::string> steps;
    for (const auto& l : f.lines)
        if (l.find(total) != std::string::npos) {
            EXPECT_NE(l.find(" s] "), std::string::npos) << l;
            steps.push_back(l.substr(0, l.find(',')));
        }
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    ASSERT_EQ(steps.size(), rows.size());
    EXPECT_EQ(steps.front(), "[1/" + std::to_string(rows.size()));
    EXPECT_EQ(steps.back(), "[" + std::to_string(rows.size()) + "/" + std::to_string(rows.size()));
    EXPECT_EQ(f.checkpoints, 2);
    EXPECT_EQ(f.last_checkpoint_rows, rows.size());
}

TEST(Runner, StopsBetweenMeasurementsAndKeepsTheRowsSoFar) {
    Fixture f;
    int asked = 0;
    f.ctx.should_stop = [&] { return ++asked > 3; };
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[2].rung, "t_throws");
    EXPECT_EQ(f.checkpoints, 1);
    EXPECT_EQ(f.last_checkpoint_rows, rows.size());
}

TEST(Runner, RefusesUnknownRungsAndUntakenTypes) {
    Fixture f;
    f.opts.rungs = {"k99_nothing"};
    EXPECT_THROW(validate_request(f.opts, f.ctx), std::invalid_argument);
    f.opts.rungs = {};
    f.opts.dtypes = {DType::bf16};
    EXPECT_THROW(validate_request(f.opts, f.ctx), std::invalid_argument);
    f.ctx.rungs.clear();
    f.opts.dtypes = {DType::f32};
    EXPECT_THROW(validate_request(f.opts, f.ctx), std::invalid_argument) << "an empty registry runs nothing";
}

// A rung of the other backend, taking only bf16; planned, never run.
const Rung kCudaBf16{.id = "t_cuda_bf16", .backend = Backend::cuda, .group = "test", .dtypes = dtype_mask(DType::bf16),
                     .b_layout = BLayout::n_by_k, .lesson = "", .run = throws};

std::vector<std::pair<std::string, std::string>> planned(const LadderPlan& plan) {
    std::vector<std::pair<std::string, std::string>> out;  // (type, rung)
    for (const PlannedGroup& g : plan.groups)
        for (const PlannedRun& r : g.runs) out.emplace_back(std::string(name(g.type)), std::string(r.rung->id));
    return out;
}

TEST(Runner, WithBothBackendsATypeRunsOnTheBackendsThatTakeIt) {
    Fixture f;
    f.ctx.rungs.push_back(&kCudaBf16);
    f.opts.backends = {Backend::cpu, Backend::cuda};
    f.opts.shapes = {parse_shape("8")};
    f.opts.rungs = {"k01_cpu_naive", "t_cuda_bf16"};
    // --backend all --dtype f32 bf16 (and so --dtype all): each backend its own types.
    f.opts.dtypes = {DType::f32, DType::bf16};
    using P = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(planned(plan_ladder(f.opts, f.ctx)), (P{{"f32", "k01_cpu_naive"}, {"bf16", "t_cuda_bf16"}}));
    f.opts.dtypes = {DType::bf16};
    EXPECT_EQ(planned(plan_ladder(f.opts, f.ctx)), (P{{"bf16", "t_cuda_bf16"}}));
    // No type asked: each backend's default types that its rungs take.
    f.opts.dtypes = {};
    EXPECT_EQ(planned(plan_ladder(f.opts, f.ctx)), (P{{"f32", "k01_cpu_naive"}, {"bf16", "t_cuda_bf16"}}));
    // A type that no selected rung of any backend takes is still refused.
    f.opts.dtypes = {DType::f32, DType::i8};
    EXPECT_THROW(validate_request(f.opts, f.ctx), std::invalid_argument);
    // So is one that the only backend asked for does not take.
    f.opts.backends = {Backend::cuda};
    f.opts.dtypes = {DType::f32};
    EXPECT_THROW(validate_request(f.opts, f.ctx), std::invalid_argument);
    f.opts.dtypes = {};
    f.opts.rungs = {"k01_cpu_naive"};
    EXPECT_THROW(validate_request(f.opts, f.ctx), std::invalid_argument) << "no selected rung takes a default type";
}

TEST(Runner, BothBackendsWithoutCudaRungsRunTheCpuRungs) {
    // --backend all in a build without CUDA: the CUDA registry is empty.
    Fixture f;
    f.opts.backends = {Backend::cpu, Backend::cuda};
    f.opts.rungs = {"k01_cpu_naive"};
    for (const auto& types : {std::vector<DType>{}, std::vector<DType>{DType::f32}}) {
        f.opts.dtypes = types;
        const LadderPlan plan = plan_ladder(f.opts, f.ctx);
        EXPECT_EQ(plan.steps, f.opts.shapes.size());
    }
}

TEST(Runner, OnTheCpuRegistry) {
    Fixture f;
    f.ctx.rungs.clear();
    for (const Rung& r : cpu_rungs()) f.ctx.rungs.push_back(&r);
    f.opts.verify_only = true;
    f.opts.shapes = {parse_shape("17x9x33")};
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), cpu_rungs().size());
    for (const ResultRow& r : rows) EXPECT_EQ(r.status, Status::pass) << r.rung << ": " << r.reason;
}

std::string cell(const ResultRow& r, const std::string& column) {
    const auto header = result_header();
    const auto at = std::find(header.begin(), header.end(), column);
    if (at == header.end()) throw std::logic_error("no column " + column);
    return result_cells(r, "id", Recipe::uniform, 1).at(static_cast<std::size_t>(at - header.begin()));
}

TEST(Runner, CsvRowsNameTheirMachineAndTheirRateUnit) {
    Fixture f;
    const auto rows = run_ladder(f.opts, f.ctx);
    const auto header = result_header();
    for (const ResultRow& r : rows) EXPECT_EQ(result_cells(r, "id", Recipe::uniform, 1).size(), header.size());
    EXPECT_EQ(std::count(header.begin(), header.end(), "gflops"), 0) << "the rate column is 'rate' with its unit";

    const ResultRow& naive = f.row(rows, "k01_cpu_naive", 5);
    EXPECT_FALSE(cell(naive, "host").empty());
    EXPECT_EQ(cell(naive, "device"), f.cpu->device_name());
    EXPECT_FALSE(cell(naive, "device").empty());
    EXPECT_EQ(cell(naive, "status"), "PASS");
    EXPECT_EQ(cell(naive, "rate_unit"), "Gflop/s");
    EXPECT_GT(std::stod(cell(naive, "rate")), 0);

    const ResultRow& refused = f.row(rows, "t_even_k", 5);
    EXPECT_EQ(cell(refused, "status"), "SKIP");
    EXPECT_EQ(cell(refused, "rate"), "");
    EXPECT_EQ(cell(refused, "rate_unit"), "") << "no rate, no unit";
    EXPECT_EQ(cell(f.row(rows, "t_wrong", 5), "status"), "FAIL");

    ResultRow i8 = naive;
    i8.dtype = "i8";
    EXPECT_EQ(cell(i8, "rate_unit"), "Gop/s");
}

std::vector<const Rung*> registry_of(std::span<const Rung> rungs) {
    std::vector<const Rung*> out;
    for (const Rung& r : rungs) out.push_back(&r);
    return out;
}

TEST(Suites, NamesAreUniqueAndEachSaysWhatItIsFor) {
    ASSERT_FALSE(suite_table().empty());
    for (std::size_t i = 0; i < suite_table().size(); ++i) {
        const Suite& s = suite_table()[i];
        EXPECT_FALSE(s.name.empty());
        EXPECT_FALSE(s.purpose.empty()) << s.name;
        EXPECT_EQ(s.purpose.find('\n'), std::string_view::npos) << s.name << ": the purpose is one line";
        EXPECT_EQ(find_suite(s.name), &s) << s.name << " is found under its own name, and first";
        for (std::size_t j = 0; j < i; ++j) EXPECT_NE(suite_table()[j].name, s.name);
    }
    EXPECT_EQ(find_suite("no_such_suite"), nullptr);
    // The visit's steps and make run call these by name.
    for (const char* name : {"cpu", "cpu_f64", "gpu_short", "gpu_ladder", "fp4", "splitk", "bench", "bench_llm"})
        EXPECT_NE(find_suite(name), nullptr) << name;
}

TEST(Suites, EverySuiteHoldsAgainstTheRegistry) {
    // The CPU registry is here; the CUDA one is in the binary, where
    // `rigel ladder --list-suites` checks every suite against it
    // (tests/cli/bad_input.cmake).
    const auto cpu = registry_of(cpu_rungs());
    for (const Suite& s : suite_table()) {
        const SuiteCheck c = check_suite(s, cpu);
        EXPECT_EQ(c.problems, std::vector<std::string>{}) << s.name;
        EXPECT_EQ(c.checked_rungs, s.backend != "cuda") << s.name;
    }
}

// Every rung is verified on a shape that is a multiple of no tile: each suite
// names one, or is given its odd companion (verified, never timed); and so is
// the default.
TEST(Suites, EverySuiteCarriesAShapeThatIsAMultipleOfNoTile) {
    for (const Suite& s : suite_table()) {
        std::vector<Shape> shapes;
        for (const auto& text : s.sizes) shapes.push_back(parse_shape(text));
        std::vector<Backend> backends{Backend::cpu, Backend::cuda};
        if (s.backend == "cpu") backends = {Backend::cpu};
        if (s.backend == "cuda") backends = {Backend::cuda};
        const auto odd = odd_companion(shapes, backends);
        if (odd) shapes.push_back(*odd);
        EXPECT_TRUE(std::any_of(shapes.begin(), shapes.end(), [](const Shape& x) { return !tile_multiple(x); }))
            << s.name;
        // A companion exists only where the suite has no such shape, and the
        // CUDA one suits TMA's fp8 rows (K % 16) and cuBLAS int8 (N % 4).
        if (odd && s.backend != "cpu") {
            EXPECT_TRUE(odd->k % 16 == 0 && odd->n % 4 == 0) << s.name;
        }
    }
    const auto odd = odd_companion({parse_shape("512"), parse_shape("1024")}, {Backend::cpu});
    ASSERT_TRUE(odd.has_value());
    EXPECT_EQ(odd->str(), "509x1021x1031");
    EXPECT_FALSE(tile_multiple(*odd));
    EXPECT_FALSE(odd_companion({parse_shape("17x33x8192")}, {Backend::cuda}).has_value());
}

TEST(Suites, CheckNamesEveryProblem) {
    Fixture f;
    f.ctx.rungs.push_back(&kCudaBf16);
    const Suite good{.name = "t", .purpose = "p", .backend = "cpu", .rungs = {"k01_cpu_naive", "vendor"},
                     .dtypes = {"f32"}, .sizes = {"8", "8x8x9"}, .warmup_s = 1, .min_time_s = 0.4};
    EXPECT_EQ(check_suite(good, f.ctx.rungs).problems, std::vector<std::string>{});
    EXPECT_EQ(suite_options_text(good),
              "--backend cpu --rungs k01_cpu_naive vendor --dtype f32 --sizes 8 8x8x9 --warmup 1 --min-time 0.4");

    const auto problems = [&](Suite s) { return check_suite(s, f.ctx.rungs).problems.size(); };
    Suite s = good;
    s.backend = "gpu";
    EXPECT_GE(problems(s), 1u);
    s = good;
    s.rungs = {"k99_nothing"};
    EXPECT_EQ(problems(s), 2u) << "an unknown rung, and then f32 is taken by no selected rung";
    s = good;
    s.rungs = {"k01_cpu_naive", "t_cuda_bf16"};
    EXPECT_EQ(problems(s), 1u) << "a rung of another backend";
    s = good;
    s.backend = "all";
    s.rungs = {"k01_cpu_naive", "t_cuda_bf16"};
    EXPECT_EQ(problems(s), 1u) << "t_cuda_bf16 takes none of the suite's types";
    s.dtypes = {"f32", "bf16"};
    EXPECT_EQ(problems(s), 0u);
    s = good;
    s.dtypes = {"bf16"};
    EXPECT_EQ(problems(s), 3u) << "neither rung takes bf16, and no selected rung takes it";
    for (const auto& types : {std::vector<std::string>{}, {"f12"}, {"f32", "f32"}, {"all", "f32"}}) {
        s = good;
        s.dtypes = types;
        EXPECT_GE(problems(s), 1u) << (types.empty() ? "none" : types.back());
    }
    for (const auto& sizes : {std::vector<std::string>{}, {"0"}, {"8", "8x8x8"}, {"12x34"}}) {
        s = good;
        s.sizes = sizes;
        EXPECT_EQ(problems(s), 1u) << (sizes.empty() ? "none" : sizes.back());
    }
    for (double bad : {-1.0, kMaxMeasureSeconds + 1, std::numeric_limits<double>::infinity()}) {
        s = good;
        s.warmup_s = bad;
        EXPECT_EQ(problems(s), 1u) << bad;
        s = good;
        s.min_time_s = bad;
        EXPECT_EQ(problems(s), 1u) << bad;
    }
    // A backend with no rungs here has its rungs and types left unchecked, and says so.
    s = good;
    s.backend = "cuda";
    s.rungs = {"k99_nothing"};
    const SuiteCheck c = check_suite(s, registry_of(cpu_rungs()));
    EXPECT_FALSE(c.checked_rungs);
    EXPECT_TRUE(c.problems.empty());
}

TEST(Runner, StatusNames) {
    EXPECT_EQ(name(Status::pass), "PASS");
    EXPECT_EQ(name(Status::fail), "FAIL");
    EXPECT_EQ(name(Status::skip), "SKIP");
}

TEST(Runner, ExpectedMeasureTimeFollowsTheTimingRules) {
    const TimingConfig tc{.warmup_s = 0.1, .min_time_s = 0.5, .min_reps = 3, .max_reps = 2000, .max_time_s = 20};
    // Fast: the warm-up and the minimum time dominate.
    EXPECT_NEAR(expected_measure_seconds(0.001, tc), 0.1 + 0.5, 1e-9);
    // 2 s a run: one warm-up run, then min_reps runs.
    EXPECT_NEAR(expected_measure_seconds(2, tc), 2 + 3 * 2, 1e-9);
    // 100 s a run (a 2048^3 naive loop): one warm-up run, one timed run past max_time_s.
    EXPECT_NEAR(expected_measure_seconds(100, tc), 100 + 100, 1e-9);
    // 8 s a run: runs end at 8, 16, 24 s; the third is the first past max_time_s.
    const TimingConfig capped{.warmup_s = 0, .min_time_s = 100, .min_reps = 1, .max_reps = 50, .max_time_s = 20};
    EXPECT_NEAR(expected_measure_seconds(8, capped), 8 + 3 * 8, 1e-9);
    const TimingConfig few{.warmup_s = 0, .min_time_s = 10, .min_reps = 1, .max_reps = 2, .max_time_s = 30};
    EXPECT_NEAR(expected_measure_seconds(1, few), 1 + 2, 1e-9) << "max_reps caps the timed runs";
}


// Rungs that are right until their n-th call, then throw: a fault that only
// timing (or pairing) reaches.
int g_calls = 0;
void right_then_throws(const GemmProblem& p, int nth) {
    if (++g_calls >= nth) throw std::runtime_error("launch failed on call " + std::to_string(g_calls));
    right_f32(p);
}
const Rung kThrowsSecond = make_rung({.id = "t_throws_second", .run = [](const GemmProblem& p) {
                                          right_then_throws(p, 2);
                                      }});
// Verification, the warm-up and two timed repetitions: the fifth call is the pairing's.
const Rung kThrowsFifth = make_rung({.id = "t_throws_fifth", .run = [](const GemmProblem& p) {
                                         right_then_throws(p, 5);
                                     }});

TEST(Runner, AThrowWhileTimingFailsItsRowAndTheLadderGoesOn) {
    Fixture f;
    f.ctx.rungs = {&test_rungs()[0], &kThrowsSecond, &test_rungs().back()};
    g_calls = 0;
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), 6u) << "both shapes, every rung";
    const ResultRow& thrown = f.row(rows, "t_throws_second", 5);
    EXPECT_EQ(thrown.status, Status::fail);
    EXPECT_EQ(thrown.reason, "error while timing: launch failed on call 2");
    EXPECT_TRUE(thrown.verdict.pass) << "it was verified before it threw";
    EXPECT_EQ(thrown.timing.reps, 0);
    EXPECT_EQ(cell(thrown, "rate"), "") << "no rate for a row whose timing failed";
    EXPECT_EQ(cell(thrown, "status"), "FAIL");
    // The rows after it, in its group and the next, ran and were timed.
    EXPECT_EQ(f.row(rows, "t_vendor", 5).status, Status::pass);
    EXPECT_EQ(f.row(rows, "t_vendor", 5).timing.reps, 2);
    EXPECT_EQ(f.row(rows, "k01_cpu_naive", 8).status, Status::pass);
    EXPECT_EQ(f.row(rows, "t_vendor", 8).timing.reps, 2);
    EXPECT_EQ(f.checkpoints, 2);
}

TEST(Runner, AThrowWhilePairingFailsItsRowAndTheLadderGoesOn) {
    Fixture f;
    f.ctx.rungs = {&test_rungs()[0], &kThrowsFifth, &test_rungs().back()};
    f.opts.shapes = {parse_shape("6x4x8")};
    f.opts.paired = true;
    f.opts.paired_timing = PairedConfig{.warmup_s = 0, .min_time_s = 0, .min_pairs = 4, .max_pairs = 4,
                                        .max_time_s = 1};
    g_calls = 0;
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), 3u);
    const ResultRow& thrown = f.row(rows, "t_throws_fifth", 8);
    EXPECT_EQ(thrown.status, Status::fail);
    EXPECT_EQ(thrown.reason, "error while timing, paired with t_vendor: launch failed on call 5");
    EXPECT_EQ(thrown.paired.pairs, 0);
    EXPECT_EQ(cell(thrown, "paired_vendor"), "");
    EXPECT_EQ(cell(thrown, "rate"), "");
    EXPECT_EQ(f.row(rows, "k01_cpu_naive", 8).paired.pairs, 4) << "the group's other rungs are still paired";
}

TEST(Runner, VerifyShapesAreVerifiedAndNeverTimed) {
    Fixture f;
    f.opts.shapes = {parse_shape("8")};
    f.opts.verify_shapes = {parse_shape("17x9x33")};
    f.opts.rungs = {"k01_cpu_naive", "t_wrong", "t_vendor"};
    f.opts.paired = true;
    f.opts.paired_timing = PairedConfig{.warmup_s = 0, .min_time_s = 0, .min_pairs = 2, .max_pairs = 2,
                                        .max_time_s = 1};
    const auto rows = run_ladder(f.opts, f.ctx);
    ASSERT_EQ(rows.size(), 6u);
    EXPECT_EQ(rows[3].shape.str(), "17x9x33") << "after the timed shapes";
    for (const ResultRow& r : rows) {
        if (r.shape.k != 33) continue;
        EXPECT_EQ(r.timing.reps, 0) << r.rung;
        EXPECT_EQ(r.paired.pairs, 0) << r.rung;
        EXPECT_EQ(cell(r, "rate"), "") << r.rung;
    }
    EXPECT_EQ(f.row(rows, "k01_cpu_naive", 33).status, Status::pass);
    EXPECT_EQ(f.row(rows, "t_wrong", 33).status, Status::fail) << "verified all the same";
    EXPECT_EQ(f.row(rows, "k01_cpu_naive", 8).timing.reps, 2);
    EXPECT_EQ(f.row(rows, "k01_cpu_naive", 8).paired.pairs, 2);
}

TEST(Runner, OneRepetitionLeavesTheNoiseCellEmpty) {
    ResultRow r;
    r.rung = "k01_cpu_naive";
    r.dtype = "f32";
    r.status = Status::pass;
    r.timing = summarize({0.5});
    r.gflops = 1;
    EXPECT_EQ(cell(r, "reps"), "1");
    EXPECT_EQ(cell(r, "noise_rel"), "");
    r.timing = summarize({0.5, 0.6});
    EXPECT_FALSE(cell(r, "noise_rel").empty());
}

TEST(Runner, TimingSettingsForTheSidecar) {
    Fixture f;
    f.opts.backends = {Backend::cpu, Backend::cuda};
    f.opts.cpu_timing = TimingConfig{.warmup_s = 0.1, .min_time_s = 0.5, .min_reps = 3, .max_reps = 200,
                                     .max_time_s = 20};
    f.opts.force = true;
    const std::string plain = timing_settings(f.opts).dump();
    for (const char* key : {"\"verify_only\": false", "\"force\": true", "\"paired\": false", "\"cpu\"",
                            "\"cuda\"", "\"warmup_s\": 0.1", "\"min_time_s\": 0.5", "\"min_reps\": 3",
                            "\"max_reps\": 200", "\"max_time_s\": 20"})
        EXPECT_NE(plain.find(key), std::string::npos) << key << " in " << plain;
    EXPECT_EQ(plain.find("\"pairs\""), std::string::npos) << "pairs' settings only for a paired run";
    f.opts.paired = true;
    f.opts.verify_only = true;
    const std::string paired = timing_settings(f.opts).dump();
    for (const char* key : {"\"verify_only\": true", "\"paired\": true", "\"pairs\"", "\"min_pairs\"",
                            "\"max_pairs\"", "\"block_s\""})
        EXPECT_NE(paired.find(key), std::string::npos) << key << " in " << paired;
}

TEST(Runner, PairedTimesEachPassingRungAgainstItsVendorInPairs) {
    Fixture f;
    f.opts.paired = true;
    f.opts.paired_timing = PairedConfig{.warmup_s = 0, .min_time_s = 0, .min_pairs = 4, .max_pairs = 4,
                                        .max_time_s = 1};
    const auto rows = run_ladder(f.opts, f.ctx);
    const ResultRow& naive = f.row(rows, "k01_cpu_naive", 8);
    EXPECT_EQ(naive.paired_vendor, "t_vendor");
    EXPECT_EQ(naive.paired.pairs, 4);
    EXPECT_GT(naive.paired.ratio_median, 0);
    EXPECT_EQ(cell(naive, "paired_vendor"), "t_vendor");
    EXPECT_EQ(cell(naive, "paired_pairs"), "4");
    // The vendor itself, a failing rung and a refused one are not paired.
    EXPECT_EQ(f.row(rows, "t_vendor", 8).paired.pairs, 0);
    EXPECT_EQ(cell(f.row(rows, "t_vendor", 8), "paired_ratio_median"), "");
    EXPECT_EQ(f.row(rows, "t_wrong", 5).paired.pairs, 0);
    EXPECT_EQ(f.row(rows, "t_even_k", 5).paired.pairs, 0);
    // Without --paired nothing is.
    Fixture plain;
    for (const ResultRow& r : run_ladder(plain.opts, plain.ctx)) EXPECT_EQ(r.paired.pairs, 0) << r.rung;
}

}  // namespace
}  // namespace rigel
