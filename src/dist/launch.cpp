#include "dist/launch.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "dist/rendezvous.hpp"

extern char** environ;

namespace rigel::dist {
namespace {

// The children, for the signal handler: it forwards SIGINT and SIGTERM.
// Each child leads a process group of its own, and signals go to the whole
// group, so that a rank that is a shell script stops with everything it
// started.
constexpr int kMaxRanks = 1024;
volatile sig_atomic_t g_count = 0;
pid_t g_pids[kMaxRanks];

void forward(int sig) {
    for (sig_atomic_t i = 0; i < g_count; ++i)
        if (g_pids[i] > 0) kill(-g_pids[i], sig);
}

void stop_all(int except) {
    for (sig_atomic_t i = 0; i < g_count; ++i)
        if (i != except && g_pids[i] > 0) kill(-g_pids[i], SIGTERM);
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
    return {};
}

LaunchResult launch(const LaunchSpec& spec) {
    if (const std::string why = check(spec); !why.empty()) throw std::invalid_argument(why);
    const std::string dir = make_rendezvous(spec.rendezvous_parent);
    std::vector<std::string> argv_store = spec.command;
    std::vector<char*> argv = pointers(argv_store);
    std::vector<std::vector<std::string>> envs;
    for (int r = 0; r < spec.nproc; ++r) envs.push_back(rank_environment(r, spec.nproc, dir));

    struct sigaction sa {}, old_int{}, old_term{};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    const auto restore = [&] {
        sigaction(SIGINT, &old_int, nullptr);
        sigaction(SIGTERM, &old_term, nullptr);
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        g_count = 0;
    };

    // SIGINT and SIGTERM wait while the children are made: a child between
    // fork and exec still has the forwarding handler, and would take a stop
    // for itself to forward. It restores the default handlers first.
    sigset_t stops, old_mask;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, &old_mask);
    g_count = 0;
    for (int r = 0; r < spec.nproc; ++r) {
        std::vector<char*> envp = pointers(envs[static_cast<std::size_t>(r)]);
        const pid_t pid = fork();
        if (pid == 0) {
            setpgid(0, 0);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            sigprocmask(SIG_SETMASK, &old_mask, nullptr);
            execvpe(argv[0], argv.data(), envp.data());
            _exit(127);  // the shell's "command not found"
        }
        if (pid < 0) {
            const std::string why = std::strerror(errno);
            sigprocmask(SIG_SETMASK, &old_mask, nullptr);
            stop_all(-1);
            while (wait(nullptr) > 0) {
            }
            restore();
            throw std::runtime_error("cannot start rank " + std::to_string(r) + ": " + why);
        }
        setpgid(pid, pid);  // also here, so that no signal finds the group missing
        g_pids[r] = pid;
        g_count = r + 1;
    }
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);

    LaunchResult result;
    for (int left = spec.nproc; left > 0;) {
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        int rank = -1;
        for (int r = 0; r < spec.nproc; ++r)
            if (g_pids[r] == pid) rank = r;
        if (rank < 0) continue;
        g_pids[rank] = -1;
        --left;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && result.first_failed < 0) {
            result.exit_code = code;
            result.first_failed = rank;
            stop_all(rank);
        }
    }
    restore();
    return result;
}

}  // namespace rigel::dist
