// The subcommands: env, ladder (and, as they land, probe, findings, report).
#pragma once
#include <functional>
#include <stdexcept>
#include <vector>

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

// `probe` and `findings` (src/cli/probe_commands.cpp).
std::vector<SubcommandHook> add_probe_commands(CLI::App& app);

}  // namespace rigel::cli
