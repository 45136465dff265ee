// Subcommand wiring (CLI11), the checks of every option, and the ladder
// command in three steps: plan (every option checked before anything runs),
// run (with a checkpoint of the result files after every shape and type) and
// report (the printed table, the last write, the exit code).
#include "cli/commands.hpp"
#include "cli/device_runs.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "harness/interrupt.hpp"
#include "harness/provenance.hpp"
#include "harness/report_io.hpp"
#include "harness/timing.hpp"
#include "ladder/runner.hpp"
#include "ladder/suites.hpp"

namespace rigel::cli {

std::uint64_t parse_seed(const std::string& option, const std::string& text) {
    std::uint64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    // from_chars takes no sign for an unsigned type: "-1" is refused, never wrapped to 2^64-1.
    if (text.empty() || ec != std::errc() || p != end)
        throw std::invalid_argument(option + " '" + text + "' is not an integer from 0 to 18446744073709551615");
    return v;
}

double parse_seconds(const std::string& option, const std::string& text) {
    double v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v) || v < 0 || v > kMaxMeasureSeconds) {
        char max[16];
        std::snprintf(max, sizeof max, "%g", kMaxMeasureSeconds);
        throw std::invalid_argument(option + " '" + text + "' is not a number of seconds from 0 to " + max);
    }
    return v;
}

int parse_threads(const std::string& option, const std::string& text) {
    const unsigned hw = std::thread::hardware_concurrency();
    int v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    const std::string range = hw ? "from 0 (all; under rigel launch, each rank's share) to " + std::to_string(hw) +
                                       ", this machine's hardware threads"
                                 : "of at least 0 (all)";
    if (text.empty() || ec != std::errc() || p != end || v < 0 || (hw && static_cast<unsigned>(v) > hw))
        throw std::invalid_argument(option + " '" + text + "' is not a thread count " + range);
    return v;
}

std::vector<Shape> parse_shapes(const std::string& option, const std::string& text, std::int64_t max_extent) {
    std::vector<Shape> out;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t end = std::min(text.find(',', at), text.size());
        const std::string one = text.substr(at, end - at);
        try {
            out.push_back(parse_shape(one));
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(option + ": " + e.what());
        }
        if (out.back().m > max_extent || out.back().n > max_extent || out.back().k > max_extent)
            throw std::invalid_argument(option + ": '" + one + "' has an extent above " + std::to_string(max_extent));
        at = end + 1;
    }
    return out;
}

namespace {

std::vector<std::string> given_options(const CLI::App& cmd) {
    std::vector<std::string> out;
    for (const CLI::Option* o : cmd.get_options())
        if (o->count() > 0) out.push_back(o->get_name());
    return out;
}

}  // namespace

void refuse_beside(const CLI::App& cmd, const std::string& option, const std::vector<std::string>& conflicting) {
    if (cmd.count(option) == 0) return;
    for (const std::string& other : given_options(cmd))
        if (other != option && (conflicting.empty() || std::find(conflicting.begin(), conflicting.end(), other) !=
                                                           conflicting.end()))
            throw std::invalid_argument(option + " takes no " + other + (conflicting.empty() ? " (nor any other option)"
                                                                                             : " (it would be ignored)"));
}

void check_out_option(const CLI::App& cmd, const std::string& out) {
    if (cmd.count("--out") && out.empty()) throw std::invalid_argument("--out needs a folder name");
}

namespace {

std::string opt(const char* f, double v) {
    if (!std::isfinite(v)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

void print_table(const std::vector<ResultRow>& rows) {
    std::string last;
    for (const ResultRow& r : rows) {
        const std::string group = r.shape.str() + "  " + r.dtype;
        if (group != last) {
            std::printf("\n%s\n%-34s %-5s %4s %14s %9s %9s %-6s %9s\n", group.c_str(), "rung", "bknd", "thr", "rate",
                        "x naive", "% vendor", "check", "max err");
            last = group;
        }
        if (r.status == Status::skip) {
            std::printf("%-34s %-5s %4d %14s %9s %9s %-6s %s\n", r.rung.c_str(), r.backend.c_str(), r.threads, "-",
                        "-", "-", "SKIP", r.reason.c_str());
            continue;
        }
        const auto type = parse_dtype(r.dtype);
        const std::string rate = r.gflops > 0 && type ? format_rate(r.gflops, rate_unit(*type)) : "-";
        std::printf("%-34s %-5s %4d %14s %9s %9s %-6s %9s%s%s\n", r.rung.c_str(), r.backend.c_str(), r.threads,
                    rate.c_str(), opt("%.1fx", r.x_over_naive).c_str(),
                    opt("%.1f%%", r.pct_of_vendor).c_str(), std::string(name(r.status)).c_str(),
                    opt("%.2g", r.verdict.err_max_scaled).c_str(), r.reason.empty() ? "" : "  ",
                    r.reason.c_str());
    }
    std::fflush(stdout);
}

// The ladder's timing unless --warmup, --min-time or a suite says otherwise.
// The CPU's rungs are slow enough that fewer repetitions settle the median;
// max_time_s stops a slow rung early, but never before --min-time.
constexpr TimingConfig kCpuTiming{.warmup_s = 0.1, .min_time_s = 0.5, .min_reps = 3, .max_reps = 200, .max_time_s = 20.0};
constexpr TimingConfig kGpuTiming{.warmup_s = 0.3, .min_time_s = 0.5, .min_reps = 10, .max_reps = 2000, .max_time_s = 10.0};

std::string num_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// The options as typed: numbers stay text until plan_ladder checks them.
struct LadderArgs {
    std::string backend = "cpu";
    std::vector<std::string> sizes;
    std::vector<std::string> dtypes;
    std::vector<std::string> rungs;
    std::string recipe = "uniform";
    std::string seed = "1";
    std::string threads = "0";
    std::string out;
    bool force = false;
    bool verify_only = false;
    bool paired = false;
    bool list = false;
    std::string warmup, min_time;
    std::string suite;
    bool list_suites = false;
};

// Every registered rung, CPU first. The program is where the registries
// meet: the runner gets this list through its context.
std::vector<const Rung*> all_rungs() {
    std::vector<const Rung*> out;
    for (const auto& r : cpu_rungs()) out.push_back(&r);
    for (const auto& r : cuda_rungs()) out.push_back(&r);
    return out;
}

void list_rungs() {
    std::printf("%-34s %-5s %-7s %-7s %s\n", "rung", "bknd", "group", "min_sm", "lesson");
    for (const Rung* r : all_rungs()) {
        std::printf("%-34s %-5s %-7s %-7s %s\n", std::string(r->id).c_str(), std::string(name(r->backend)).c_str(),
                    std::string(r->group).c_str(), r->min_sm ? std::to_string(r->min_sm).c_str() : "-",
                    std::string(r->lesson).c_str());
    }
}

// Every suite, with what it runs, each checked against this build's registry:
// a suite that names a rung or type the registry lacks is a defect of rigel,
// and is reported as such.
void list_suites() {
    const auto rungs = all_rungs();
    std::vector<std::string> broken;
    std::printf("%-12s %-5s %s\n", "suite", "bknd", "purpose");
    for (const Suite& s : suite_table()) {
        const SuiteCheck check = check_suite(s, rungs);
        std::string odd;
        if (check.problems.empty()) {
            std::vector<Shape> shapes;
            for (const auto& text : s.sizes) shapes.push_back(parse_shape(text));
            std::vector<Backend> backends{Backend::cpu, Backend::cuda};
            if (s.backend == "cpu") backends = {Backend::cpu};
            if (s.backend == "cuda") backends = {Backend::cuda};
            if (const auto shape = odd_companion(shapes, backends))
                odd = "; and verified, never timed, at " + shape->str();
        }
        std::printf("%-12s %-5s %s\n%-18s rigel ladder --suite %s = %s%s%s\n", std::string(s.name).c_str(),
                    std::string(s.backend).c_str(), std::string(s.purpose).c_str(), "",
                    std::string(s.name).c_str(), suite_options_text(s).c_str(), odd.c_str(),
                    check.checked_rungs ? "" : " (its rungs are not in this build)");
        for (const auto& p : check.problems) broken.push_back("suite " + std::string(s.name) + ": " + p);
    }
    std::fflush(stdout);
    if (!broken.empty())
        throw std::logic_error(broken.front() + (broken.size() > 1 ? " (and " + std::to_string(broken.size() - 1) +
                                                                         " more)" : ""));
}

std::string names_text(const std::vector<std::string_view>& names, const char* sep) {
    std::string out;
    for (const auto n : names) out += (out.empty() ? "" : sep) + std::string(n);
    return out;
}

std::vector<std::string_view> dtype_names() {
    std::vector<std::string_view> out;
    for (const auto& t : dtype_table()) out.push_back(t.name);
    return out;
}

// The registry's groups, in the order they first appear.
std::vector<std::string_view> rung_groups() {
    std::vector<std::string_view> out;
    for (const Rung* r : all_rungs())
        if (std::find(out.begin(), out.end(), r->group) == out.end()) out.push_back(r->group);
    return out;
}

std::vector<std::string_view> suite_names() {
    std::vector<std::string_view> out;
    for (const Suite& s : suite_table()) out.push_back(s.name);
    return out;
}

// What the ladder command will do, every option checked.
struct LadderPlan {
    LadderOptions opts;
    std::string backend;  // as asked: cpu, cuda or all
    std::string out;      // empty: print only
    std::string suite;    // the named suite, if one was asked for
};

// The options a suite sets: given beside --suite they are refused, so that a
// run under a suite's name is always that suite.
constexpr std::array kSuiteSets{"--backend", "--rungs", "--dtype", "--sizes", "--warmup", "--min-time"};

// The options as typed, with a suite's settings in place of those it sets.
LadderArgs with_suite(const LadderArgs& a, const CLI::App& cmd) {
    if (a.suite.empty() && !cmd.count("--suite")) return a;
    const Suite* suite = find_suite(a.suite);
    if (!suite)
        throw std::invalid_argument("unknown suite '" + a.suite + "' (known: " + names_text(suite_names(), ", ") +
                                    "; --list-suites shows what each runs)");
    for (const char* option : kSuiteSets)
        if (cmd.count(option))
            throw std::invalid_argument(std::string("--suite takes no ") + option + " (a suite sets " +
                                        names_text({kSuiteSets.begin(), kSuiteSets.end()}, " ") + "; " + a.suite +
                                        " is " + suite_options_text(*suite) + ")");
    LadderArgs out = a;
    out.backend = std::string(suite->backend);
    out.rungs = suite->rungs;
    out.dtypes = suite->dtypes;
    out.sizes = suite->sizes;
    return out;
}

// The rungs of the selected backends that --rungs selects (ids, groups, all).
std::vector<const Rung*> selected_rungs(const LadderOptions& opts) {
    std::vector<const Rung*> out;
    for (const Rung* r : all_rungs())
        if (std::find(opts.backends.begin(), opts.backends.end(), r->backend) != opts.backends.end() &&
            rung_selected(*r, opts.rungs))
            out.push_back(r);
    return out;
}

template <typename T>
void refuse_repeats(const std::string& option, const std::vector<T>& values, const std::vector<std::string>& texts) {
    for (std::size_t i = 0; i < values.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (values[i] == values[j])
                throw std::invalid_argument(option + " names " + texts[j] + " twice (as '" + texts[i] + "')");
}

LadderPlan plan_ladder(const LadderArgs& typed, const CLI::App& cmd) {
    refuse_beside(cmd, "--verify-only", {"--warmup", "--min-time"});
    check_out_option(cmd, typed.out);
    const LadderArgs a = with_suite(typed, cmd);
    const Suite* suite = find_suite(a.suite);

    LadderPlan p;
    p.backend = a.backend;
    p.out = a.out;
    p.suite = a.suite;
    LadderOptions& opts = p.opts;
    if (a.backend == "cpu")
        opts.backends = {Backend::cpu};
    else if (a.backend == "cuda")
        opts.backends = {Backend::cuda};
    else if (a.backend == "all")
        opts.backends = {Backend::cpu, Backend::cuda};
    else
        throw std::invalid_argument("unknown backend '" + a.backend + "' (cpu, cuda or all)");

    // The embedded default: the CPU ladder at two sizes, about a minute on two cores.
    const std::vector<std::string> sizes = a.sizes.empty() ? std::vector<std::string>{"512", "1024"} : a.sizes;
    for (const auto& s : sizes) opts.shapes.push_back(parse_shape(s));
    std::vector<std::string> shape_names;
    for (const Shape& s : opts.shapes) shape_names.push_back(s.str());
    refuse_repeats("--sizes", shape_names, sizes);
    // A suite and the default sizes are verified at an odd companion too, a
    // shape that is a multiple of no tile (runner.hpp); sizes given one by one
    // are run as given.
    if (suite || typed.sizes.empty())
        if (const auto odd = odd_companion(opts.shapes, opts.backends)) opts.verify_shapes.push_back(*odd);

    opts.rungs = a.rungs;
    const auto rungs = selected_rungs(opts);
    const bool all_types = std::find(a.dtypes.begin(), a.dtypes.end(), "all") != a.dtypes.end();
    if (all_types && a.dtypes.size() > 1) throw std::invalid_argument("--dtype all takes no other type beside it");
    if (all_types) {
        // Every type some selected rung takes (none in a build without the
        // selected backend: the run then says the backend is absent).
        for (const auto& t : dtype_table())
            if (std::any_of(rungs.begin(), rungs.end(), [&](const Rung* r) { return r->dtypes & dtype_bit(t.type); }))
                opts.dtypes.push_back(t.type);
    } else {
        for (const auto& d : a.dtypes) {
            const auto t = parse_dtype(d);
            if (!t) throw std::invalid_argument("unknown type '" + d + "'");
            opts.dtypes.push_back(*t);
        }
        refuse_repeats("--dtype", opts.dtypes, a.dtypes);
    }

    const auto recipe = parse_recipe(a.recipe);
    if (!recipe) throw std::invalid_argument("unknown recipe '" + a.recipe + "' (" + names_text(recipe_names(), ", ") + ")");
    opts.recipe = *recipe;
    opts.seed = parse_seed("--seed", a.seed);
    opts.threads = parse_threads("--threads", a.threads);
    if (cmd.count("--threads") &&
        std::none_of(rungs.begin(), rungs.end(), [](const Rung* r) { return r->backend == Backend::cpu && r->parallel; }))
        throw std::invalid_argument("--threads is used by no selected rung (only parallel CPU rungs take it)");
    opts.force = a.force;
    opts.verify_only = a.verify_only;
    if (a.paired && a.verify_only) throw std::invalid_argument("--paired times rungs; --verify-only times none");
    opts.paired = a.paired;
    // Pairs as the gemm and attention benches take them; --min-time lengthens both sides.
    opts.paired_timing = kBenchTiming;
    if (cmd.count("--min-time")) opts.paired_timing.min_time_s = parse_seconds("--min-time", a.min_time);
    opts.cpu_timing = kCpuTiming;
    opts.gpu_timing = kGpuTiming;
    for (TimingConfig* tc : {&opts.cpu_timing, &opts.gpu_timing}) {
        if (cmd.count("--warmup")) tc->warmup_s = parse_seconds("--warmup", a.warmup);
        if (cmd.count("--min-time")) tc->min_time_s = parse_seconds("--min-time", a.min_time);
        // A suite's timing is checked with the suite (check_suite) and again by measure().
        if (suite && suite->warmup_s && !opts.verify_only) tc->warmup_s = *suite->warmup_s;
        if (suite && suite->min_time_s && !opts.verify_only) tc->min_time_s = *suite->min_time_s;
        // The cap for slow rungs never cuts the span asked for.
        tc->max_time_s = std::max(tc->max_time_s, tc->min_time_s);
    }
    return p;
}

// The run's CSV and sidecar: claimed before the first measurement, rewritten
// after every shape and type.
class LadderFiles {
public:
    LadderFiles(const LadderPlan& p, const std::string& run_id, const GitState& git, Environment env)
        : plan_(p),
          files_(p.out, utc_date() + "_" + git.commit.substr(0, 7) + "_ladder" + (p.suite.empty() ? "" : "_" + p.suite),
                 run_id) {
        side_.run_id = run_id;
        side_.suite = p.suite;
        side_.what = "ladder";
        side_.git = git;
        side_.env = std::move(env);
        side_.seed = p.opts.seed;
    }
    void write(const std::vector<ResultRow>& rows, bool complete, bool interrupted) {
        std::vector<std::vector<std::string>> cells;
        int failed = 0;
        std::vector<std::string> shapes, types;
        for (const auto& s : plan_.opts.shapes) shapes.push_back(s.str());
        for (const auto& r : rows) {
            cells.push_back(result_cells(r, side_.run_id, plan_.opts.recipe, plan_.opts.seed));
            failed += r.status == Status::fail;
            if (std::find(types.begin(), types.end(), r.dtype) == types.end()) types.push_back(r.dtype);
        }
        side_.complete = complete;
        side_.interrupted = interrupted;
        side_.details = JsonObject{};
        std::vector<std::string> verify_shapes;
        for (const auto& s : plan_.opts.verify_shapes) verify_shapes.push_back(s.str());
        side_.details.str("recipe", std::string(name(plan_.opts.recipe)))
            .array_of_str("shapes", shapes)
            .array_of_str("verify_shapes", verify_shapes)
            .array_of_str("dtypes", types)
            .str("backend", plan_.backend)
            .object("timing", timing_settings(plan_.opts))
            .integer("failed", failed);
        files_.write(result_header(), cells, side_);
    }
    const ResultFiles& files() const { return files_; }
private:
    const LadderPlan& plan_;
    ResultFiles files_;
    Sidecar side_;
};

int report_ladder(const std::vector<ResultRow>& rows, LadderFiles* files) {
    print_table(rows);
    const int stopped_by = stop_signal();
    if (files) {
        files->write(rows, stopped_by == 0, stopped_by != 0);
        std::fprintf(stderr, "rigel: %s %zu row(s) in %s and %s\n", stopped_by ? "interrupted: kept" : "wrote",
                     rows.size(), files->files().csv().c_str(), files->files().json().filename().c_str());
    } else if (stopped_by) {
        std::fprintf(stderr, "rigel: interrupted after %zu row(s); nothing written (no --out)\n", rows.size());
    }
    if (stopped_by) return 128 + stopped_by;
    const auto failed = std::count_if(rows.begin(), rows.end(), [](const ResultRow& r) { return r.status == Status::fail; });
    if (failed) {
        std::fprintf(stderr, "rigel: %d rung(s) FAILED verification\n", static_cast<int>(failed));
        return 1;
    }
    return 0;
}

int run_ladder_command(const LadderArgs& a, const CLI::App& cmd) {
    refuse_beside(cmd, "--list", {});
    refuse_beside(cmd, "--list-suites", {});
    if (a.list) {
        list_rungs();
        return 0;
    }
    if (a.list_suites) {
        list_suites();
        return 0;
    }
    const LadderPlan plan = plan_ladder(a, cmd);

    auto cpu = make_host_executor();
    auto cuda = make_cuda_executor();
    LadderContext ctx{.cpu = cpu.get(),
                      .cuda = cuda.get(),
                      .progress = [](const std::string& s) { std::fprintf(stderr, "rigel: %s\n", s.c_str()); },
                      .checkpoint = {},
                      .should_stop = stop_requested,
                      .rungs = all_rungs()};
    // A build without CUDA knows no CUDA rung: asked for one, it says why it cannot run rather than
    // calling the name unknown.
    if (plan.backend == "cuda" && cuda_rungs().empty())
        throw DeviceUnavailable("skipped: " + cuda->unavailable_reason());
    if (plan.backend == "all" && cuda_rungs().empty())
        ctx.progress("cuda: " + cuda->unavailable_reason() + "; the cpu rungs run alone");

    // Check everything the run will need before anything runs or is written: a request that could not
    // run on any machine (an unknown rung, a type no selected rung takes) is an error here too, before
    // a missing device makes it a skip.
    validate_request(plan.opts, ctx);
    if (plan.backend == "cuda" && !cuda->unavailable_reason().empty())
        throw DeviceUnavailable("skipped: " + cuda->unavailable_reason());
    install_stop_handlers();
    std::optional<LadderFiles> files;
    if (!plan.out.empty()) {
        ensure_writable_dir(plan.out);
        std::vector<std::pair<std::string, std::string>> device_facts;
        if (std::find(plan.opts.backends.begin(), plan.opts.backends.end(), Backend::cuda) != plan.opts.backends.end())
            device_facts = cuda->describe();
        for (const auto& f : cpu->describe()) device_facts.push_back(f);
        // The pair is claimed and written at once, before the first rung: an
        // interrupted run leaves files that say so, and a failed write shows
        // before anything was measured.
        const WriteGuard guard;
        files.emplace(plan, make_run_id(), git_state(), collect_environment(device_facts));
        files->write({}, false, false);
        ctx.checkpoint = [&](const std::vector<ResultRow>& rows) { files->write(rows, false, false); };
    }
    const auto rows = run_ladder(plan.opts, ctx);
    return report_ladder(rows, files ? &*files : nullptr);
}

int run_env_command() {
    auto cuda = make_cuda_executor();
    auto cpu = make_host_executor();
    auto facts = cuda->describe();
    for (const auto& f : cpu->describe()) facts.push_back(f);
    const Environment env = collect_environment(facts);
    const GitState git = git_state();
    std::printf("%-24s %s\n", "rigel", tool_version().c_str());
    std::printf("%-24s %s%s\n", "git_commit", git.commit.c_str(), git.dirty ? " (dirty)" : "");
    for (const auto& [k, v] : env.facts) std::printf("%-24s %s\n", k.c_str(), v.c_str());
    std::printf("%-24s %s\n", "cuda_backend", cuda->unavailable_reason().empty() ? "available" : cuda->unavailable_reason().c_str());
    std::printf("%-24s %s\n", "environment_hash", env.hash.c_str());
    return 0;
}

}  // namespace

int run(int argc, char** argv) {
    CLI::App app{"rigel: the matrix-multiply ladder, and a GPU's matrix path characterized by measurement"};
    app.require_subcommand(1);
    app.set_version_flag("--version", tool_version());

    auto* env = app.add_subcommand("env", "Show the machine, toolchain and device rigel would record");

    LadderArgs la;
    auto* ladder = app.add_subcommand("ladder", "Run the ladder: every rung verified against float64, then timed");
    ladder->add_option("--backend", la.backend, "cpu, cuda or all")->capture_default_str();
    ladder->add_option("--sizes", la.sizes,
                       "N (cube) or MxNxK, several allowed (default: 512 1024, and an odd companion verified, "
                       "never timed: 509x1021x1031 on the CPU, 1021x1028x1040 with CUDA; a suite gets one too)");
    ladder->add_option("--dtype", la.dtypes,
                       "operand types (" + names_text(dtype_names(), " ") +
                           "), or all: every type the selected rungs take (default: each backend's usual types)");
    ladder->add_option("--rungs", la.rungs,
                       "rung ids (--list shows them) or groups (" + names_text(rung_groups(), " ") + "), or all");
    ladder->add_option("--recipe", la.recipe, "input recipe: " + names_text(recipe_names(), " "))
        ->capture_default_str();
    ladder->add_option("--suite", la.suite,
                       "a named suite (" + names_text(suite_names(), " ") +
                           "): sets --backend --rungs --dtype --sizes and the timing; --list-suites shows each");
    ladder->add_option("--seed", la.seed, "input seed, 0 to 2^64-1")->capture_default_str();
    ladder->add_option("--threads", la.threads,
                       "threads for the parallel CPU rungs, up to the machine's hardware threads (0: all)")
        ->capture_default_str();
    ladder->add_option("--out", la.out, "folder for the CSV and its JSON sidecar (none: print only)");
    const std::string seconds_range = "0 to " + num_text(kMaxMeasureSeconds);
    ladder->add_option("--warmup", la.warmup,
                       "warm-up seconds per measurement, " + seconds_range + " (default: CPU " +
                           num_text(kCpuTiming.warmup_s) + ", GPU " + num_text(kGpuTiming.warmup_s) + ")");
    ladder->add_option("--min-time", la.min_time,
                       "minimum timed seconds per measurement, " + seconds_range + " (default: CPU " +
                           num_text(kCpuTiming.min_time_s) + ", GPU " + num_text(kGpuTiming.min_time_s) +
                           "); repetitions continue until it and " + std::to_string(kCpuTiming.min_reps) +
                           " repetitions on the CPU or " + std::to_string(kGpuTiming.min_reps) +
                           " on the GPU are reached (at most " + std::to_string(kCpuTiming.max_reps) + " and " +
                           std::to_string(kGpuTiming.max_reps) + "), but none begins after " +
                           num_text(kCpuTiming.max_time_s) + " s (CPU) or " + num_text(kGpuTiming.max_time_s) +
                           " s (GPU), or after --min-time if longer: that cap wins, so a slower rung gets fewer "
                           "repetitions (the CSV's reps; noise_rel is empty below 2)");
    ladder->add_flag("--force", la.force, "run rungs past their default size limit");
    ladder->add_flag("--verify-only", la.verify_only, "verify every rung; time none");
    ladder->add_flag("--paired", la.paired,
                     "also time each rung against its backend's vendor rung in paired samples (A B, B A, ...): "
                     "the CSV's paired_ratio_* columns, above 1 the rung is faster");
    ladder->add_flag("--list", la.list, "list the rungs and what each adds (takes no other option)");
    ladder->add_flag("--list-suites", la.list_suites,
                     "list the suites, what each measures and the options it stands for (takes no other option)");

    auto hooks = add_probe_commands(app);
    for (auto& h : add_gemm_commands(app)) hooks.push_back(std::move(h));
    for (auto& h : add_attention_commands(app)) hooks.push_back(std::move(h));
    for (auto& h : add_train_commands(app)) hooks.push_back(std::move(h));
    for (auto& h : add_emulate_commands(app)) hooks.push_back(std::move(h));
    for (auto& h : add_dist_commands(app)) hooks.push_back(std::move(h));

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        throw std::invalid_argument(e.what());
    }
    if (env->parsed()) return run_env_command();
    if (ladder->parsed()) return run_ladder_command(la, *ladder);
    for (const auto& h : hooks)
        if (h.app->parsed()) return h.run();
    return 2;
}

}  // namespace rigel::cli
