// rigel: the command line. main is the only place that turns an exception into
// an exit code and one line for the user.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    try {
        return rigel::cli::run(argc, argv);
    } catch (const rigel::cli::DeviceUnavailable& e) {
        std::fprintf(stderr, "rigel: %s\n", e.what());
        return rigel::cli::kExitNoDevice;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rigel: error: %s\n", e.what());
        return 2;
    }
}
