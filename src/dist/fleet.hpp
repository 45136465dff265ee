// `rigel fleet`: what each GPU of a node runs to be set beside the others.
// Under `rigel launch --nproc N -- rigel fleet --out DIR`, every rank runs the
// probes (`rigel probe all`) and the Hopper sweep (`rigel ladder --suite bench`
// and `bench_llm`) on its own GPU, each step a child process of this rigel,
// into one folder; the sidecars name the launch, the rank's GPU and its PCI bus
// id, and `make reproduce` sets the GPUs side by side
// (reproduce/fleet_report.py: docs/fleet/<launch>.csv, FINDINGS.md's "Every
// GPU of a node").
#pragma once
#include <string>
#include <vector>

namespace rigel::dist {

struct FleetStep {
    std::string what;               // for messages: "probe all", "ladder --suite bench"
    std::vector<std::string> args;  // rigel's arguments, the program's name left out
};

// The steps of one rank: the probes (unless !probes), then each named ladder suite, all writing into out.
std::vector<FleetStep> fleet_steps(const std::string& out, const std::vector<std::string>& suites, bool probes);

struct FleetResult {
    int exit_code = 0;                // 0 when every step exited 0; else the first failing step's code
    std::vector<std::string> failed;  // each failing step: its `what` and its code
    int stop_signal = 0;              // the stop signal that ended the run (the later steps did not start), or 0
};

// Runs the steps in turn as children of `program` (with this process's environment: the rank's
// variables go with it). A step that fails does not stop the later ones: a GPU whose probe fails is
// still swept, and the failure is what the fleet is for. A stop signal does (SIGINT, SIGTERM, SIGHUP):
// it reaches the running child through the process group they share (rigel finishes the measurement in
// progress), this process waits for the child and starts no further step. Each child gets SIGTERM if
// this process dies; with `die_with_parent` (under `rigel launch`) this process is killed if the
// launcher dies, so that no step outlives a launch killed outright.
FleetResult run_fleet(const std::string& program, const std::vector<FleetStep>& steps, bool die_with_parent = false);

}  // namespace rigel::dist
