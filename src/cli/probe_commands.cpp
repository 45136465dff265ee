// `rigel probe`: run the characterization probes on the device, write one
// tidy CSV plus its JSON sidecar. FINDINGS.md is rendered from those files by
// reproduce/findings.py (`make reproduce`).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "harness/executor.hpp"
#include "harness/interrupt.hpp"
#include "harness/provenance.hpp"
#include "harness/report_io.hpp"
#include "probes/probe.hpp"
#include "probes/probe_run.hpp"

namespace rigel::cli {
namespace {

struct ProbeArgs {
    std::string name;
    std::string out = ".";
    std::string seed = "1";  // checked by parse_seed
    bool quick = false;
    bool avoid_faults = false;
    bool list = false;
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

int run_probe_command(const ProbeArgs& a, const CLI::App& cmd) {
    refuse_beside(cmd, "--list", {});
    if (a.list) return list_probes();
    if (a.name.empty()) throw std::invalid_argument("name a probe or all (rigel probe --list shows the probes)");
    check_out_option(cmd, a.out);
    const std::uint64_t seed = parse_seed("--seed", a.seed);

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
    ctx.seed = seed;
    ctx.quick = a.quick;
    ctx.avoid_faults = a.avoid_faults;
    ctx.progress = [](const std::string& s) { std::fprintf(stderr, "rigel: %s\n", s.c_str()); };
    const auto runs = run_probes(selected, ctx);
    const int errors = count_errors(runs);

    for (const auto& f : make_host_executor()->describe()) facts.push_back(f);
    Sidecar side;
    side.run_id = run_id;
    side.what = "probes";
    side.git = git_state();
    side.env = collect_environment(facts);
    side.seed = seed;
    side.complete = true;
    JsonObject questions;
    std::vector<std::string> names;
    for (const Probe* p : selected) {
        names.emplace_back(p->name);
        questions.str(std::string(p->name), std::string(p->question));
    }
    side.details.boolean("quick", a.quick)
        .boolean("avoid_faults", a.avoid_faults)
        .integer("compute_capability", ctx.compute_capability)
        .array_of_str("probes", names)
        .object("questions", questions)
        .integer("failed_probes", errors);
    // A signal while the files are claimed and written waits for both (the
    // probes themselves are not interruptible: until here it ends the run).
    install_stop_handlers();
    std::optional<ResultFiles> files;
    {
        const WriteGuard claimed_and_written;
        files.emplace(a.out, utc_date() + "_" + side.git.commit.substr(0, 7) + "_probes", run_id);
        files->write(probe_csv_header(), probe_csv_rows(runs, run_id), side);
    }

    std::printf("\n%s", probe_summary_table(runs).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "rigel: wrote %s and %s\n", files->csv().c_str(), files->json().filename().c_str());
    if (stop_requested()) return 128 + stop_signal();
    if (errors) {
        std::fprintf(stderr, "rigel: %d probe(s) FAILED (see the error rows)\n", errors);
        return 1;
    }
    return 0;
}

}  // namespace

std::vector<SubcommandHook> add_probe_commands(CLI::App& app) {
    // The hooks outlive this call: the arguments live as long as the program.
    static ProbeArgs pa;

    auto* probe = app.add_subcommand("probe", "Characterize the GPU: run a probe (or all) and record its findings");
    probe->add_option("name", pa.name, "probe name, or all (see --list)");
    probe->add_option("--out", pa.out, "folder for the CSV and its JSON sidecar")->capture_default_str();
    probe->add_option("--seed", pa.seed, "seed for the probes' generated inputs, 0 to 2^64-1")->capture_default_str();
    probe->add_flag("--quick", pa.quick, "smaller sweeps and shorter timing (for tests)");
    probe->add_flag("--avoid-faults", pa.avoid_faults,
                    "leave out the cases known to fault the device (for runs under compute-sanitizer)");
    probe->add_flag("--list", pa.list, "list the probes and the question each asks (takes no other option)");

    return {{probe, [probe] { return run_probe_command(pa, *probe); }}};
}

}  // namespace rigel::cli
