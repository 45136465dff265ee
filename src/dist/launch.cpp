#include "dist/launch.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

#include "dist/rendezvous.hpp"
#include "dist/stop_signals.hpp"

extern char** environ;

namespace rigel::dist {
namespace {

// The children, for the signal handler: it forwards the stop signals.
// Each child leads a process group of its own, and signals go to the whole
// group, so that a rank that is a shell script stops with everything it
// started. A rank's entry is -1 once it has been waited for: its group's id
// may then be reused, and is signalled no more.
constexpr int kMaxRanks = 1024;
volatile sig_atomic_t g_count = 0;
volatile sig_atomic_t g_forwarded = 0;  // a stop signal reached every rank
pid_t g_pids[kMaxRanks];

void forward(int sig) {
    g_forwarded = 1;
    for (sig_atomic_t i = 0; i < g_count; ++i)
        if (g_pids[i] > 0) kill(-g_pids[i], sig);
}

void signal_all(int sig, int except) {
    for (sig_atomic_t i = 0; i < g_count; ++i)
        if (i != except && g_pids[i] > 0) kill(-g_pids[i], sig);
}

// Waits for every started rank. From the first failure on (unless the ranks
// are `independent`; at once with `stop_now`, when the launch itself failed)
// the others are stopped: SIGTERM
// (unless a forwarded signal already asked them), then SIGKILL for every
// group still alive after `grace_seconds`; meanwhile the wait polls, so that
// the deadline is kept whatever the ranks do.
LaunchResult wait_for_ranks(double grace_seconds, bool stop_now, bool independent) {
    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> kill_at;
    bool killed = false;
    const auto stop_others = [&](int except) {
        if (!g_forwarded) signal_all(SIGTERM, except);
        kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_seconds));
    };
    if (stop_now) stop_others(-1);
    LaunchResult result;
    for (int left = g_count; left > 0;) {
        int status = 0;
        const pid_t pid = waitpid(-1, &status, kill_at ? WNOHANG : 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;  // no child left to wait for
        }
        if (pid == 0) {  // stopping, and no rank exited since the last look
            if (!killed && Clock::now() >= *kill_at) {
                signal_all(SIGKILL, -1);
                killed = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            continue;
        }
        int rank = -1;
        for (int r = 0; r < g_count; ++r)
            if (g_pids[r] == pid) rank = r;
        if (rank < 0) continue;
        g_pids[rank] = -1;
        --left;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && result.first_failed < 0 && !stop_now) {
            result.exit_code = code;
            result.first_failed = rank;
            if (!kill_at && !independent) stop_others(rank);
        }
    }
    return result;
}

std::string make_rendezvous(const std::string& parent) {
    const std::filesystem::path base = parent.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(parent);
    std::string pattern = (base / "rigel_rendezvous.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("cannot make a rendezvous folder in " + base.string() + ": " + std::strerror(errno));
    return pattern;
}

// The parent's environment with the rank's four variables replaced.
std::vector<std::string> rank_environment(int rank, int world, const std::string& dir) {
    std::vector<std::string> env;
    const auto ours = [](const char* kv) {
        for (const char* name : {kRankVar, kWorldVar, kLocalRankVar, kRendezvousVar, kLaunchIdVar})
            if (std::strncmp(kv, name, std::strlen(name)) == 0 && kv[std::strlen(name)] == '=') return true;
        return false;
    };
    for (char** e = environ; e != nullptr && *e != nullptr; ++e)
        if (!ours(*e)) env.emplace_back(*e);
    env.push_back(std::string(kRankVar) + "=" + std::to_string(rank));
    env.push_back(std::string(kWorldVar) + "=" + std::to_string(world));
    env.push_back(std::string(kLocalRankVar) + "=" + std::to_string(rank));
    env.push_back(std::string(kRendezvousVar) + "=" + dir);
    env.push_back(std::string(kLaunchIdVar) + "=" + std::filesystem::path(dir).filename().string());
    return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
    std::vector<char*> p;
    for (std::string& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
}

}  // namespace

std::string check(const LaunchSpec& spec) {
    if (spec.command.empty()) return "no command to launch: give it after --";
    if (spec.nproc < 1) return "--nproc must be at least 1";
    if (spec.nproc > kMaxRanks) return "--nproc may be at most " + std::to_string(kMaxRanks);
    if (!std::isfinite(spec.grace_seconds) || spec.grace_seconds < 0)
        return "the grace before the ranks are killed must be a finite number of seconds, 0 or more";
    return {};
}

LaunchResult launch(const LaunchSpec& spec) {
    if (const std::string why = check(spec); !why.empty()) throw std::invalid_argument(why);
    const std::string dir = make_rendezvous(spec.rendezvous_parent);
    std::vector<std::string> argv_store = spec.command;
    std::vector<char*> argv = pointers(argv_store);
    std::vector<std::vector<std::string>> envs;
    for (int r = 0; r < spec.nproc; ++r) envs.push_back(rank_environment(r, spec.nproc, dir));

    // The forwarding handler, for each stop signal the launcher was not
    // started ignoring (the children inherit the ignoring).
    g_forwarded = 0;
    const StopSignals signals(forward);
    const auto restore = [&] {
        signals.restore();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        g_count = 0;
    };

    // The stop signals wait while the children are made: a child between
    // fork and exec still has the forwarding handler, and would take a stop
    // for itself to forward. It restores the launcher's own handlers first.
    sigset_t stops, old_mask;
    sigemptyset(&stops);
    for (const int sig : StopSignals::kSignals) sigaddset(&stops, sig);
    sigprocmask(SIG_BLOCK, &stops, &old_mask);
    const pid_t launcher = getpid();
    g_count = 0;
    for (int r = 0; r < spec.nproc; ++r) {
        std::vector<char*> envp = pointers(envs[static_cast<std::size_t>(r)]);
        const pid_t pid = fork();
        if (pid == 0) {
            // The launcher's death, SIGKILL included, stops the rank as a
            // forwarded SIGTERM would. A launcher that died before this line
            // sends nothing: the child has a new parent already, and goes.
            if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != launcher) _exit(128 + SIGTERM);
            setpgid(0, 0);
            signals.restore();
            sigprocmask(SIG_SETMASK, &old_mask, nullptr);
            execvpe(argv[0], argv.data(), envp.data());
            _exit(127);  // the shell's "command not found"
        }
        if (pid < 0) {
            const std::string why = std::strerror(errno);
            sigprocmask(SIG_SETMASK, &old_mask, nullptr);
            wait_for_ranks(spec.grace_seconds, true, false);
            restore();
            throw std::runtime_error("cannot start rank " + std::to_string(r) + ": " + why);
        }
        setpgid(pid, pid);  // also here, so that no signal finds the group missing
        g_pids[r] = pid;
        g_count = r + 1;
    }
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);

    const LaunchResult result = wait_for_ranks(spec.grace_seconds, false, spec.independent);
    restore();
    return result;
}

}  // namespace rigel::dist
