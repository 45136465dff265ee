// SIGINT and SIGTERM: the first asks the run to stop after the measurement in
// progress (the runner asks stop_requested() between measurements); a second
// quits at once, but never while a result file is being written, so that a
// quit leaves neither a temporary file nor a CSV and sidecar that disagree.
#pragma once

namespace rigel {

// Installs the handlers. A signal the process was started ignoring (a
// background job's SIGINT) stays ignored.
void install_stop_handlers();

// True once SIGINT or SIGTERM arrived.
bool stop_requested();

// The signal that asked for the stop (SIGINT or SIGTERM), 0 if none.
int stop_signal();

// While one lives, a second signal waits: it quits when the outermost guard
// ends. Guards nest within one thread (claim a pair of files, then write it).
class WriteGuard {
public:
    WriteGuard();
    ~WriteGuard();
    WriteGuard(const WriteGuard&) = delete;
    WriteGuard& operator=(const WriteGuard&) = delete;
};

}  // namespace rigel
