// Subcommand wiring (CLI11) and the ladder's printed table.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <unistd.h>

#include "harness/provenance.hpp"
#include "harness/report_io.hpp"
#include "harness/timing.hpp"
#include "ladder/runner.hpp"

namespace rigel::cli {
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
        if (r.status == "SKIP") {
            std::printf("%-34s %-5s %4d %14s %9s %9s %-6s %s\n", r.rung.c_str(), r.backend.c_str(), r.threads, "-",
                        "-", "-", "SKIP", r.reason.c_str());
            continue;
        }
        std::printf("%-34s %-5s %4d %14s %9s %9s %-6s %9s%s%s\n", r.rung.c_str(), r.backend.c_str(), r.threads,
                    r.gflops > 0 ? format_rate(r.gflops).c_str() : "-", opt("%.1fx", r.x_over_naive).c_str(),
                    opt("%.1f%%", r.pct_of_vendor).c_str(), r.status.c_str(),
                    opt("%.2g", r.verdict.err_max_scaled).c_str(), r.reason.empty() ? "" : "  ",
                    r.reason.c_str());
    }
    std::fflush(stdout);
}

std::filesystem::path unique_path(const std::filesystem::path& dir, const std::string& stem, const std::string& ext,
                                  const std::string& run_id) {
    auto p = dir / (stem + ext);
    if (!std::filesystem::exists(p)) return p;
    return dir / (stem + "_" + run_id + ext);
}

struct LadderArgs {
    std::string backend = "cpu";
    std::vector<std::string> sizes;
    std::vector<std::string> dtypes;
    std::vector<std::string> rungs;
    std::string recipe = "uniform";
    std::uint64_t seed = 1;
    int threads = 0;
    std::string out;
    bool force = false;
    bool verify_only = false;
    bool list = false;
    double warmup = -1, min_time = -1;
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

int run_ladder_command(const LadderArgs& a) {
    if (a.list) {
        list_rungs();
        return 0;
    }
    LadderOptions opts;
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
    for (const auto& d : a.dtypes) {
        if (d == "all") {
            for (const auto& t : dtype_table()) opts.dtypes.push_back(t.type);
            continue;
        }
        auto t = parse_dtype(d);
        if (!t) throw std::invalid_argument("unknown type '" + d + "'");
        opts.dtypes.push_back(*t);
    }
    if (!opts.dtypes.empty() && std::find(a.dtypes.begin(), a.dtypes.end(), "all") != a.dtypes.end()) {
        // "all" means every type some selected backend takes.
        std::vector<DType> kept;
        for (DType t : opts.dtypes)
            for (const Rung* r : all_rungs())
                if ((r->dtypes & dtype_bit(t)) &&
                    std::find(opts.backends.begin(), opts.backends.end(), r->backend) != opts.backends.end()) {
                    kept.push_back(t);
                    break;
                }
        opts.dtypes = kept;
    }
    opts.rungs = a.rungs;
    const auto recipe = parse_recipe(a.recipe);
    if (!recipe) throw std::invalid_argument("unknown recipe '" + a.recipe + "' (uniform, normal, small_int, hostile)");
    opts.recipe = *recipe;
    opts.seed = a.seed;
    if (a.threads < 0) throw std::invalid_argument("--threads must be >= 0");
    opts.threads = a.threads;
    opts.force = a.force;
    opts.verify_only = a.verify_only;
    opts.cpu_timing = TimingConfig{0.1, 0.5, 3, 200, 20.0};
    opts.gpu_timing = TimingConfig{0.3, 0.5, 10, 2000, 10.0};
    for (TimingConfig* tc : {&opts.cpu_timing, &opts.gpu_timing}) {
        if (a.warmup >= 0) tc->warmup_s = a.warmup;
        if (a.min_time >= 0) tc->min_time_s = a.min_time;
    }

    auto cpu = make_host_executor();
    auto cuda = make_cuda_executor();
    LadderContext ctx{cpu.get(), cuda.get(), [](const std::string& s) { std::fprintf(stderr, "rigel: %s\n", s.c_str()); }, {}, {}, all_rungs()};
    if (a.backend == "cuda" && !cuda->unavailable_reason().empty())
        throw DeviceUnavailable("skipped: " + cuda->unavailable_reason());

    // Check everything the run will need before anything runs or is written.
    validate_request(opts, ctx);
    if (!a.out.empty()) ensure_writable_dir(a.out);

    const std::string run_id = make_run_id();

    // The CSV and its sidecar are rewritten (atomically) after every shape and
    // type, so a run that is interrupted keeps what it finished; the sidecar's
    // "complete" says whether the run reached its end.
    std::filesystem::path csv_path, json_path;
    std::vector<std::pair<std::string, std::string>> device_facts;
    Environment env;
    GitState git;
    if (!a.out.empty()) {
        if (std::find(opts.backends.begin(), opts.backends.end(), Backend::cuda) != opts.backends.end())
            device_facts = cuda->describe();
        for (const auto& f : cpu->describe()) device_facts.push_back(f);
        env = collect_environment(device_facts);
        git = git_state();
        const std::string stem = utc_date() + "_" + git.commit.substr(0, 7) + "_ladder";
        csv_path = unique_path(a.out, stem, ".csv", run_id);
        json_path = csv_path.parent_path() / (csv_path.stem().string() + ".json");
    }
    auto write_results = [&](const std::vector<ResultRow>& rows, bool complete) {
        if (a.out.empty()) return;
        std::vector<std::vector<std::string>> cells;
        int failed_rows = 0;
        for (const auto& r : rows) {
            cells.push_back(result_cells(r, run_id, opts.recipe, opts.seed));
            failed_rows += r.status == "FAIL";
        }
        JsonObject env_json;
        for (const auto& [k, v] : env.facts) env_json.str(k, v);
        std::vector<std::string> shapes, types;
        for (const auto& s : opts.shapes) shapes.push_back(s.str());
        for (const auto& r : rows)
            if (std::find(types.begin(), types.end(), r.dtype) == types.end()) types.push_back(r.dtype);
        JsonObject side;
        side.str("run_id", run_id)
            .str("what", "ladder")
            .str("csv", csv_path.filename().string())
            .str("tool", "rigel")
            .str("tool_version", tool_version())
            .str("git_commit", git.commit)
            .boolean("git_dirty", git.dirty)
            .str("recipe", std::string(name(opts.recipe)))
            .integer("seed", static_cast<long long>(opts.seed))
            .array_of_str("shapes", shapes)
            .array_of_str("dtypes", types)
            .str("backend", a.backend)
            .boolean("complete", complete)
            .integer("rows", static_cast<long long>(rows.size()))
            .integer("failed", failed_rows)
            .str("environment_hash", env.hash)
            .object("environment", env_json);
        write_file_atomic(csv_path, to_csv(result_header(), cells));
        write_file_atomic(json_path, side.dump() + "\n");
    };
    ctx.checkpoint = [&](const std::vector<ResultRow>& rows) { write_results(rows, false); };

    const auto rows = run_ladder(opts, ctx);
    print_table(rows);
    int failed = 0;
    for (const auto& r : rows) failed += r.status == "FAIL";
    if (!a.out.empty()) {
        write_results(rows, true);
        std::fprintf(stderr, "rigel: wrote %s and %s\n", csv_path.c_str(), json_path.filename().c_str());
    }
    if (failed) {
        std::fprintf(stderr, "rigel: %d rung(s) FAILED verification\n", failed);
        return 1;
    }
    return 0;
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
    ladder->add_option("--sizes", la.sizes, "N (cube) or MxNxK, several allowed (default: 512 1024)");
    ladder->add_option("--dtype", la.dtypes, "operand types (f64 f32 tf32 f16 bf16 e4m3 e5m2 e2m1 i8, or all)");
    ladder->add_option("--rungs", la.rungs, "rung ids or groups (cpu simt tensor hopper vendor)");
    ladder->add_option("--recipe", la.recipe, "input recipe: uniform normal small_int hostile")->capture_default_str();
    ladder->add_option("--seed", la.seed, "input seed")->capture_default_str();
    ladder->add_option("--threads", la.threads, "CPU threads for parallel rungs (0: all)")->capture_default_str();
    ladder->add_option("--out", la.out, "folder for the CSV and its JSON sidecar");
    ladder->add_option("--warmup", la.warmup, "warm-up seconds per measurement");
    ladder->add_option("--min-time", la.min_time, "minimum timed seconds per measurement");
    ladder->add_flag("--force", la.force, "run rungs past their default size limit");
    ladder->add_flag("--verify-only", la.verify_only, "verify every rung; time none");
    ladder->add_flag("--list", la.list, "list the rungs and what each adds");

    const auto hooks = add_probe_commands(app);

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
    if (ladder->parsed()) return run_ladder_command(la);
    for (const auto& h : hooks)
        if (h.app->parsed()) return h.run();
    return 2;
}

}  // namespace rigel::cli
