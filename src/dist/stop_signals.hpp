// The stop signals (SIGINT, SIGTERM, SIGHUP) of a process that starts others
// and waits for them (the launcher, rigel fleet): while a StopSignals lives,
// `handler` takes each of them that the process was not started ignoring
// (nohup's SIGHUP, a background job's SIGINT stay ignored, and so in every
// child). restore() puts back what was there: the destructor's, and a child's
// between fork and exec (sigaction is async-signal-safe).
#pragma once
#include <signal.h>

#include <array>
#include <cstddef>

namespace rigel::dist {

class StopSignals {
public:
    static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};

    explicit StopSignals(void (*handler)(int)) {
        struct sigaction sa {};
        sa.sa_handler = handler;
        sigemptyset(&sa.sa_mask);
        for (std::size_t i = 0; i < kSignals.size(); ++i) {
            sigaction(kSignals[i], nullptr, &old_[i]);
            if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr);
        }
    }
    ~StopSignals() { restore(); }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    void restore() const {
        for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    }

private:
    std::array<struct sigaction, kSignals.size()> old_{};
};

}  // namespace rigel::dist
