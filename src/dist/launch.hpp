// `rigel launch`: one process per GPU of a node, started by rigel itself.
// Each child runs the same command with RIGEL_RANK, RIGEL_WORLD_SIZE,
// RIGEL_LOCAL_RANK and RIGEL_RENDEZVOUS set (dist/rendezvous.hpp); the
// rendezvous folder is made fresh for the launch and removed after it.
// Children inherit stdout and stderr, and each leads a process group of its
// own. The launch always ends, and leaves no rank behind:
// - When one child fails, the others are stopped with SIGTERM (a rank of
//   `rigel train run` finishes its step and checkpoints), and every group
//   still alive after `grace_seconds` is killed (SIGKILL): a rank blocked in
//   a collective for a peer that is gone never sees a SIGTERM through. With
//   `independent` (ranks that share nothing, as `rigel fleet`'s: one GPU's
//   failure is a finding, not a reason to stop the others) a failure stops
//   no one, and the launch waits for every rank.
// - SIGINT, SIGTERM and SIGHUP sent to the launcher reach every child's group
//   (one the launcher was started ignoring, as under nohup, stays ignored).
//   After a forwarded signal a failure sends no second SIGTERM, which would
//   make a rank quit at once rather than finish its checkpoint; the grace and
//   SIGKILL still follow.
// - Each child gets SIGTERM when the launcher dies, even by SIGKILL
//   (PR_SET_PDEATHSIG; a child whose launcher died before it was set exits at
//   once). It is the launching thread's death that counts: call launch() from
//   a thread that outlives the launch.
#pragma once
#include <string>
#include <vector>

namespace rigel::dist {

struct LaunchSpec {
    int nproc = 1;
    std::vector<std::string> command;  // program and arguments; the program is looked up in PATH
    std::string rendezvous_parent;     // where the rendezvous folder is made (empty: the system's temp folder)
    // After the first failure, how long the other ranks have to exit after
    // SIGTERM (time for a checkpoint) before SIGKILL.
    double grace_seconds = 15;
    bool independent = false;  // a rank's failure leaves the others running
};

struct LaunchResult {
    int exit_code = 0;      // 0 when every rank exited 0; else the first failure's code (128 + signal if killed)
    int first_failed = -1;  // its rank, -1 when none failed
};

// One sentence when `spec` cannot be launched (no command, nproc < 1, a
// negative or non-finite grace), else empty.
std::string check(const LaunchSpec& spec);

// Starts the ranks and waits for all of them. Throws std::runtime_error when
// a process cannot be started (the ones already started are stopped first,
// with the same SIGTERM, grace and SIGKILL).
LaunchResult launch(const LaunchSpec& spec);

}  // namespace rigel::dist
