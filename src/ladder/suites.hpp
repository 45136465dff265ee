// Named benchmark suites: the options of a measurement as one row of a table,
// so that it is asked for by name (rigel ladder --suite NAME), recorded by name
// in the sidecar and in the result file's name, and the same on every visit.
// A suite sets the backend, the rungs, the types, the sizes and the timing; the
// options it leaves open (--out, --seed, --recipe, --threads, --force,
// --verify-only) combine with it, and the ones it sets are refused beside it.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ladder/rung.hpp"

namespace rigel {

struct Suite {
    std::string_view name;
    std::string_view purpose;             // one line: what the suite measures, and why
    std::string_view backend;             // cpu, cuda or all, as --backend
    std::vector<std::string> rungs{};     // rung ids or groups, as --rungs; empty: every rung of the backend
    std::vector<std::string> dtypes{};    // type names, or "all", as --dtype
    std::vector<std::string> sizes{};     // N or MxNxK, as --sizes
    std::optional<double> warmup_s{};     // as --warmup; unset: the backend's default
    std::optional<double> min_time_s{};   // as --min-time; unset: the backend's default
};

std::span<const Suite> suite_table();
// nullptr when no suite has that name.
const Suite* find_suite(std::string_view name);

// The suite as the ladder command's options ("--backend cuda --rungs ...").
std::string suite_options_text(const Suite& s);

// What is wrong with a suite, one sentence each (empty: nothing): a backend
// other than cpu, cuda or all; a size that does not parse or repeats; timing
// outside 0..kMaxMeasureSeconds; a type name that does not parse or repeats;
// and, against the rungs of `registry` for the suite's backend: a rung or
// group that names no rung, one that takes none of the suite's types, a type
// that no selected rung takes, a suite that selects nothing. A backend with no
// rungs in `registry` (rigel built without CUDA) has its rungs and types left
// unchecked, and `checked_rungs` says so.
struct SuiteCheck {
    std::vector<std::string> problems;
    bool checked_rungs = true;
};
SuiteCheck check_suite(const Suite& s, std::span<const Rung* const> registry);

}  // namespace rigel
