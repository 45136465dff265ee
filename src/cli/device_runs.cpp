// The device commands' shared parts (device_runs.hpp).
#include "cli/device_runs.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "cli/commands.hpp"
#include "harness/interrupt.hpp"
#include "harness/provenance.hpp"
#include "harness/timing.hpp"

namespace rigel::cli {
namespace {

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
    return buf;
}

}  // namespace

std::string num(double v) {
    if (!std::isfinite(v)) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

void say(const std::string& s) { std::fprintf(stderr, "rigel: %s\n", s.c_str()); }

PairedConfig timing_of(const CLI::App& cmd, const CommonArgs& a) {
    PairedConfig t = kBenchTiming;
    if (cmd.count("--warmup")) t.warmup_s = parse_seconds("--warmup", a.warmup);
    if (cmd.count("--min-time")) t.min_time_s = parse_seconds("--min-time", a.min_time);
    return t;
}

void add_common_options(CLI::App* cmd, CommonArgs& a, bool timed) {
    cmd->add_option("--out", a.out, "folder for the CSV and its JSON sidecar (none: print only)");
    cmd->add_option("--seed", a.seed, "input seed, 0 to 2^64-1")->capture_default_str();
    cmd->add_option("--threads", a.threads, "threads for the float64 reference (0: all)")->capture_default_str();
    if (!timed) return;
    const std::string seconds = "0 to " + std::to_string(static_cast<int>(kMaxMeasureSeconds));
    cmd->add_option("--warmup", a.warmup, "common warm-up seconds of each paired measurement, " + seconds +
                                              " (default " + num(kBenchTiming.warmup_s) + ")");
    cmd->add_option("--min-time", a.min_time,
                    "seconds of samples, both sides together, of each paired measurement, " + seconds + " (default " +
                        num(kBenchTiming.min_time_s) + "; at least " + std::to_string(kBenchTiming.min_pairs) +
                        " pairs)");
}

std::unique_ptr<Executor> sm90_device(const std::string& what) {
    auto ex = make_cuda_executor();
    if (const std::string why = ex->unavailable_reason(); !why.empty()) throw DeviceUnavailable("skipped: " + why);
    if (ex->compute_capability() != 90)
        throw DeviceUnavailable("skipped: " + what + " needs sm_90a (compute capability 9.0); " + ex->device_name() +
                                " is " + std::to_string(ex->compute_capability() / 10) + "." +
                                std::to_string(ex->compute_capability() % 10));
    return ex;
}

RunFiles::RunFiles(const std::string& out, const std::vector<std::string>& header, const std::string& what,
                   const std::string& file_tag, const std::string& suite, std::uint64_t seed, Executor& ex)
    : header_(header) {
    row_.run_id = make_run_id();
    row_.host = host_name();
    row_.device = ex.device_name();
    if (out.empty()) return;
    ensure_writable_dir(out);
    auto facts = ex.describe();
    for (const auto& f : make_host_executor()->describe()) facts.push_back(f);
    side_.run_id = row_.run_id;
    side_.what = what;
    side_.git = git_state();
    side_.env = collect_environment(facts);
    side_.seed = seed;
    side_.suite = suite;
    // The reports find a run's files by the tag's ending (_gemm.csv, _gemm_verify.csv, ...).
    const std::string base = utc_date() + "_" + side_.git.commit.substr(0, 7) + "_" + file_tag;
    const WriteGuard claimed_and_written;
    files_.emplace(out, base, row_.run_id);
    write({}, JsonObject{}, false);
}

void RunFiles::write(const std::vector<std::vector<std::string>>& cells, const JsonObject& details, bool complete) {
    if (!files_) return;
    side_.complete = complete;
    side_.interrupted = stop_requested();
    side_.details = details;
    files_->write(header_, cells, side_);
}

void RunFiles::report(std::size_t rows) const {
    if (files_)
        say(std::string(stop_requested() ? "interrupted: kept " : "wrote ") + std::to_string(rows) + " row(s) in " +
            files_->csv().string() + " and " + files_->json().filename().string());
    else if (stop_requested())
        say("interrupted after " + std::to_string(rows) + " row(s); nothing written (no --out)");
}

}  // namespace rigel::cli
