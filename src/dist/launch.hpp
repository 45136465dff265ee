// `rigel launch`: one process per GPU of a node, started by rigel itself.
// Each child runs the same command with RIGEL_RANK, RIGEL_WORLD_SIZE,
// RIGEL_LOCAL_RANK and RIGEL_RENDEZVOUS set (dist/rendezvous.hpp); the
// rendezvous folder is made fresh for the launch and removed after it.
// Children inherit stdout and stderr. When one child fails, the others are
// stopped (SIGTERM), so that no rank waits forever in a collective for a peer
// that is gone; SIGINT and SIGTERM sent to the launcher reach every child.
#pragma once
#include <string>
#include <vector>

namespace rigel::dist {

struct LaunchSpec {
    int nproc = 1;
    std::vector<std::string> command;  // program and arguments; the program is looked up in PATH
    std::string rendezvous_parent;     // where the rendezvous folder is made (empty: the system's temp folder)
};

struct LaunchResult {
    int exit_code = 0;      // 0 when every rank exited 0; else the first failure's code (128 + signal if killed)
    int first_failed = -1;  // its rank, -1 when none failed
};

// One sentence when `spec` cannot be launched (no command, nproc < 1), else empty.
std::string check(const LaunchSpec& spec);

// Starts the ranks and waits for all of them. Throws std::runtime_error when
// a process cannot be started (the ones already started are stopped first).
LaunchResult launch(const LaunchSpec& spec);

}  // namespace rigel::dist
