// The host threads a process takes for its CPU work (the float64 references,
// the CPU rungs, the emulator) when none are asked for: all of the machine's,
// or under `rigel launch` (RIGEL_WORLD_SIZE ranks on one host) its share of
// them, so that N ranks' references do not fight for the cores, and a rank's
// host thread that starts its GPU timings is not kept waiting by the others'.
#pragma once
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace rigel {

inline int default_host_threads() {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int world = 1;
    if (const char* w = std::getenv("RIGEL_WORLD_SIZE"); w != nullptr) {
        int v = 0;
        const char* end = w + std::strlen(w);
        const auto [p, ec] = std::from_chars(w, end, v);
        if (ec == std::errc() && p == end && v >= 1) world = v;
    }
    return std::max(1, hw / world);
}

}  // namespace rigel
