// Running probes: selection by name, isolation (a probe that throws becomes
// one error row and the others still run), and the tidy CSV: one row per
// finding, snake_case columns.
#pragma once
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probes/probe.hpp"

namespace rigel {

// The `relation` cell of a probe that threw (DocRelation has no such value:
// an error is not a statement about the documentation).
inline constexpr std::string_view kErrorRelation = "error";

// "all" or one probe's name. Throws std::invalid_argument naming the known
// probes otherwise.
std::vector<const Probe*> select_probes(std::span<const Probe> registry, const std::string& selector);

struct ProbeRun {
    std::string probe;
    std::vector<Finding> findings;
    std::string error;  // non-empty: the probe threw (or returned nothing)
    double seconds = 0;
};

// Runs each probe once, in order; exceptions are caught per probe.
std::vector<ProbeRun> run_probes(const std::vector<const Probe*>& probes, const ProbeContext& ctx);
int count_errors(const std::vector<ProbeRun>& runs);

std::vector<std::string> probe_csv_header();
std::vector<std::vector<std::string>> probe_csv_rows(const std::vector<ProbeRun>& runs, const std::string& run_id);

// The short table printed at the end: probe, quantity, measured, relation;
// confirmations are counted per probe, everything else is listed.
std::string probe_summary_table(const std::vector<ProbeRun>& runs);

}  // namespace rigel
