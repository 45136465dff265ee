#include "dist/rendezvous.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace rigel::dist {
namespace {

// An environment variable as a non-negative integer, or `fallback` when unset.
int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (*end != '\0' || x < 0 || x > 1'000'000)
        throw std::invalid_argument(std::string(name) + "='" + v + "' is not a non-negative integer");
    return static_cast<int>(x);
}

}  // namespace

RankInfo rank_from_env() {
    RankInfo r;
    r.world = env_int(kWorldVar, 1);
    r.rank = env_int(kRankVar, 0);
    r.local_rank = env_int(kLocalRankVar, r.rank);
    if (const char* dir = std::getenv(kRendezvousVar)) r.rendezvous = dir;
    if (const char* id = std::getenv(kLaunchIdVar)) r.launch_id = id;
    if (r.world < 1) throw std::invalid_argument(std::string(kWorldVar) + " must be at least 1");
    if (r.rank >= r.world)
        throw std::invalid_argument(std::string(kRankVar) + " " + std::to_string(r.rank) + " is not below " +
                                    kWorldVar + " " + std::to_string(r.world));
    if (r.world > 1 && r.rendezvous.empty())
        throw std::invalid_argument(std::string(kWorldVar) + " " + std::to_string(r.world) + " without " +
                                    kRendezvousVar + ": start the ranks with `rigel launch`");
    return r;
}

void publish(const std::string& dir, const std::string& name, const std::string& bytes) {
    const std::filesystem::path final_path = std::filesystem::path(dir) / name;
    const std::filesystem::path tmp = std::filesystem::path(dir) / ("." + name + ".tmp" + std::to_string(getpid()));
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        f.flush();
        if (!f) throw std::runtime_error("cannot write the rendezvous file " + tmp.string());
    }
    std::error_code ec;
    std::filesystem::rename(tmp, final_path, ec);
    if (ec) throw std::runtime_error("cannot publish the rendezvous file " + final_path.string() + ": " + ec.message());
}

std::string wait_for(const std::string& dir, const std::string& name, double timeout_s) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        std::ifstream f(path, std::ios::binary);
        if (f) {
            std::ostringstream s;
            s << f.rdbuf();
            return s.str();
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > timeout_s)
            throw std::runtime_error("no " + path.string() + " after " + std::to_string(static_cast<int>(timeout_s)) +
                                     " s: the rank that publishes it failed or never started");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace rigel::dist
