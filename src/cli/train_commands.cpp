// `rigel train`: GPT-2 training on rigel's kernels. So far:
//   rigel train check [--seed N] [--out DIR]   each of rigel's own training kernels against float64
//                                              (exit 1 if one fails, 77 without a device)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/device_runs.hpp"
#include "harness/interrupt.hpp"
#include "train/layer_check.hpp"

namespace rigel::cli {
namespace {

struct CheckArgs {
    CommonArgs common;
};

const std::vector<std::string>& check_header() {
    static const std::vector<std::string> h{"run_id", "host",  "device",  "kernel", "shape",
                                            "pass",   "err_max_scaled", "checked", "worst"};
    return h;
}

int run_check(const CheckArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.common.out);
    const std::uint64_t seed = parse_seed("--seed", a.common.seed);
    auto ex = sm90_device("rigel's training kernels");
    RunFiles files(a.common.out, check_header(), "train_check", "train_check", "train_check", seed, *ex);
    const std::vector<train::LayerCheck> checks = train::check_layers(seed);
    std::vector<std::vector<std::string>> cells;
    int failed = 0;
    std::printf("%-40s %-34s %-4s %10s  %s\n", "kernel", "shape", "", "err/allow", "worst");
    for (const train::LayerCheck& c : checks) {
        failed += !c.pass;
        std::printf("%-40s %-34s %-4s %10s  %s\n", c.kernel.c_str(), c.shape.c_str(), c.pass ? "pass" : "FAIL",
                    num(c.err_max_scaled).c_str(), c.worst.c_str());
        const RowContext& x = files.rows();
        cells.push_back({x.run_id, x.host, x.device, c.kernel, c.shape, c.pass ? "1" : "0", num(c.err_max_scaled),
                         std::to_string(c.checked), c.worst});
    }
    JsonObject d;
    d.integer("checks", static_cast<long long>(checks.size())).integer("failed", failed);
    files.write(cells, d, true);
    files.report(cells.size());
    if (failed) {
        say(std::to_string(failed) + " of " + std::to_string(checks.size()) + " training kernel check(s) FAILED");
        return 1;
    }
    say("all " + std::to_string(checks.size()) + " training kernel checks passed");
    return 0;
}

}  // namespace

std::vector<SubcommandHook> add_train_commands(CLI::App& app) {
    static CheckArgs ca;
    auto* cmd = app.add_subcommand("train", "GPT-2 training on rigel's kernels (so far: its own kernels checked)");
    cmd->require_subcommand(1);
    auto* check = cmd->add_subcommand("check", "Each of rigel's own training kernels against float64 (exit 1 if one "
                                               "fails)");
    add_common_options(check, ca.common, false);
    return {{check, [check] { return run_check(ca, *check); }}};
}

}  // namespace rigel::cli
