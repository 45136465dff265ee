// `rigel launch` and `rigel dist`: several GPUs of one node.
//   rigel launch --nproc 8 -- rigel dist allreduce --out results
//   rigel launch --nproc 8 --independent -- rigel fleet --out results
// launch starts one process per GPU (src/dist/launch.hpp): each runs the
// command after `--` on the GPU of its rank; rigel's device commands pick it up
// from the environment. `dist allreduce` is the NCCL all-reduce bandwidth
// probe (src/dist/allreduce.hpp); rank 0 prints the table and writes the CSV.
// `fleet` runs the probes and the Hopper sweep on the rank's GPU
// (src/dist/fleet.hpp), for reproduce/fleet_report.py to set beside the others.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/device_runs.hpp"
#include "dist/allreduce.hpp"
#include "dist/fleet.hpp"
#include "dist/launch.hpp"
#include "dist/rendezvous.hpp"
#include "harness/executor.hpp"
#include "harness/report_io.hpp"
#include "ladder/suites.hpp"

namespace rigel::cli {
namespace {

struct LaunchArgs {
    int nproc = 1;
    std::string rendezvous_parent;
    std::vector<std::string> command;
    bool independent = false;
};

int run_launch(const LaunchArgs& a) {
    const dist::LaunchSpec spec{.nproc = a.nproc,
                                .command = a.command,
                                .rendezvous_parent = a.rendezvous_parent,
                                .independent = a.independent};
    if (const std::string why = dist::check(spec); !why.empty()) throw std::invalid_argument(why);
    const dist::LaunchResult r = dist::launch(spec);
    if (r.first_failed >= 0)
        say("rank " + std::to_string(r.first_failed) + " of " + std::to_string(a.nproc) + " exited with " +
            std::to_string(r.exit_code) +
            (a.nproc > 1 ? (a.independent ? "; the other ranks ran on" : "; the other ranks were stopped") : ""));
    return r.exit_code;
}

struct AllreduceArgs {
    std::string min_bytes = "1024", max_bytes = "1073741824";
    CommonArgs common;
};

std::uint64_t parse_bytes(const std::string& option, const std::string& text) {
    std::uint64_t v = 0;
    std::size_t used = 0;
    try {
        v = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || text.empty() || v < 4 || v > (1ull << 34))
        throw std::invalid_argument(option + " '" + text + "' is not a byte count from 4 to 2^34");
    return v;
}

int run_allreduce(const AllreduceArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.common.out);
    const std::vector<std::uint64_t> sizes =
        dist::allreduce_sizes(parse_bytes("--min-bytes", a.min_bytes), parse_bytes("--max-bytes", a.max_bytes));
    const dist::RankInfo rank = dist::rank_from_env();
    auto ex = make_cuda_executor();
    if (const std::string why = ex->unavailable_reason(); !why.empty())
        throw DeviceUnavailable("skipped: rigel dist allreduce needs a CUDA GPU: " + why);
    // Without --out the sweep only prints; with it, rank 0 checks the folder before the sweep, not after it.
    if (rank.rank == 0 && !a.common.out.empty()) ensure_writable_dir(a.common.out);
    const std::vector<dist::AllreduceRow> rows = dist::nccl_allreduce_sweep(rank, sizes);
    if (rank.rank != 0) return 0;

    static const std::vector<std::string> header{"run_id", "host", "device", "ranks", "bytes", "iterations",
                                                 "seconds", "algbw_gbs", "busbw_gbs"};
    RunFiles files(a.common.out, header, "dist_allreduce", "nccl_allreduce", "allreduce", 0, *ex);
    std::vector<std::vector<std::string>> cells;
    std::printf("%12s %6s %12s %12s %12s\n", "bytes", "ranks", "time (us)", "algbw GB/s", "busbw GB/s");
    for (const dist::AllreduceRow& r : rows) {
        std::printf("%12llu %6d %12.2f %12.2f %12.2f\n", static_cast<unsigned long long>(r.bytes), r.ranks,
                    r.seconds * 1e6, r.algbw_gbs, r.busbw_gbs);
        const RowContext& x = files.rows();
        cells.push_back({x.run_id, x.host, x.device, std::to_string(r.ranks), std::to_string(r.bytes),
                         std::to_string(r.iterations), num(r.seconds), num(r.algbw_gbs), num(r.busbw_gbs)});
    }
    JsonObject side;
    side.str("convention", "busbw = algbw x 2 (n - 1) / n (nccl-tests); fp32 sum in place; median of 5 batches");
    files.write(cells, side, true);
    files.report(cells.size());
    return 0;
}

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

struct FleetArgs {
    std::string out;
    std::vector<std::string> suites{"bench", "bench_llm"};
    bool no_probes = false;
};

int run_fleet(const FleetArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.out);
    for (const std::string& s : a.suites) {
        const Suite* suite = find_suite(s);
        if (!suite) throw std::invalid_argument("--suites: unknown suite '" + s + "' (rigel ladder --list-suites)");
        if (suite->backend != "cuda")
            throw std::invalid_argument("--suites: '" + s + "' runs on the " + std::string(suite->backend) +
                                        ", not on the GPU of a rank");
    }
    const std::vector<dist::FleetStep> steps = dist::fleet_steps(a.out, a.suites, !a.no_probes);
    if (steps.empty()) throw std::invalid_argument("rigel fleet has nothing to run: --no-probes and no --suites");
    const dist::RankInfo rank = dist::rank_from_env();
    if (rank.launch_id.empty())
        say("fleet: not under `rigel launch`, so this GPU only; `rigel launch --nproc N --independent -- rigel "
            "fleet` runs every GPU of the node");
    // This very binary, whatever PATH says (resolved now: /proc/self/exe is the child's own after the fork).
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const dist::FleetResult r = dist::run_fleet(self, steps, !rank.launch_id.empty());
    if (r.stop_signal) {
        say("fleet: stopped by a signal" + (r.failed.empty() ? std::string() : "; failed: " + join(r.failed)) +
            "; the later steps did not run");
        return 128 + r.stop_signal;
    }
    if (!r.failed.empty() && r.failed.size() == steps.size() && r.exit_code == kExitNoDevice)
        return kExitNoDevice;  // every step said why ("skipped: ...")
    if (!r.failed.empty()) say("fleet: failed: " + join(r.failed) + "; every other step ran");
    return r.exit_code;
}

}  // namespace

std::vector<SubcommandHook> add_dist_commands(CLI::App& app) {
    static LaunchArgs la;
    auto* launch = app.add_subcommand("launch", "Run a command once per GPU of this node, each process on the GPU "
                                                "of its rank, with a rendezvous for NCCL (the reference backend's "
                                                "ranks, on the CPU, sum through it)");
    launch->add_option("--nproc", la.nproc, "processes (one per GPU, or CPU ranks of the reference backend)")
        ->required();
    launch->add_option("--rendezvous-dir", la.rendezvous_parent,
                       "where the run's rendezvous folder is made (default: the system's temporary folder)");
    launch->add_flag("--independent", la.independent,
                     "ranks that share nothing (rigel fleet): a rank's failure does not stop the others");
    launch->add_option("command", la.command, "the command each rank runs, after --")->required()->expected(-1);

    static AllreduceArgs aa;
    auto* dist = app.add_subcommand("dist", "Several GPUs: the NCCL all-reduce bandwidth probe")->require_subcommand(1);
    auto* allreduce = dist->add_subcommand("allreduce", "NCCL all-reduce bus bandwidth from --min-bytes to "
                                                        "--max-bytes (powers of two), on every rank of `rigel launch`");
    allreduce->add_option("--min-bytes", aa.min_bytes, "smallest message")->capture_default_str();
    allreduce->add_option("--max-bytes", aa.max_bytes, "largest message")->capture_default_str();
    add_common_options(allreduce, aa.common, false);
    static FleetArgs fa;
    auto* fleet = app.add_subcommand("fleet", "The probes and the Hopper sweep on this rank's GPU, for every GPU of "
                                              "a node side by side: rigel launch --nproc N --independent -- rigel fleet --out DIR");
    fleet->add_option("--out", fa.out, "folder for every GPU's CSV and JSON files")->required();
    fleet->add_option("--suites", fa.suites, "ladder suites after the probes (rigel ladder --list-suites)")
        ->capture_default_str();
    fleet->add_flag("--no-probes", fa.no_probes, "the ladder suites only");
    return {{launch, [] { return run_launch(la); }},
            {allreduce, [allreduce] { return run_allreduce(aa, *allreduce); }},
            {fleet, [fleet] { return run_fleet(fa, *fleet); }}};
}

}  // namespace rigel::cli
