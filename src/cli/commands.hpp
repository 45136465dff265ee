// The subcommands: env, ladder (and, as they land, probe, findings, report).
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ladder/runner.hpp"

namespace CLI { class App; }

namespace rigel::cli {

// Exit code when the asked-for device is absent: ctest reads 77 as "skipped".
constexpr int kExitNoDevice = 77;

struct DeviceUnavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

int run(int argc, char** argv);

// A subcommand defined in another file: its CLI11 node and what runs it.
struct SubcommandHook {
    CLI::App* app;
    std::function<int()> run;
};

// Numeric options arrive as text and are checked here, so that a negative,
// non-finite, out-of-range or overflowing value gets one line naming the
// option instead of meaning a default, a clamp or a wrapped number.
std::uint64_t parse_seed(const std::string& option, const std::string& text);
// Seconds from 0 to kMaxMeasureSeconds (harness/timing.hpp).
double parse_seconds(const std::string& option, const std::string& text);
// 0 (all) up to the machine's hardware threads.
int parse_threads(const std::string& option, const std::string& text);
// "MxNxK,MxNxK,..." (or N for a cube; ladder/runner.hpp's parse_shape), each
// extent at most max_extent.
std::vector<Shape> parse_shapes(const std::string& option, const std::string& text, std::int64_t max_extent);

// Refuses `option` given together with any of `conflicting` (empty: with any
// other option of `cmd`), naming both.
void refuse_beside(const CLI::App& cmd, const std::string& option, const std::vector<std::string>& conflicting);
// Refuses `--out ""`: an empty folder name would run everything and keep nothing.
void check_out_option(const CLI::App& cmd, const std::string& out);

// `probe` and `findings` (src/cli/probe_commands.cpp).
std::vector<SubcommandHook> add_probe_commands(CLI::App& app);
// `gemm verify|bench|run|list` (src/cli/gemm_commands.cpp).
std::vector<SubcommandHook> add_gemm_commands(CLI::App& app);
// `attention verify|bench|list` (src/cli/attention_commands.cpp).
std::vector<SubcommandHook> add_attention_commands(CLI::App& app);
// `train check` (src/cli/train_commands.cpp).
std::vector<SubcommandHook> add_train_commands(CLI::App& app);
// `emulate` (src/cli/emulate_commands.cpp).
std::vector<SubcommandHook> add_emulate_commands(CLI::App& app);
// `launch` and `dist allreduce` (src/cli/dist_commands.cpp).
std::vector<SubcommandHook> add_dist_commands(CLI::App& app);

}  // namespace rigel::cli
