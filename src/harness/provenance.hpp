// Provenance: what every result is stamped with. A run id in each CSV row; the
// sidecar JSON holds the commit, the tool version, the inputs' recipe and seed,
// and the environment (OS, compiler, CPU, GPU) with a hash of it, so that two
// results can be told to come from the same setting or not.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace rigel {

struct Environment {
    std::vector<std::pair<std::string, std::string>> facts;  // ordered key/value pairs
    std::string hash;                                         // 16 hex digits over the facts
    std::string get(const std::string& key) const;
};

// The tree this binary was built from, fixed at build time: its checkout's
// commit and whether tracked files differed from it, or an exported tree's
// COMMIT file (clean), else "unknown" (cmake/build_commit.cmake). Never the
// state of the source folder at run time.
struct GitState {
    std::string commit;
    bool dirty = false;
};

std::string tool_version();
GitState git_state();  // the build's, see GitState
// The host's facts; `device_facts` (from the CUDA executor) are appended.
Environment collect_environment(const std::vector<std::pair<std::string, std::string>>& device_facts);
// "20261129T130501Z-3fa9c2": UTC time and 24 random bits.
std::string make_run_id();
std::string utc_date();  // 2026-11-29

}  // namespace rigel
