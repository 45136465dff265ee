// `rigel gemm`: the GEMM library verified and timed on the device.
//   rigel gemm verify [--suite verify|refusals|NAME] [--cases TEXT,...]   every case (or those named) against float64
//   rigel gemm bench --suite NAME|all [--cases TEXT,...]   rigel against its baselines in paired samples
//   rigel gemm run --m M --n N --k K [...]             one case: verified, then timed
//   rigel gemm list [--suite NAME] [--sms N] [--dram-tbps T] [--why]   the suites, or one suite's cases and their kernels
//   rigel gemm blockscaled [--shapes MxNxK,...]        fp8 with block scales (k38's kernel) against float64
// Every option is checked before the device is looked for, so a typo is an
// error on any machine; without a device the commands say "skipped" (exit 77).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/device_runs.hpp"
#include "cuda/hopper/block_scaled.hpp"
#include "cuda/vendor/cublaslt_block_scaled.hpp"
#include "gemm/block_scaled_case.hpp"
#include "gemm/driver.hpp"
#include "gemm/suites.hpp"
#include "harness/executor.hpp"
#include "harness/interrupt.hpp"
#include "harness/paired.hpp"
#include "harness/provenance.hpp"
#include "harness/report_io.hpp"
#include "harness/timing.hpp"
#include "ladder/rung.hpp"

namespace rigel::cli {
namespace {

using gemm::BenchRow;
using gemm::Contender;
using gemm::GemmCase;
using gemm::GemmSuite;
using gemm::VerifyRow;

// The refusal test is a verify suite of its own (no GEMM is computed).
constexpr const char* kRefusalSuite = "refusals";

struct VerifyArgs {
    std::string suite = "verify", cases;
    CommonArgs common;
};
struct BenchArgs {
    std::string suite, kernel = "auto", cases, blocks, pause, group_m;
    CommonArgs common;
};

// A run of some cases only (--cases) names its files ..._subset_..., and its
// sidecar holds the filter: the report takes whole suites only.
std::string subset_tag(const std::string& cases) { return cases.empty() ? "" : "_subset"; }
struct RunArgs {
    std::string m, n, k, layout = "NT", type = "bf16", out_type = "bf16", epilogue = "none", alpha = "1", beta = "0";
    std::string kernel = "auto", blocks, pause, group_m;
    bool allow_atomics = false;
    CommonArgs common;
};
struct ListArgs {
    std::string suite;
    int sms = 132;  // the H200's SM count: whose dispatcher choices the list shows
    double dram_tbps = gemm::kH200DramBytesPerSecond / 1e12;  // ... and its DRAM peak (rules 5a, 12 and 13 ask)
    bool why = false;
};
struct BlockScaledArgs {
    std::string shapes = "1000x1030x1104,129x300x272,2048x2048x4096", type = "e4m3";
    bool time = false;
    CommonArgs common;
};

std::string suite_names() {
    std::string out;
    for (const GemmSuite& s : gemm::gemm_suites()) out += (out.empty() ? "" : ", ") + std::string(s.name);
    return out;
}

const GemmSuite& suite_named(const std::string& name, const std::string& also = {}) {
    const GemmSuite* s = gemm::find_gemm_suite(name);
    if (!s) throw std::invalid_argument("unknown suite '" + name + "' (known: " + suite_names() + also + ")");
    return *s;
}

std::int64_t parse_extent(const std::string& option, const std::string& text) {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || v < 1 || v > std::numeric_limits<std::int32_t>::max())
        throw std::invalid_argument(option + " '" + text + "' is not an integer from 1 to 2147483647");
    return v;
}

float parse_scalar(const std::string& option, const std::string& text) {
    float v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v))
        throw std::invalid_argument(option + " '" + text + "' is not a finite number");
    return v;
}

// --kernel: a name kernel_named() takes.
void check_kernel_option(const std::string& kernel) {
    if (!gemm::is_kernel_name(kernel))
        throw std::invalid_argument("--kernel '" + kernel + "' is not one of " + gemm::kernel_names());
}

// --group-m: the ping-pong kernels' tile order (GemmCase::group_m) for every case, and the files' kernel
// tag with it (..._g<N>), whose sidecar's kernel then keeps the run out of the report.
std::string with_group_m(const std::string& text, std::string kernel, std::vector<GemmCase*> cases) {
    if (text.empty()) return kernel;
    const int g = static_cast<int>(parse_extent("--group-m", text));
    for (GemmCase* c : cases) {
        c->group_m = g;
        (void)gemm::case_choice(*c, 132);  // a named kernel with no such order: refused here, before the device
    }
    return kernel + "_g" + std::to_string(g);
}

// The cases with `kernel` forced instead of the dispatcher's choice; a case
// whose operand type has no such kernel is left out, and said so.
std::vector<GemmCase> with_kernel(const std::vector<GemmCase>& cases, const std::string& kernel) {
    if (kernel == "auto") return cases;
    std::vector<GemmCase> out;
    for (GemmCase c : cases) {
        if (!gemm::kernel_named(c.desc, kernel, 1)) {
            say("left out " + c.name + ": no kernel " + kernel + " for its types and epilogue");
            continue;
        }
        c.kernel = kernel;
        out.push_back(std::move(c));
    }
    return out;
}

std::string shape_text(const gemm::Desc& d) {
    return std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " " +
           gemm::layout_name(d.a_op, d.b_op) + " " + gemm::name(d.a_type) + " -> " + gemm::name(d.d_type) + " " +
           gemm::name(d.epilogue);
}

// ---- result files --------------------------------------------------------------

const std::vector<std::string>& verify_header() {
    static const std::vector<std::string> h{"run_id", "host", "device", "case", "m", "n", "k", "layout",
                                            "a_type", "b_type", "d_type", "epilogue", "lda", "ldb", "ldd",
                                            "kernel", "pass", "err_max_scaled", "tolerance", "reason"};
    return h;
}

const std::vector<std::string>& bench_header() {
    static const std::vector<std::string> h{
        "run_id", "host", "device", "suite", "case", "m", "n", "k", "layout", "a_type", "b_type", "d_type", "epilogue",
        "candidate", "baseline", "kernel", "pairs", "candidate_tflops", "baseline_tflops", "ratio_median", "ratio_p10",
        "ratio_p90", "sm_clock_mhz", "power_w", "temp_c",
        // blocked timing (--blocks) alone: each side's own clock and mean power, the median over its blocks
        "candidate_sm_clock_mhz", "baseline_sm_clock_mhz", "candidate_power_w", "baseline_power_w",
        // how the baseline was run where not as the desc says (BenchRow::baseline_note); empty otherwise
        "baseline_note"};
    return h;
}

// The columns every row shares: the case's shape, layout, types and epilogue.
std::vector<std::string> desc_cells(const gemm::Desc& d) {
    return {std::to_string(d.m),
            std::to_string(d.n),
            std::to_string(d.k),
            gemm::layout_name(d.a_op, d.b_op),
            gemm::name(d.a_type),
            gemm::name(d.b_type),
            gemm::name(d.d_type),
            gemm::name(d.epilogue)};
}

std::vector<std::string> verify_cells(const RowContext& x, const VerifyRow& r) {
    std::vector<std::string> c{x.run_id, x.host, x.device, r.case_name};
    for (auto& cell : desc_cells(r.desc)) c.push_back(std::move(cell));
    for (auto& cell : {std::to_string(r.desc.lda), std::to_string(r.desc.ldb), std::to_string(r.desc.ldd), r.kernel,
                       std::string(r.pass ? "1" : "0"), num(r.err_max_scaled), num(r.tolerance), r.reason})
        c.push_back(cell);
    return c;
}

std::vector<std::string> bench_cells(const RowContext& x, const std::string& suite, const BenchRow& r) {
    std::vector<std::string> c{x.run_id, x.host, x.device, suite, r.case_name};
    for (auto& cell : desc_cells(r.desc)) c.push_back(std::move(cell));
    const DeviceSample& d = r.sample;
    for (auto& cell : {std::string(gemm::name(r.candidate)), std::string(gemm::name(r.baseline)), r.kernel,
                       std::to_string(r.stats.pairs), num(r.candidate_tflops), num(r.baseline_tflops),
                       num(r.stats.ratio_median), num(r.stats.ratio_p10), num(r.stats.ratio_p90),
                       d.valid ? num(d.sm_clock_mhz) : "", d.valid ? num(d.power_w) : "",
                       d.valid ? num(d.temp_c) : ""})
        c.push_back(cell);
    const DeviceSample &ca = r.candidate_sample, &ba = r.baseline_sample;
    for (auto& cell : {ca.valid ? num(ca.sm_clock_mhz) : "", ba.valid ? num(ba.sm_clock_mhz) : "",
                       ca.valid ? num(ca.power_w) : "", ba.valid ? num(ba.power_w) : ""})
        c.push_back(cell);
    c.push_back(r.baseline_note);
    return c;
}

// ---- verify --------------------------------------------------------------------

void print_verify_row(const VerifyRow& r) {
    std::printf("%-58s %-16s %-24s %-4s %9s  %s\n", r.case_name.c_str(), gemm::name(r.path), r.kernel.c_str(),
                r.pass ? "pass" : "FAIL", num(r.err_max_scaled).c_str(), r.reason.c_str());
    std::fflush(stdout);
}

std::vector<std::vector<std::string>> verify_table(const RowContext& x, const std::vector<VerifyRow>& rows) {
    std::vector<std::vector<std::string>> cells;
    for (const VerifyRow& r : rows) cells.push_back(verify_cells(x, r));
    return cells;
}

int finish_verify(const std::vector<VerifyRow>& rows, RunFiles& files, const JsonObject& details) {
    files.write(verify_table(files.rows(), rows), details, !stop_requested());
    files.report(rows.size());
    if (stop_requested()) return 128 + stop_signal();
    const auto failed = std::count_if(rows.begin(), rows.end(), [](const VerifyRow& r) { return !r.pass; });
    if (failed) {
        const auto first = std::find_if(rows.begin(), rows.end(), [](const VerifyRow& r) { return !r.pass; });
        say(std::to_string(failed) + " of " + std::to_string(rows.size()) + " check(s) FAILED (first: " +
            first->case_name + ", " + gemm::name(first->path) + ": " + first->reason + ")");
        return 1;
    }
    say("all " + std::to_string(rows.size()) + " check(s) passed");
    return 0;
}

int run_verify(const VerifyArgs& v, const CLI::App& cmd) {
    const CommonArgs& a = v.common;
    check_out_option(cmd, a.out);
    const bool refusals = v.suite == kRefusalSuite;
    const GemmSuite* suite = refusals ? nullptr : &suite_named(v.suite, std::string(", ") + kRefusalSuite);
    if (refusals && !v.cases.empty()) throw std::invalid_argument("--cases picks GEMM cases; the refusals run whole");
    const std::vector<GemmCase> cases = refusals ? std::vector<GemmCase>{}
                                                 : gemm::cases_matching(suite->cases, v.cases, v.suite);
    const std::uint64_t seed = parse_seed("--seed", a.seed);
    const int threads = parse_threads("--threads", a.threads);
    auto ex = sm90_device("rigel's GEMM library");
    install_stop_handlers();
    RunFiles files(a.out, verify_header(), "gemm_verify", v.suite + subset_tag(v.cases) + "_gemm_verify", v.suite,
                   seed, *ex);

    std::vector<VerifyRow> rows;
    const std::size_t total = refusals ? gemm::refusal_cases().size() : cases.size();
    int failed = 0;
    const auto details = [&] {
        JsonObject d;
        d.str("suite", v.suite).str("cases_filter", v.cases).integer("cases", static_cast<long long>(total))
            .integer("threads", threads).integer("failed", failed);
        return d;
    };
    for (std::size_t i = 0; i < total && !stop_requested(); ++i) {
        std::vector<VerifyRow> got;
        if (refusals)
            got.push_back(gemm::check_refusal(*ex, gemm::refusal_cases()[i]));
        else
            got = gemm::verify_case(*ex, cases[i], seed, threads);
        for (const VerifyRow& r : got) {
            failed += !r.pass;
            print_verify_row(r);
            rows.push_back(r);
        }
        files.write(verify_table(files.rows(), rows), details(), false);
    }
    return finish_verify(rows, files, details());
}

// ---- bench ---------------------------------------------------------------------

struct TimedRow {
    std::string suite;
    BenchRow row;
};

void print_bench_table(const std::vector<TimedRow>& rows) {
    std::printf("\n%-8s %-20s %-28s %-24s %s\n", "suite", "case", "candidate/baseline", "ratio median [p10, p90]",
                "Tflop/s candidate / baseline");
    for (const TimedRow& t : rows) {
        const BenchRow& r = t.row;
        char ratio[64], rate[64];
        std::snprintf(ratio, sizeof ratio, "%.3f [%.3f, %.3f]", r.stats.ratio_median, r.stats.ratio_p10,
                      r.stats.ratio_p90);
        std::snprintf(rate, sizeof rate, "%.1f / %.1f", r.candidate_tflops, r.baseline_tflops);
        std::printf("%-8s %-20s %-28s %-24s %s\n", t.suite.c_str(), r.case_name.c_str(),
                    (std::string(gemm::name(r.candidate)) + "/" + gemm::name(r.baseline)).c_str(), ratio, rate);
    }
    std::fflush(stdout);
}

// --blocks SECONDS: blocked timing (harness/paired.hpp) instead of single samples in turn; --pause SECONDS:
// single samples in turn, each after the device idled that long. At most one of the two.
PairedConfig with_pacing(PairedConfig t, const CLI::App& cmd, const std::string& blocks, const std::string& pause) {
    if (cmd.count("--blocks") && cmd.count("--pause"))
        throw std::invalid_argument("--blocks and --pause exclude each other: a block runs its samples back to back");
    if (cmd.count("--blocks")) {
        t.block_s = parse_seconds("--blocks", blocks);
        if (t.block_s <= 0) throw std::invalid_argument("--blocks must be more than 0 seconds");
    }
    if (cmd.count("--pause")) {
        t.pause_s = parse_seconds("--pause", pause);
        if (t.pause_s <= 0) throw std::invalid_argument("--pause must be more than 0 seconds");
    }
    return t;
}

// Verifies and times `cases` of each suite against its baselines; the printed
// table comes last.
int run_bench_cases(const std::vector<std::pair<std::string, std::vector<GemmCase>>>& work,
                    const std::vector<std::vector<Contender>>& baselines, const std::string& suite_name,
                    const PairedConfig& timing, std::uint64_t seed, int threads, const std::string& out,
                    const std::string& kernel, const std::string& cases_filter = {}) {
    check_paired_config(timing);
    auto ex = sm90_device("rigel's GEMM library");
    install_stop_handlers();
    // A forced kernel's files are named after it, and their sidecar says so:
    // the report takes only the dispatcher's runs.
    // Blocked timing (--blocks) names its files ..._blocked_..., paused samples (--pause) ..._paused_...,
    // and the sidecar holds block_s and pause_s.
    const std::string tag = (kernel == "auto" ? suite_name : suite_name + "_" + kernel) + subset_tag(cases_filter) +
                            (timing.block_s > 0 ? "_blocked" : "") + (timing.pause_s > 0 ? "_paused" : "");
    RunFiles files(out, bench_header(), "gemm_bench", tag + "_gemm", tag, seed, *ex);

    std::vector<TimedRow> timed;
    std::vector<std::string> failures, skipped, notes;
    std::size_t cases = 0;
    const auto write = [&](bool complete) {
        std::vector<std::vector<std::string>> cells;
        for (const TimedRow& t : timed) cells.push_back(bench_cells(files.rows(), t.suite, t.row));
        JsonObject d;
        d.str("suite", suite_name)
            .str("kernel", kernel)
            .str("cases_filter", cases_filter)
            .integer("cases", static_cast<long long>(cases))
            .num("warmup_s", timing.warmup_s)
            .num("min_time_s", timing.min_time_s)
            .integer("min_pairs", timing.min_pairs)
            .integer("max_pairs", timing.max_pairs)
            .num("block_s", timing.block_s)
            .num("pause_s", timing.pause_s)
            .array_of_str("verification_failures", failures)
            .array_of_str("baselines_skipped", skipped)
            .array_of_str("baseline_notes", notes);
        files.write(cells, d, complete);
    };
    for (std::size_t s = 0; s < work.size() && !stop_requested(); ++s) {
        const auto& [suite, list] = work[s];
        for (const GemmCase& c : list) {
            if (stop_requested()) break;
            say(suite + " " + c.name + " (" + shape_text(c.desc) + "): verifying, then timing");
            const gemm::BenchOutcome o = gemm::bench_case(*ex, c, baselines[s], timing, seed, threads);
            ++cases;
            for (const VerifyRow& v : o.verified) {
                say("  " + std::string(gemm::name(v.path)) + " (" + v.kernel + (v.note.empty() ? "" : "; " + v.note) +
                    "): " +
                    (v.pass ? "pass, error " + num(v.err_max_scaled) + " of its allowance" : "FAIL: " + v.reason));
                if (!v.pass) failures.push_back(suite + " " + c.name + " " + gemm::name(v.path) + ": " + v.reason);
                if (!v.note.empty()) notes.push_back(suite + " " + c.name + " " + gemm::name(v.path) + ": " + v.note);
            }
            for (const std::string& why : o.skipped) {
                skipped.push_back(suite + " " + c.name + " " + why);
                say("  not timed against " + why);
            }
            for (const BenchRow& r : o.rows) {
                char line[160];
                std::snprintf(line, sizeof line, "  %s/%s %.3f [%.3f, %.3f], %d pairs", gemm::name(r.candidate),
                              gemm::name(r.baseline), r.stats.ratio_median, r.stats.ratio_p10, r.stats.ratio_p90,
                              r.stats.pairs);
                say(line);
                timed.push_back({suite, r});
            }
            write(false);
        }
    }
    write(!stop_requested());
    print_bench_table(timed);
    files.report(timed.size());
    if (stop_requested()) return 128 + stop_signal();
    if (!failures.empty()) {
        say(std::to_string(failures.size()) + " verification(s) FAILED, those pairs not timed (first: " +
            failures.front() + ")");
        return 1;
    }
    return 0;
}

int run_bench(const BenchArgs& b, const CLI::App& cmd) {
    const CommonArgs& a = b.common;
    check_out_option(cmd, a.out);
    if (b.suite.empty()) throw std::invalid_argument("--suite is required: a suite name or all (rigel gemm list)");
    std::vector<const GemmSuite*> suites;
    if (b.suite == "all") {
        suites = gemm::bench_suites();
    } else {
        const GemmSuite& s = suite_named(b.suite);
        if (s.baselines.empty())
            throw std::invalid_argument("suite " + b.suite + " is not timed (it names no baseline): rigel gemm verify "
                                        "--suite " + b.suite + " checks it");
        suites.push_back(&s);
    }
    check_kernel_option(b.kernel);
    const PairedConfig timing = with_pacing(timing_of(cmd, a), cmd, b.blocks, b.pause);
    const std::uint64_t seed = parse_seed("--seed", a.seed);
    const int threads = parse_threads("--threads", a.threads);
    std::vector<std::pair<std::string, std::vector<GemmCase>>> work;
    std::vector<std::vector<Contender>> baselines;
    for (const GemmSuite* s : suites) {
        work.emplace_back(std::string(s->name), with_kernel(s->cases, b.kernel));
        baselines.push_back(s->baselines);
    }
    if (!b.cases.empty()) {
        // Each text must name a case of some suite (checked over all of them, before --kernel left any out,
        // so that a text naming only cases without that kernel leaves them out, said so, instead of
        // refusing the run); each suite keeps its cases that match one.
        std::vector<GemmCase> all;
        for (const GemmSuite* s : suites) all.insert(all.end(), s->cases.begin(), s->cases.end());
        (void)gemm::cases_matching(all, b.cases, b.suite);
        const std::vector<std::string> texts = case_filter_texts(b.cases);
        for (auto& [name, list] : work)
            std::erase_if(list, [&](const GemmCase& c) { return !name_matches(c.name, texts); });
    }
    std::vector<GemmCase*> all_cases;
    for (auto& w : work)
        for (GemmCase& c : w.second) all_cases.push_back(&c);
    const std::string file_kernel = with_group_m(b.group_m, b.kernel, all_cases);
    return run_bench_cases(work, baselines, b.suite, timing, seed, threads, a.out, file_kernel, b.cases);
}

// ---- run: one case -------------------------------------------------------------

int run_one(const RunArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.common.out);
    gemm::Desc d;
    d.m = parse_extent("--m", a.m);
    d.n = parse_extent("--n", a.n);
    d.k = parse_extent("--k", a.k);
    if (!gemm::parse_layout(a.layout, d.a_op, d.b_op))
        throw std::invalid_argument("--layout '" + a.layout + "' is not NN, NT, TN or TT");
    if (!gemm::parse_type(a.type, d.a_type))
        throw std::invalid_argument("--type '" + a.type + "' is not bf16, f16, e4m3 or e5m2");
    d.b_type = d.a_type;
    if (!gemm::parse_type(a.out_type, d.d_type))
        throw std::invalid_argument("--out-type '" + a.out_type + "' is not f32, bf16 or f16");
    if (!gemm::parse_epilogue(a.epilogue, d.epilogue))
        throw std::invalid_argument("--epilogue '" + a.epilogue +
                                    "' is not none, bias, bias_relu, bias_gelu, bias_gelu_erf, bias_gelu_aux or "
                                    "dgelu_bgrad");
    d.allow_atomics = a.allow_atomics;
    if (const std::string why = gemm::check(d); !why.empty()) throw std::invalid_argument(why);
    check_kernel_option(a.kernel);
    if (!gemm::kernel_named(d, a.kernel, 1))
        throw std::invalid_argument("--kernel " + a.kernel + ": no such kernel for " + gemm::name(d.a_type) +
                                    " operands, a " + gemm::name(d.d_type) + " D and epilogue " + a.epilogue);
    const float alpha = parse_scalar("--alpha", a.alpha), beta = parse_scalar("--beta", a.beta);
    // alpha and beta name the case where they are not 1 and 0, so that a residual's run (beta 1) is told
    // apart from the plain product's in its rows.
    GemmCase c{.name = std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + "_" +
                             a.layout + "_" + a.type + "_" + a.out_type + "_" + a.epilogue +
                             (alpha != 1.0f ? "_alpha" + a.alpha : "") + (beta != 0.0f ? "_beta" + a.beta : "") +
                             (a.allow_atomics ? "_atomics" : ""),
                     .desc = d,
                     .alpha = alpha,
                     .beta = beta};
    if (a.kernel != "auto") c.kernel = a.kernel;
    const std::string file_kernel = with_group_m(a.group_m, a.kernel, {&c});
    std::vector<Contender> baselines;
    for (Contender b : {Contender::cublaslt, Contender::rigel_decomposed, Contender::cublas})
        if (gemm::applies(b, c)) baselines.push_back(b);
    const PairedConfig timing = with_pacing(timing_of(cmd, a.common), cmd, a.blocks, a.pause);
    const std::uint64_t seed = parse_seed("--seed", a.common.seed);
    const int threads = parse_threads("--threads", a.common.threads);
    return run_bench_cases({{"run", {c}}}, {baselines}, "run", timing, seed, threads, a.common.out, file_kernel);
}

// ---- blockscaled: fp8 with DeepSeek-V3's block scales ------------------------------

// One of cuBLASLt's configurations beside k38: its output checked against float64 first (the
// verify_* cells), then, if it passed, timed against k38 in paired samples.
struct LtSide {
    std::string config{};              // the row's label
    std::string algorithm{};           // its tuned algorithm, or "refused: ..." / "failed: ..."
    std::string pass{}, err{}, reason{};  // the check of its output; empty where it did not run
    std::optional<PairedStats> vs{};   // k38 / cuBLASLt
};

// judge_block_scaled for a product with every scale 1 (cuBLASLt's fp8 without scales): the same bytes,
// the same gate, against float64 of the raw fp8 operands.
Verdict judge_unscaled(gemm::BlockScaledCase& c, std::span<const float> d, std::uint64_t seed, int threads) {
    std::vector<float> a(c.a.scales.size(), 1.0f), b(c.b.scales.size(), 1.0f);
    std::swap(a, c.a.scales);
    std::swap(b, c.b.scales);
    struct PutBack {
        gemm::BlockScaledCase& c;
        std::vector<float>&a, &b;
        ~PutBack() {
            std::swap(a, c.a.scales);
            std::swap(b, c.b.scales);
        }
    } put_back{c, a, b};
    return gemm::judge_block_scaled(c, d, seed, threads);
}

int run_block_scaled(const BlockScaledArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.common.out);
    gemm::Type t{};
    if (!gemm::parse_type(a.type, t) || (t != gemm::Type::e4m3 && t != gemm::Type::e5m2))
        throw std::invalid_argument("--type '" + a.type + "' is not e4m3 or e5m2");
    const DType type = t == gemm::Type::e4m3 ? DType::e4m3 : DType::e5m2;
    const std::vector<Shape> shapes = parse_shapes("--shapes", a.shapes, std::numeric_limits<std::int32_t>::max());
    for (const Shape& s : shapes)
        if (s.k % 16 != 0)
            throw std::invalid_argument("--shapes: K " + std::to_string(s.k) + " is not a multiple of 16 (TMA's 16-byte rows)");
    const std::uint64_t seed = parse_seed("--seed", a.common.seed);
    const int threads = parse_threads("--threads", a.common.threads);
    auto ex = sm90_device("rigel gemm blockscaled");
    // With --time, a row per cuBLASLt configuration (cublaslt_config): its block-scaled GEMM with the
    // same scales, then its default fp8 without scales. Each row repeats k38's check of the shape; k38's
    // rate and its ratio to k34 stand in the first row alone.
    static const std::vector<std::string> header{
        "run_id", "host", "device", "type", "m", "n", "k", "kernel", "pass", "err_max_scaled", "tolerance",
        "err_rel_fro", "reason", "tflops", "vs_k34_median", "vs_k34_p10", "vs_k34_p90", "vs_cublaslt_median",
        "vs_cublaslt_p10", "vs_cublaslt_p90", "cublaslt_algorithm", "pairs", "cublaslt_config", "cublaslt_pass",
        "cublaslt_err_max_scaled", "cublaslt_reason"};
    const PairedConfig timing = timing_of(cmd, a.common);
    const Rung* k34 = nullptr;
    for (const Rung& r : cuda_rungs())
        if (r.id == "k34_wgmma_fp8_promoted") k34 = &r;
    if (a.time && !k34) throw std::invalid_argument("--time needs the rung k34_wgmma_fp8_promoted, which this build lacks");
    RunFiles files(a.common.out, header, "verify", "blockscaled_" + a.type, "blockscaled", seed, *ex);
    std::vector<std::vector<std::string>> cells;
    int failed = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        const int m = static_cast<int>(shapes[i].m), n = static_cast<int>(shapes[i].n), k = static_cast<int>(shapes[i].k);
        gemm::BlockScaledCase c = gemm::make_block_scaled_case(type, m, n, k, seed + i);
        const std::size_t d_bytes = static_cast<std::size_t>(m) * n * sizeof(float);
        // The kernel's scale layouts (src/cuda/hopper/block_scaled.hpp): k-block-major, rows padded to 4.
        // A's is also cuBLASLt's VEC128_32F layout; B's is the transpose of its BLK128x128_32F layout, so
        // cuBLASLt gets B's scales repacked (src/cuda/vendor/cublaslt_block_scaled.hpp).
        const std::vector<float> a_scales = c.a.scales_block_major(cuda::scale_ld(m)),
                                 b_scales = c.b.scales_block_major(cuda::scale_ld(c.b.block_grid_rows())),
                                 b_scales_lt = cuda::vendor::lt_block_scales(c.b);
        DeviceBuffer da(*ex, c.a.bytes.size()), db(*ex, c.b.bytes.size()), dd(*ex, d_bytes),
            sa(*ex, a_scales.size() * sizeof(float)), sb(*ex, b_scales.size() * sizeof(float));
        ex->upload(da.get(), c.a.bytes.data(), c.a.bytes.size());
        ex->upload(db.get(), c.b.bytes.data(), c.b.bytes.size());
        ex->upload(sa.get(), a_scales.data(), a_scales.size() * sizeof(float));
        ex->upload(sb.get(), b_scales.data(), b_scales.size() * sizeof(float));
        ex->poison(dd.get(), d_bytes);
        cuda::fp8_block_scaled_gemm({.gemm = {.type = type, .m = m, .n = n, .k = k, .a = da.get(), .b = db.get(),
                                              .c = dd.get(), .stream = ex->stream()},
                                     .scale_a = static_cast<const float*>(sa.get()),
                                     .scale_b = static_cast<const float*>(sb.get())});
        ex->synchronize();
        std::vector<float> d(static_cast<std::size_t>(m) * n);
        ex->download(d.data(), dd.get(), d_bytes);
        const Verdict v = gemm::judge_block_scaled(c, d, seed + i, threads);
        // --time: k38 with these scales against k34 (the same bytes, no scales), against cuBLASLt's
        // block-scaled fp8 with the same scales, and against its default fp8 (per-tensor scales of 1,
        // fp32 out), in paired samples; each side writes a buffer of its own. Each cuBLASLt output is
        // checked against float64 before it is timed: the block-scaled one against the same reference
        // as k38's (the dequantized operands), the unscaled one against the product it computes (the
        // raw fp8 operands).
        std::vector<std::string> k38_timed(4);
        std::string k34_pairs;
        std::vector<LtSide> lt;
        if (a.time && v.pass) {
            const GemmProblem gp{.type = type, .m = m, .n = n, .k = k, .a = da.get(), .b = db.get(), .c = dd.get(),
                                 .stream = ex->stream()};
            DeviceBuffer other(*ex, d_bytes);
            GemmProblem gp_other = gp;
            gp_other.c = other.get();
            const auto scaled = [&] {
                return ex->time_once([&] {
                    cuda::fp8_block_scaled_gemm({.gemm = gp, .scale_a = static_cast<const float*>(sa.get()),
                                                 .scale_b = static_cast<const float*>(sb.get())});
                });
            };
            const PairedStats vs_k34 = measure_paired(scaled, [&] { return ex->time_once([&] { k34->run(gp_other); }); },
                                                      timing);
            const double flops = 2.0 * m * n * static_cast<double>(k);
            k38_timed = {num(flops / vs_k34.a.median_s / 1e12), num(vs_k34.ratio_median), num(vs_k34.ratio_p10),
                         num(vs_k34.ratio_p90)};
            k34_pairs = std::to_string(vs_k34.pairs);
            say("  k38 / k34 " + num(vs_k34.ratio_median) + " [" + num(vs_k34.ratio_p10) + ", " +
                num(vs_k34.ratio_p90) + "], " + k38_timed[0] + " Tflop/s");

            DeviceBuffer sb_lt(*ex, b_scales_lt.size() * sizeof(float));
            ex->upload(sb_lt.get(), b_scales_lt.data(), b_scales_lt.size() * sizeof(float));
            const cuda::vendor::LtBlockScaled lt_problem{.type = t, .m = m, .n = n, .k = k, .a = da.get(),
                                                         .b = db.get(),
                                                         .a_scales = static_cast<const float*>(sa.get()),
                                                         .b_scales = static_cast<const float*>(sb_lt.get()),
                                                         .d = static_cast<float*>(other.get())};
            const gemm::Desc desc{.m = m, .n = n, .k = k, .a_type = t, .b_type = t, .a_op = gemm::Op::n,
                                  .b_op = gemm::Op::t, .d_type = gemm::Type::f32};
            struct Config {
                std::string label;
                std::function<std::string()> support;
                std::function<void()> launch;
                std::function<std::string()> algorithm;  // asked after the first launch, which tunes
                bool scaled;
            };
            // The block-scaled baseline is CUDA code the CLI calls directly; a build without CUDA never
            // gets here (sm90_device() said "skipped"), and links no such code.
#if RIGEL_HAVE_CUDA
            const auto lt_support = [&] { return cuda::vendor::cublaslt_block_scaled_support(lt_problem); };
            const auto lt_launch = [&] {
                cuda::vendor::cublaslt_block_scaled(lt_problem, static_cast<gemm::Stream>(ex->stream()));
            };
            const auto lt_algorithm = [&] { return cuda::vendor::cublaslt_block_scaled_algorithm(lt_problem); };
#else
            (void)lt_problem;
            const auto lt_support = [] { return std::string("rigel was built without CUDA"); };
            const auto lt_launch = [] {};
            const auto lt_algorithm = [] { return std::string(); };
#endif
            std::string unscaled_algorithm;
            const Config configs[] = {
                {"block scales: A 1 x 128 (VEC128_32F), B 128 x 128 (BLK128x128_32F), fp32 out", lt_support, lt_launch,
                 lt_algorithm, true},
                // cuBLASLt refuses some shapes rigel takes (fp8 wants 16-byte rows of D: N % 4 == 0 for fp32).
                {"no scaling (per-tensor scales of 1), fp32 out",
                 [&] { return gemm::baseline_support(gemm::Contender::cublaslt, desc); },
                 [&] {
                     unscaled_algorithm = gemm::run_baseline(gemm::Contender::cublaslt, desc,
                                                             {.a = da.get(), .b = db.get(), .d = other.get()},
                                                             static_cast<gemm::Stream>(ex->stream()));
                 },
                 [&] { return unscaled_algorithm; }, false}};
            for (const Config& cfg : configs) {
                LtSide side{.config = cfg.label};
                std::string said;
                try {
                    if (std::string why = cfg.support(); !why.empty()) {
                        side.algorithm = "refused: " + why;
                        said = "cuBLASLt (" + cfg.label + ") refuses: " + why;
                    } else {
                        // The first launch tunes (untimed) and is the one checked.
                        ex->poison(other.get(), d_bytes);
                        cfg.launch();
                        ex->synchronize();
                        side.algorithm = cfg.algorithm();
                        std::vector<float> d_lt(static_cast<std::size_t>(m) * n);
                        ex->download(d_lt.data(), other.get(), d_bytes);
                        const Verdict lv = cfg.scaled ? gemm::judge_block_scaled(c, d_lt, seed + i, threads)
                                                      : judge_unscaled(c, d_lt, seed + i, threads);
                        side.pass = lv.pass ? "1" : "0";
                        side.err = num(lv.err_max_scaled);
                        side.reason = lv.reason;
                        if (!lv.pass) {
                            said = "cuBLASLt (" + cfg.label + ") FAILS its check, not timed: " + lv.reason;
                        } else {
                            side.vs = measure_paired(scaled, [&] { return ex->time_once(cfg.launch); }, timing);
                            said = "k38 / cuBLASLt (" + cfg.label + ") " + num(side.vs->ratio_median) + " [" +
                                   num(side.vs->ratio_p10) + ", " + num(side.vs->ratio_p90) + "]";
                        }
                    }
                } catch (const std::exception& e) {
                    // A refusal at launch or a failed call is this configuration's answer, not the run's.
                    side.algorithm = std::string("failed: ") + e.what();
                    said = "cuBLASLt (" + cfg.label + ") failed: " + e.what();
                }
                say("  " + said);
                lt.push_back(std::move(side));
            }
        }
        failed += !v.pass;
        const std::string shape = std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k);
        say(a.type + " " + shape + " with block scales (A 1 x 128, B 128 x 128): " + (v.pass ? "pass" : "FAIL") +
            ", error " + num(v.err_max_scaled / v.tolerance) + " of its allowance" +
            (v.reason.empty() ? "" : " (" + v.reason + ")"));
        const RowContext& x = files.rows();
        const std::vector<std::string> k38_cells{x.run_id, x.host, x.device, a.type, std::to_string(m),
                                                 std::to_string(n), std::to_string(k), "k38_wgmma_fp8_block_scaled",
                                                 v.pass ? "1" : "0", num(v.err_max_scaled), num(v.tolerance),
                                                 num(v.err_rel_fro), v.reason};
        if (lt.empty()) {
            std::vector<std::string> row = k38_cells;
            row.insert(row.end(), k38_timed.begin(), k38_timed.end());
            row.resize(header.size());
            cells.push_back(row);
        }
        for (std::size_t r = 0; r < lt.size(); ++r) {
            const LtSide& l = lt[r];
            std::vector<std::string> row = k38_cells;
            for (const std::string& cell : r == 0 ? k38_timed : std::vector<std::string>(4)) row.push_back(cell);
            for (const std::string& cell :
                 {l.vs ? num(l.vs->ratio_median) : "", l.vs ? num(l.vs->ratio_p10) : "",
                  l.vs ? num(l.vs->ratio_p90) : "", l.algorithm,
                  (r == 0 ? k34_pairs : std::string()) + (l.vs ? "/" + std::to_string(l.vs->pairs) : ""), l.config,
                  l.pass, l.err, l.reason})
                row.push_back(cell);
            cells.push_back(row);
        }
        JsonObject side;
        side.str("recipe", "A: 1 x 128 blocks, B: 128 x 128 blocks, s = amax / max(type) in fp32")
            .str("cublaslt_configs",
                 "with --time, a row per cuBLASLt configuration (cublaslt_config): its block-scaled fp8 with the "
                 "same scales (CUBLASLT_MATMUL_DESC_A/B_SCALE_MODE), its output checked against the same float64 "
                 "reference of the dequantized operands as k38's; and its default fp8 without scales, checked "
                 "against float64 of the raw fp8 operands; a configuration is timed only where its check passed");
        files.write(cells, side, i + 1 == shapes.size());
    }
    files.report(cells.size());
    return failed ? 1 : 0;
}

// ---- list ----------------------------------------------------------------------

int run_list(const ListArgs& a) {
    if (a.suite.empty()) {
        std::printf("%-9s %5s  %-28s %s\n", "suite", "cases", "baselines", "purpose");
        for (const GemmSuite& s : gemm::gemm_suites()) {
            std::string b;
            for (Contender c : s.baselines) b += (b.empty() ? "" : " ") + std::string(gemm::name(c));
            std::printf("%-9s %5zu  %-28s %s\n", std::string(s.name).c_str(), s.cases.size(),
                        b.empty() ? "(verify only)" : b.c_str(), std::string(s.purpose).c_str());
        }
        std::printf("%-9s %5zu  %-28s %s\n", kRefusalSuite, gemm::refusal_cases().size(), "(verify only)",
                    "calls Plan must refuse before launch, each for its reason");
        return 0;
    }
    if (a.suite == kRefusalSuite) {
        for (const auto& r : gemm::refusal_cases()) std::printf("%-22s %s\n", r.name.c_str(), r.expect.c_str());
        return 0;
    }
    if (a.sms < 1) throw std::invalid_argument("--sms must be at least 1, not " + std::to_string(a.sms));
    if (!(a.dram_tbps > 0 && a.dram_tbps < 1000)) {
        char given[32];
        std::snprintf(given, sizeof given, "%g", a.dram_tbps);
        throw std::invalid_argument(std::string("--dram-tbps must be a DRAM peak in TB/s above 0 and below 1000, not ") +
                                    given);
    }
    const GemmSuite& s = suite_named(a.suite, std::string(", ") + kRefusalSuite);
    // Each case with the kernel it runs on: the one it names, or the dispatcher's for a GPU of --sms SMs
    // and --dram-tbps of DRAM (host code: no device needed).
    for (const GemmCase& c : s.cases) {
        const gemm::Desc d = gemm::with_packed_leading_dimensions(c.desc);
        std::optional<gemm::Choice> k = gemm::case_choice(c, a.sms, a.dram_tbps * 1e12);
        // The dispatcher's plan runs a call with beta != 0 on its residual plan where its kernel has no path
        // for C (Plan::choice_for).
        if (k && c.beta != 0.0f && gemm::on_dispatcher_plan(c))
            if (std::optional<gemm::Choice> r = gemm::residual_choice(c.desc, *k, a.dram_tbps * 1e12)) k = r;
        std::printf("%-58s %-44s lda %-5lld ldb %-5lld ldd %-5lld alpha %g beta %g%s x%d  %s\n", c.name.c_str(),
                    shape_text(d).c_str(), static_cast<long long>(d.lda), static_cast<long long>(d.ldb),
                    static_cast<long long>(d.ldd), static_cast<double>(c.alpha), static_cast<double>(c.beta),
                    c.in_place ? " in place" : "", c.count, k ? gemm::kernel_text(*k).c_str() : "(no such kernel)");
        if (a.why && k) std::printf("    %s\n", k->why.c_str());
    }
    return 0;
}

}  // namespace

std::vector<SubcommandHook> add_gemm_commands(CLI::App& app) {
    // The hooks outlive this call: the arguments live as long as the program.
    static VerifyArgs va;
    static BenchArgs ba;
    static RunArgs ra;
    static ListArgs la;
    static BlockScaledArgs bsa;
    auto* gemm_cmd = app.add_subcommand("gemm", "The GEMM library on the device: verify it, time it against cuBLASLt "
                                                "and cuBLAS, run one case");
    gemm_cmd->require_subcommand(1);

    auto* verify = gemm_cmd->add_subcommand("verify", "Check every case of a suite against float64 (exit 1 if one "
                                                      "fails)");
    verify->add_option("--suite", va.suite, "a suite (" + suite_names() + "), or refusals")->capture_default_str();
    verify->add_option("--cases", va.cases,
                       "only the cases whose names contain one of these comma-separated texts (files named "
                       "..._subset_..., left out of the report)");
    add_common_options(verify, va.common, false);

    auto* bench = gemm_cmd->add_subcommand("bench", "Time rigel against its baselines in paired samples, each pair "
                                                    "verified first");
    std::string timed;
    for (const GemmSuite* s : gemm::bench_suites()) timed += (timed.empty() ? "" : ", ") + std::string(s->name);
    bench->add_option("--suite", ba.suite, "a timed suite (" + timed + "), or all");
    bench->add_option("--kernel", ba.kernel,
                      "run every case on this kernel instead of the dispatcher's choice (" + gemm::kernel_names() +
                          "); cases whose type lacks it are left out")
        ->capture_default_str();
    const std::string group_m_help =
        "the ping-pong kernels' tile order: groups of this many tile rows, each walked down its rows before the "
        "next column (default: the kernel's own, 8; 1 walks D row by row); a kernel --kernel names must be a "
        "ping-pong one, the dispatcher's other choices keep their order";
    bench->add_option("--group-m", ba.group_m, group_m_help);
    bench->add_option("--cases", ba.cases,
                      "only the cases whose names contain one of these comma-separated texts (files named "
                      "..._subset_..., left out of the report)");
    const std::string blocks_help =
        "time each side alone in blocks of this many seconds of samples, the sides taking turns (A B, B A, ...), "
        "instead of one sample each in turn: each side then runs at the clock its own power draw sets under the cap "
        "(files named ..._blocked_..., left out of the report)";
    bench->add_option("--blocks", ba.blocks, blocks_help);
    const std::string pause_help =
        "before each timed sample, leave the device idle this many seconds, so that every launch starts cool "
        "instead of at the clock that back-to-back launches hold under the power cap (files named ..._paused_..., "
        "left out of the report; --min-time counts the samples, not the pauses)";
    bench->add_option("--pause", ba.pause, pause_help);
    add_common_options(bench, ba.common, true);

    auto* run = gemm_cmd->add_subcommand("run", "One case: verified, then timed against its baselines");
    run->add_option("--m", ra.m, "rows of D")->required();
    run->add_option("--n", ra.n, "columns of D")->required();
    run->add_option("--k", ra.k, "the inner dimension")->required();
    run->add_option("--layout", ra.layout, "A's op then B's: NN, NT, TN or TT")->capture_default_str();
    run->add_option("--type", ra.type, "A's and B's type: bf16, f16, e4m3, e5m2")->capture_default_str();
    run->add_option("--out-type", ra.out_type, "D's type: f32, bf16, f16")->capture_default_str();
    run->add_option("--epilogue", ra.epilogue, "none, bias, bias_relu, bias_gelu, bias_gelu_erf, bias_gelu_aux, "
                                               "dgelu_bgrad")->capture_default_str();
    run->add_option("--alpha", ra.alpha, "alpha")->capture_default_str();
    run->add_option("--beta", ra.beta, "beta (not 0: C is read)")->capture_default_str();
    run->add_option("--kernel", ra.kernel, "the kernel instead of the dispatcher's choice (" + gemm::kernel_names() + ")")
        ->capture_default_str();
    run->add_option("--group-m", ra.group_m, group_m_help);
    run->add_flag("--allow-atomics", ra.allow_atomics,
                  "let the dispatcher add split-K partial tiles into an f32 D by atomics (gemm::Desc::allow_atomics: "
                  "the order of the additions varies from run to run)");
    run->add_option("--blocks", ra.blocks, blocks_help);
    run->add_option("--pause", ra.pause, pause_help);
    add_common_options(run, ra.common, true);

    auto* list = gemm_cmd->add_subcommand("list", "The suites, or the cases of one");
    list->add_option("--suite", la.suite, "a suite, or refusals");
    list->add_option("--sms", la.sms, "SMs of the GPU whose dispatcher choices to show (132: the H200)")
        ->capture_default_str();
    list->add_option("--dram-tbps", la.dram_tbps,
                     "that GPU's DRAM peak in TB/s, which rules 5a, 12 and 13 ask (4.8: the H200; 3.35: an H100 SXM)")
        ->capture_default_str();
    list->add_flag("--why", la.why, "under each case, the dispatcher's sentence on its choice");

    auto* scaled = gemm_cmd->add_subcommand("blockscaled", "fp8 with DeepSeek-V3's block scales (A per 1 x 128, B per "
                                                           "128 x 128; k38's kernel) against float64 of the "
                                                           "dequantized operands (exit 1 if one fails)");
    scaled->add_option("--shapes", bsa.shapes, "problems, MxNxK,... (K a multiple of 16), fresh inputs each")
        ->capture_default_str();
    scaled->add_option("--type", bsa.type, "e4m3 or e5m2")->capture_default_str();
    scaled->add_flag("--time", bsa.time, "also time k38 against k34 (no scales), cuBLASLt's block-scaled fp8 with "
                                          "the same scales and its default fp8 without, in paired samples (each "
                                          "cuBLASLt output checked against float64 first; a row per configuration)");
    add_common_options(scaled, bsa.common, true);

    return {{verify, [verify] { return run_verify(va, *verify); }},
            {scaled, [scaled] { return run_block_scaled(bsa, *scaled); }},
            {bench, [bench] { return run_bench(ba, *bench); }},
            {run, [run] { return run_one(ra, *run); }},
            {list, [] { return run_list(la); }}};
}

}  // namespace rigel::cli
