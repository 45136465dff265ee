// Where a rung or a probe runs. Below both the executors (harness) and the
// ladder, so that the harness never includes the ladder.
#pragma once
#include <cstdint>
#include <string_view>

namespace rigel {

enum class Backend : std::uint8_t { cpu, cuda };

constexpr std::string_view name(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

}  // namespace rigel
