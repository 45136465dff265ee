// Provenance collection.
#include "harness/provenance.hpp"

#include <sys/utsname.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/hash.hpp"
#include "rigel_build_commit.hpp"  // generated at build time (cmake/build_commit.cmake)

#ifndef RIGEL_VERSION
#define RIGEL_VERSION "0.0.0"
#endif

namespace rigel {
namespace {

std::string cpuinfo_field(const std::string& key) {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key, 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(colon + 2);
        }
    return "unknown";
}

std::string os_release() {
    std::ifstream f("/etc/os-release");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("PRETTY_NAME=", 0) == 0) {
            std::string v = line.substr(12);
            if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
            return v;
        }
    return "unknown";
}

std::string simd_flags() {
    const std::string flags = " " + cpuinfo_field("flags") + " ";
    std::string out;
    for (const char* f : {"avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"})
        if (flags.find(std::string(" ") + f + " ") != std::string::npos) out += (out.empty() ? "" : " ") + std::string(f);
    return out;
}

}  // namespace

std::string Environment::get(const std::string& key) const {
    for (const auto& [k, v] : facts)
        if (k == key) return v;
    return {};
}

std::string tool_version() { return RIGEL_VERSION; }

GitState git_state() { return {.commit = RIGEL_TREE_COMMIT, .dirty = RIGEL_TREE_DIRTY != 0}; }

Environment collect_environment(const std::vector<std::pair<std::string, std::string>>& device_facts) {
    Environment e;
    struct utsname u {};
    ::uname(&u);
    e.facts = {
        {"os", os_release()},
        {"kernel", std::string(u.sysname) + " " + u.release},
        {"compiler", std::string(__VERSION__)},
        {"cpu_model", cpuinfo_field("model name")},
        {"cpu_simd", simd_flags()},
        {"cpu_cores", std::to_string(std::thread::hardware_concurrency())},
    };
    for (const auto& f : device_facts) e.facts.push_back(f);
    // The hash identifies the setting, not the moment: readings such as the
    // current clock (keys containing "_now") are recorded but not hashed.
    std::string all;
    for (const auto& [k, v] : e.facts)
        if (k.find("_now") == std::string::npos) all += k + "=" + v + "\n";
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash64(all.data(), all.size())));
    e.hash = buf;
    return e;
}

std::string make_run_id() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
    std::random_device rd;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%06x", ts, rd() & 0xFFFFFF);
    return buf;
}

std::string utc_date() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char ts[16];
    std::strftime(ts, sizeof ts, "%Y-%m-%d", &tm);
    return ts;
}

}  // namespace rigel
