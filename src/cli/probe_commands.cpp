// `rigel probe` (run the characterization probes on the device, write one
// tidy CSV plus its JSON sidecar) and `rigel findings` (render FINDINGS.md
// from committed CSVs, no device needed).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "harness/executor.hpp"
#include "harness/provenance.hpp"
#include "harness/report_io.hpp"
#include "probes/findings_report.hpp"
#include "probes/probe.hpp"
#include "probes/probe_run.hpp"

namespace rigel::cli {
namespace {

struct ProbeArgs {
    std::string name;
    std::string out = ".";
    std::uint64_t seed = 1;
    bool quick = false;
    bool list = false;
};

struct FindingsArgs {
    std::vector<std::string> results;
    std::string out = "FINDINGS.md";
};

int list_probes() {
    const auto probes = cuda_probes();
    if (probes.empty()) {
        std::printf("no probes: rigel was built without CUDA\n");
        return 0;
    }
    std::printf("%-22s %s\n", "probe", "question");
    for (const Probe& p : probes)
        std::printf("%-22s %s\n", std::string(p.name).c_str(), std::string(p.question).c_str());
    return 0;
}

// Compute capability x10 from the executor's facts ("9.0" -> 90); 0 if absent.
int compute_capability_of(const std::vector<std::pair<std::string, std::string>>& facts) {
    for (const auto& [k, v] : facts) {
        if (k != "gpu_compute_capability") continue;
        int major = 0, minor = 0;
        if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) == 2) return major * 10 + minor;
    }
    return 0;
}

std::string skip_reason(const std::string& reason) {
    if (reason.rfind("no CUDA device", 0) == 0) return "skipped: " + reason;
    return "skipped: no CUDA device (" + reason + ")";
}

int run_probe_command(const ProbeArgs& a) {
    if (a.list) return list_probes();
    if (a.name.empty()) throw std::invalid_argument("name a probe or all (rigel probe --list shows the probes)");

    // Check everything the run needs before anything runs or is written: the
    // name first (a typo is an error on any machine), then the device.
    const auto registry = cuda_probes();
    std::vector<const Probe*> selected;
    if (!registry.empty()) selected = select_probes(registry, a.name);
    auto cuda = make_cuda_executor();
    if (!cuda->unavailable_reason().empty()) throw DeviceUnavailable(skip_reason(cuda->unavailable_reason()));
    if (registry.empty()) throw DeviceUnavailable(skip_reason("rigel was built without CUDA"));
    ensure_writable_dir(a.out);

    auto facts = cuda->describe();
    const std::string run_id = make_run_id();
    ProbeContext ctx;
    ctx.compute_capability = compute_capability_of(facts);
    ctx.seed = a.seed;
    ctx.quick = a.quick;
    ctx.progress = [](const std::string& s) { std::fprintf(stderr, "rigel: %s\n", s.c_str()); };
    const auto runs = run_probes(selected, ctx);
    const int errors = count_errors(runs);

    for (const auto& f : make_host_executor()->describe()) facts.push_back(f);
    const Environment env = collect_environment(facts);
    const GitState git = git_state();
    const std::string stem =
        free_stem(a.out, utc_date() + "_" + git.commit.substr(0, 7) + "_probes", run_id, {".csv", ".json"});
    const auto csv_path = std::filesystem::path(a.out) / (stem + ".csv");
    const auto json_path = std::filesystem::path(a.out) / (stem + ".json");

    const auto rows = probe_csv_rows(runs, run_id);
    JsonObject env_json;
    for (const auto& [k, v] : env.facts) env_json.str(k, v);
    JsonObject questions;
    std::vector<std::string> names;
    for (const Probe* p : selected) {
        names.emplace_back(p->name);
        questions.str(std::string(p->name), std::string(p->question));
    }
    JsonObject side;
    side.str("run_id", run_id)
        .str("what", "probes")
        .str("csv", csv_path.filename().string())
        .str("tool", "rigel")
        .str("tool_version", tool_version())
        .str("git_commit", git.commit)
        .boolean("git_dirty", git.dirty)
        .integer("seed", static_cast<long long>(a.seed))
        .boolean("quick", a.quick)
        .integer("compute_capability", ctx.compute_capability)
        .array_of_str("probes", names)
        .object("questions", questions)
        .integer("rows", static_cast<long long>(rows.size()))
        .integer("failed_probes", errors)
        .str("environment_hash", env.hash)
        .object("environment", env_json);
    write_file_new(csv_path, to_csv(probe_csv_header(), rows));
    write_file_new(json_path, side.dump() + "\n");

    std::printf("\n%s", probe_summary_table(runs).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "rigel: wrote %s and %s\n", csv_path.c_str(), json_path.filename().c_str());
    if (errors) {
        std::fprintf(stderr, "rigel: %d probe(s) FAILED (see the error rows)\n", errors);
        return 1;
    }
    return 0;
}

int run_findings_command(const FindingsArgs& a) {
    std::vector<std::filesystem::path> dirs;
    for (const auto& r : a.results) dirs.emplace_back(r);
    if (dirs.empty()) dirs.emplace_back("results/h200");
    const FindingsInput in = load_results(dirs);
    const std::string md = render_findings(in);
    if (a.out == "-") {
        std::fwrite(md.data(), 1, md.size(), stdout);
        std::fflush(stdout);
        return 0;
    }
    write_file_atomic(a.out, md);
    std::fprintf(stderr, "rigel: wrote %s from %zu probes CSV(s) and %zu ladder CSV(s)\n", a.out.c_str(),
                 in.probes.size(), in.ladder.size());
    return 0;
}

}  // namespace

std::vector<SubcommandHook> add_probe_commands(CLI::App& app) {
    // The hooks outlive this call: the arguments live as long as the program.
    static ProbeArgs pa;
    static FindingsArgs fa;

    auto* probe = app.add_subcommand("probe", "Characterize the GPU: run a probe (or all) and record its findings");
    probe->add_option("name", pa.name, "probe name, or all (see --list)");
    probe->add_option("--out", pa.out, "folder for the CSV and its JSON sidecar")->capture_default_str();
    probe->add_option("--seed", pa.seed, "seed for the probes' generated inputs")->capture_default_str();
    probe->add_flag("--quick", pa.quick, "smaller sweeps and shorter timing (for tests)");
    probe->add_flag("--list", pa.list, "list the probes and the question each asks");

    auto* findings = app.add_subcommand("findings", "Render FINDINGS.md from probe (and ladder) CSVs; no GPU needed");
    findings->add_option("--results", fa.results, "folders holding *_probes.csv (default: results/h200)");
    findings->add_option("--out", fa.out, "the Markdown file to write, or - for stdout")->capture_default_str();

    return {{probe, [] { return run_probe_command(pa); }}, {findings, [] { return run_findings_command(fa); }}};
}

}  // namespace rigel::cli
