// The subcommands: env, ladder (and, as they land, probe, findings, report).
#pragma once
#include <stdexcept>

namespace rigel::cli {

// Exit code when the asked-for device is absent: ctest reads 77 as "skipped".
constexpr int kExitNoDevice = 77;

struct DeviceUnavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

int run(int argc, char** argv);

}  // namespace rigel::cli
