// `rigel probe` and `rigel findings` (filled as the probes land).
#include "cli/commands.hpp"

namespace rigel::cli {

std::vector<SubcommandHook> add_probe_commands(CLI::App&) { return {}; }

}  // namespace rigel::cli
