#include "dist/fleet.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace rigel::dist {

std::vector<FleetStep> fleet_steps(const std::string& out, const std::vector<std::string>& suites, bool probes) {
    std::vector<FleetStep> steps;
    if (probes) steps.push_back({"probe all", {"probe", "all", "--out", out}});
    for (const std::string& s : suites) steps.push_back({"ladder --suite " + s, {"ladder", "--suite", s, "--out", out}});
    return steps;
}

FleetResult run_fleet(const std::string& program, const std::vector<FleetStep>& steps) {
    for (const FleetStep& step : steps) {
        std::vector<std::string> argv_text{program};
        argv_text.insert(argv_text.end(), step.args.begin(), step.args.end());
        std::vector<char*> argv;
        for (std::string& a : argv_text) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        if (const int rc = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ); rc != 0)
            throw std::runtime_error("cannot start " + program + " " + step.what + ": " + std::strerror(rc));
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
            if (errno != EINTR) throw std::runtime_error("waiting for " + step.what + ": " + std::strerror(errno));
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0) return {code, step.what};
    }
    return {};
}

}  // namespace rigel::dist
