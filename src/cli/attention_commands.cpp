// `rigel attention`: rigel's fused attention verified and timed on the device.
//   rigel attention verify [--suite verify|NAME] [--baselines]   every case against float64 (exit 1 if one fails)
//   rigel attention bench --suite sdpa|gpt2|all [--cases TEXT,...]   rigel against cuDNN (and fa3 against fa2)
//   rigel attention list [--suite NAME]                          the suites, or one suite's cases
// Options are checked before the device is looked for; without a device the
// commands say "skipped" (exit 77).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/driver.hpp"
#include "attention/suites.hpp"
#include "core/case_filter.hpp"
#include "cli/commands.hpp"
#include "cli/device_runs.hpp"
#include "harness/interrupt.hpp"

namespace rigel::cli {
namespace {

using attention::AttentionCase;
using attention::AttentionSuite;

// The suites bench times (verify is for correctness only: its cases are small or odd).
// all: sdpa and gpt2 (targets is a subset of sdpa, for a short run).
constexpr const char* kTimedSuites[] = {"sdpa", "gpt2", "targets"};

struct VerifyArgs {
    std::string suite = "verify", kernel = "all";
    bool baselines = false;
    CommonArgs common;
};
struct BenchArgs {
    std::string suite, kernel = "fa3", cases;
    CommonArgs common;
};
struct ListArgs {
    std::string suite;
};

std::string suite_names() {
    std::string out;
    for (const AttentionSuite& s : attention::attention_suites())
        out += (out.empty() ? "" : ", ") + std::string(s.name);
    return out;
}

const AttentionSuite& suite_named(const std::string& name) {
    const AttentionSuite* s = attention::find_attention_suite(name);
    if (!s) throw std::invalid_argument("unknown suite '" + name + "' (known: " + suite_names() + ")");
    return *s;
}

constexpr attention::Kernel kKernels[] = {attention::Kernel::decomposed, attention::Kernel::fa2,
                                          attention::Kernel::fa3};

// --kernel: one of kKernels, or (allow_all) all of them.
std::vector<attention::Kernel> kernels_named(const std::string& text, bool allow_all) {
    if (allow_all && text == "all") return {std::begin(kKernels), std::end(kKernels)};
    attention::Kernel k{};
    if (!attention::parse_kernel(text, k))
        throw std::invalid_argument("--kernel '" + text + "' is not decomposed, fa2 or fa3" +
                                    (allow_all ? " or all" : ""));
    return {k};
}

// The columns every row shares: the problem.
std::vector<std::string> desc_cells(const attention::Desc& d) {
    return {std::to_string(d.batch), std::to_string(d.heads), std::to_string(d.seq), std::to_string(d.head_dim),
            d.causal ? "1" : "0",    std::to_string(d.ldq),   std::to_string(d.ldk), std::to_string(d.ldv),
            std::to_string(d.ldo)};
}

std::string direction(bool backward) { return backward ? "backward" : "forward"; }

const std::vector<std::string>& verify_header() {
    static const std::vector<std::string> h{"run_id", "host",  "device",         "case",          "batch",
                                            "heads",  "seq",   "head_dim",       "causal",        "ldq",
                                            "ldk",    "ldv",   "ldo",            "contender",     "direction",   "kernel",
                                            "pass",   "err_max_scaled", "checked_heads", "checked_rows", "reason"};
    return h;
}

const std::vector<std::string>& bench_header() {
    static const std::vector<std::string> h{
        "run_id",   "host",      "device",   "suite",  "case",        "batch",          "heads",
        "seq",      "head_dim",  "causal",   "ldq",    "ldk",         "ldv",            "ldo",  "direction",
        "candidate", "baseline", "kernel",   "pairs",  "candidate_tflops", "baseline_tflops", "ratio_median",
        "ratio_p10", "ratio_p90", "candidate_ms", "baseline_ms", "sm_clock_mhz", "power_w", "temp_c"};
    return h;
}

std::vector<std::string> verify_cells(const RowContext& x, const attention::VerifyRow& r) {
    std::vector<std::string> c{x.run_id, x.host, x.device, r.case_name};
    for (auto& cell : desc_cells(r.desc)) c.push_back(std::move(cell));
    for (auto& cell : {std::string(attention::name(r.who)), direction(r.backward), r.kernel,
                       std::string(r.pass ? "1" : "0"),
                       num(r.err_max_scaled), std::to_string(r.checked_heads), std::to_string(r.checked_rows),
                       r.reason})
        c.push_back(cell);
    return c;
}

std::vector<std::string> bench_cells(const RowContext& x, const std::string& suite, const attention::BenchRow& r) {
    std::vector<std::string> c{x.run_id, x.host, x.device, suite, r.case_name};
    for (auto& cell : desc_cells(r.desc)) c.push_back(std::move(cell));
    const bool paired = r.baseline != attention::Contender::none;
    const DeviceSample& d = r.sample;
    for (auto& cell :
         {direction(r.backward), std::string("rigel"), std::string(attention::name(r.baseline)), r.kernel,
          std::to_string(r.stats.pairs),
          num(r.candidate_tflops), paired ? num(r.baseline_tflops) : "", paired ? num(r.stats.ratio_median) : "",
          paired ? num(r.stats.ratio_p10) : "", paired ? num(r.stats.ratio_p90) : "", num(r.stats.a.median_s * 1e3),
          paired ? num(r.stats.b.median_s * 1e3) : "", d.valid ? num(d.sm_clock_mhz) : "",
          d.valid ? num(d.power_w) : "", d.valid ? num(d.temp_c) : ""})
        c.push_back(cell);
    return c;
}

void print_verify_row(const attention::VerifyRow& r) {
    std::printf("%-28s %-9s %-8s %-26s %-4s %9s  %s\n", r.case_name.c_str(), attention::name(r.who),
                direction(r.backward).c_str(), r.kernel.c_str(), r.pass ? "pass" : "FAIL",
                num(r.err_max_scaled).c_str(), r.reason.c_str());
    std::fflush(stdout);
}

int run_verify(const VerifyArgs& v, const CLI::App& cmd) {
    const CommonArgs& a = v.common;
    check_out_option(cmd, a.out);
    const AttentionSuite& suite = suite_named(v.suite);
    const std::vector<attention::Kernel> kernels = kernels_named(v.kernel, true);
    const std::uint64_t seed = parse_seed("--seed", a.seed);
    const int threads = parse_threads("--threads", a.threads);
    auto ex = sm90_device("rigel's attention");
    install_stop_handlers();
    RunFiles files(a.out, verify_header(), "attention_verify", v.suite + "_attention_verify", v.suite, seed, *ex);
    std::vector<std::vector<std::string>> cells;
    std::vector<attention::VerifyRow> failed;
    std::size_t checks = 0;
    const auto details = [&] {
        JsonObject d;
        d.str("suite", v.suite)
            .str("kernel", v.kernel)
            .integer("cases", static_cast<long long>(suite.cases.size()))
            .integer("threads", threads)
            .integer("failed", static_cast<long long>(failed.size()));
        return d;
    };
    for (const AttentionCase& c : suite.cases) {
        if (stop_requested()) break;
        for (std::size_t k = 0; k < kernels.size(); ++k)
            // cuDNN once per case, beside the first kernel.
            for (const attention::VerifyRow& r :
                 attention::verify_case(*ex, c, kernels[k], v.baselines && k == 0, seed, threads)) {
                print_verify_row(r);
                cells.push_back(verify_cells(files.rows(), r));
                ++checks;
                // A baseline's failure is a finding about it, not a failure of rigel.
                if (!r.pass && r.who == attention::Contender::rigel) failed.push_back(r);
            }
        files.write(cells, details(), false);
    }
    files.write(cells, details(), !stop_requested());
    files.report(cells.size());
    if (stop_requested()) return 128 + stop_signal();
    if (!failed.empty()) {
        say(std::to_string(failed.size()) + " of rigel's checks FAILED (first: " + failed.front().case_name + ": " +
            failed.front().reason + ")");
        return 1;
    }
    say("all " + std::to_string(checks) + " check(s) passed");
    return 0;
}

int run_bench(const BenchArgs& b, const CLI::App& cmd) {
    const CommonArgs& a = b.common;
    check_out_option(cmd, a.out);
    if (b.suite.empty()) throw std::invalid_argument("--suite is required: sdpa, gpt2, targets or all");
    std::vector<const AttentionSuite*> suites;
    for (const char* name : kTimedSuites)
        if ((b.suite == "all" && std::string(name) != "targets") || b.suite == name) suites.push_back(&suite_named(name));
    if (suites.empty()) {
        suite_named(b.suite);  // unknown: says so
        throw std::invalid_argument("suite " + b.suite + " is not timed: rigel attention verify --suite " + b.suite +
                                    " checks it");
    }
    // --cases: each text must name a case of the suites asked for; the others are left out.
    const std::vector<std::string> texts = b.cases.empty() ? std::vector<std::string>{} : case_filter_texts(b.cases);
    for (const std::string& t : texts) {
        bool found = false;
        for (const AttentionSuite* s : suites)
            for (const AttentionCase& c : s->cases) found = found || name_matches(c.name, {t});
        if (!found)
            throw std::invalid_argument("--cases: no case of suite " + b.suite + " has '" + t +
                                        "' in its name (rigel attention list --suite " + b.suite + ")");
    }
    const attention::Kernel kernel = kernels_named(b.kernel, false).front();
    const PairedConfig timing = timing_of(cmd, a);
    check_paired_config(timing);
    const std::uint64_t seed = parse_seed("--seed", a.seed);
    const int threads = parse_threads("--threads", a.threads);
    auto ex = sm90_device("rigel's attention");
    install_stop_handlers();
    // A run of some cases names its files ..._subset_attention.csv; the report reads each case's newest row.
    RunFiles files(a.out, bench_header(), "attention_bench", b.suite + (texts.empty() ? "" : "_subset") + "_attention",
                   b.suite, seed, *ex);

    std::vector<std::vector<std::string>> cells;
    std::vector<std::pair<std::string, attention::BenchRow>> timed;
    std::vector<std::string> failures, skipped;
    const auto write = [&](bool complete) {
        JsonObject d;
        d.str("suite", b.suite)
            .str("cases_filter", b.cases)
            .str("kernel", b.kernel)
            .num("warmup_s", timing.warmup_s)
            .num("min_time_s", timing.min_time_s)
            .integer("min_pairs", timing.min_pairs)
            .array_of_str("verification_failures", failures)
            .array_of_str("baselines_skipped", skipped);
        files.write(cells, d, complete);
    };
    for (const AttentionSuite* s : suites)
        for (const AttentionCase& c : s->cases) {
            if (stop_requested()) break;
            if (!texts.empty() && !name_matches(c.name, texts)) continue;
            say(std::string(s->name) + " " + c.name + " (" + attention::shape_text(c.desc) + "): verifying, then timing");
            const attention::BenchOutcome o = attention::bench_case(*ex, c, kernel, timing, seed, threads);
            for (const attention::VerifyRow& v : o.verified) {
                say("  " + std::string(attention::name(v.who)) + " " + direction(v.backward) + " (" + v.kernel + "): " +
                    (v.pass ? "pass, error " + num(v.err_max_scaled) + " of its allowance" : "FAIL: " + v.reason));
                if (!v.pass) failures.push_back(std::string(s->name) + " " + c.name + " " + attention::name(v.who) +
                                                ": " + v.reason);
            }
            for (const std::string& why : o.skipped) {
                skipped.push_back(std::string(s->name) + " " + c.name + " " + why);
                say("  not timed against " + why);
            }
            for (const attention::BenchRow& r : o.rows) {
                cells.push_back(bench_cells(files.rows(), std::string(s->name), r));
                timed.emplace_back(std::string(s->name), r);
            }
            write(false);
        }
    write(!stop_requested());
    std::printf("\n%-6s %-20s %-8s %-10s %-24s %s\n", "suite", "case", "pass", "vs", "ratio median [p10, p90]",
                "Tflop/s rigel / baseline");
    for (const auto& [suite, r] : timed) {
        char ratio[64] = "-";
        if (r.baseline != attention::Contender::none)
            std::snprintf(ratio, sizeof ratio, "%.3f [%.3f, %.3f]", r.stats.ratio_median, r.stats.ratio_p10,
                          r.stats.ratio_p90);
        std::printf("%-6s %-20s %-8s %-10s %-24s %.1f / %.1f\n", suite.c_str(), r.case_name.c_str(),
                    direction(r.backward).c_str(), attention::name(r.baseline), ratio, r.candidate_tflops,
                    r.baseline_tflops);
    }
    std::fflush(stdout);
    files.report(cells.size());
    if (stop_requested()) return 128 + stop_signal();
    if (!failures.empty()) {
        say(std::to_string(failures.size()) + " verification(s) FAILED (first: " + failures.front() + ")");
        return 1;
    }
    return 0;
}

int run_list(const ListArgs& a) {
    if (a.suite.empty()) {
        std::printf("%-8s %5s  %s\n", "suite", "cases", "purpose");
        for (const AttentionSuite& s : attention::attention_suites())
            std::printf("%-8s %5zu  %s\n", std::string(s.name).c_str(), s.cases.size(), std::string(s.purpose).c_str());
        return 0;
    }
    for (const AttentionCase& c : suite_named(a.suite).cases) {
        const attention::Desc d = attention::with_defaults(c.desc);
        std::printf("%-36s %-36s ldq %-5lld ldk %-5lld ldv %-5lld ldo %-5lld\n", c.name.c_str(),
                    attention::shape_text(d).c_str(), static_cast<long long>(d.ldq), static_cast<long long>(d.ldk),
                    static_cast<long long>(d.ldv), static_cast<long long>(d.ldo));
    }
    return 0;
}

}  // namespace

std::vector<SubcommandHook> add_attention_commands(CLI::App& app) {
    static VerifyArgs va;
    static BenchArgs ba;
    static ListArgs la;
    auto* cmd = app.add_subcommand("attention", "rigel's fused attention on the device: verify it, time it against "
                                                "cuDNN");
    cmd->require_subcommand(1);

    auto* verify = cmd->add_subcommand("verify", "Check every case of a suite against float64 (exit 1 if one fails)");
    verify->add_option("--suite", va.suite, "a suite (" + suite_names() + ")")->capture_default_str();
    verify->add_option("--kernel", va.kernel, "rigel's kernel: decomposed, fa2, fa3, or all")->capture_default_str();
    verify->add_flag("--baselines", va.baselines, "check cuDNN's output too (its failures are reported, not fatal)");
    add_common_options(verify, va.common, false);

    auto* bench = cmd->add_subcommand("bench", "Time rigel against cuDNN (and fa3 against fa2) in paired samples, each "
                                               "verified first");
    bench->add_option("--suite", ba.suite, "sdpa, gpt2, targets (sdpa at S = 4096), or all (sdpa and gpt2)");
    bench->add_option("--kernel", ba.kernel, "rigel's kernel: decomposed, fa2 or fa3 (fa3 is also timed against fa2 "
                                             "and the decomposed rung)")
        ->capture_default_str();
    bench->add_option("--cases", ba.cases, "only the cases whose names contain one of these comma-separated texts "
                                           "(e.g. s4096_d128)");
    add_common_options(bench, ba.common, true);

    auto* list = cmd->add_subcommand("list", "The suites, or the cases of one");
    list->add_option("--suite", la.suite, "a suite");

    return {{verify, [verify] { return run_verify(va, *verify); }},
            {bench, [bench] { return run_bench(ba, *bench); }},
            {list, [] { return run_list(la); }}};
}

}  // namespace rigel::cli
