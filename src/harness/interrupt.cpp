// Signal handling: the handler only touches lock-free atomics and calls
// write(2) and _exit(2), which are async-signal-safe.
#include "harness/interrupt.hpp"

#include <atomic>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace rigel {
namespace {

// What the process is doing with its result files: a second signal quits at
// once only from idle; from writing it leaves the quit to the writer.
enum : int { kIdle = 0, kWriting = 1, kQuitting = 2 };

std::atomic<int> g_state{kIdle};
std::atomic<int> g_signal{0};     // the first stop signal
std::atomic<int> g_quit_code{0};  // set by a second signal
// Guards of the writing thread; only the outermost one moves g_state.
thread_local int t_depth = 0;

static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

void say(const char* s) {
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, s, std::strlen(s));
}

[[noreturn]] void quit_now(int code) {
    say("rigel: quit at once; the result files hold what the last checkpoint wrote\n");
    ::_exit(code);
}

void on_signal(int sig) {
    int none = 0;
    if (g_signal.compare_exchange_strong(none, sig)) {
        say("\nrigel: stopping after the measurement in progress (send the signal again to quit at once)\n");
        return;
    }
    g_quit_code.store(128 + sig);
    int idle = kIdle;
    if (g_state.compare_exchange_strong(idle, kQuitting)) quit_now(128 + sig);
    // A write is in progress: the WriteGuard's end quits.
}

}  // namespace

void install_stop_handlers() {
    for (int sig : {SIGINT, SIGTERM}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        ::sigaction(sig, &sa, nullptr);
    }
}

bool stop_requested() { return g_signal.load() != 0; }

int stop_signal() { return g_signal.load(); }

WriteGuard::WriteGuard() {
    if (t_depth++ > 0) return;
    int idle = kIdle;
    if (g_state.compare_exchange_strong(idle, kWriting)) return;
    if (idle == kQuitting)
        for (;;) ::pause();  // the handler is quitting on another thread
    --t_depth;
    throw std::logic_error("WriteGuard: another thread is writing results");
}

WriteGuard::~WriteGuard() {
    if (--t_depth > 0) return;
    g_state.store(kIdle);
    if (const int code = g_quit_code.load()) {
        int idle = kIdle;
        if (g_state.compare_exchange_strong(idle, kQuitting)) quit_now(code);
    }
}

}  // namespace rigel
