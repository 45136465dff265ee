#include "dist/fleet.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "dist/stop_signals.hpp"

namespace rigel::dist {

std::vector<FleetStep> fleet_steps(const std::string& out, const std::vector<std::string>& suites, bool probes) {
    std::vector<FleetStep> steps;
    if (probes) steps.push_back({"probe all", {"probe", "all", "--out", out}});
    for (const std::string& s : suites) steps.push_back({"ladder --suite " + s, {"ladder", "--suite", s, "--out", out}});
    return steps;
}

namespace {

volatile sig_atomic_t g_stop = 0;
void note_stop(int sig) { g_stop = sig; }

}  // namespace

FleetResult run_fleet(const std::string& program, const std::vector<FleetStep>& steps, bool die_with_parent) {
    if (access(program.c_str(), X_OK) != 0)
        throw std::runtime_error("cannot start " + program + ": " + std::strerror(errno));
    const pid_t parent = getppid();
    if (die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
        throw std::runtime_error("the launcher of this rank is gone");
    // Stop signals are noted, not acted on: the child takes them too, and is waited for. One this process
    // was started ignoring stays ignored (and so in the children).
    g_stop = 0;
    const StopSignals signals(note_stop);
    FleetResult result;
    for (const FleetStep& step : steps) {
        if (g_stop) break;
        std::vector<std::string> argv_text{program};
        argv_text.insert(argv_text.end(), step.args.begin(), step.args.end());
        std::vector<char*> argv;
        for (std::string& a : argv_text) argv.push_back(a.data());
        argv.push_back(nullptr);
        const pid_t self = getpid();
        const pid_t pid = fork();
        if (pid == 0) {
            // This process's death stops the step; one that died before this line sends nothing.
            if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != self) _exit(128 + SIGTERM);
            signals.restore();
            execv(program.c_str(), argv.data());
            _exit(127);
        }
        if (pid < 0) {
            const std::string why = std::strerror(errno);
            throw std::runtime_error("cannot start " + program + " " + step.what + ": " + why);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
            if (errno != EINTR) {
                const std::string why = std::strerror(errno);
                throw std::runtime_error("waiting for " + step.what + ": " + why);
            }
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0) {
            if (result.exit_code == 0) result.exit_code = code;
            result.failed.push_back(step.what + " (exit " + std::to_string(code) + ")");
        }
        // A step that a stop signal ended (or that ended after one, as rigel does: 128 + the signal) stops
        // the run too, though the signal did not reach this process; a crash (SIGSEGV, SIGABRT) does not.
        for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGKILL})
            if (code == 128 + sig && !g_stop) g_stop = sig;
    }
    result.stop_signal = g_stop;
    return result;
}

}  // namespace rigel::dist
