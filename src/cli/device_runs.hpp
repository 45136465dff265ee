// What the device commands (`rigel gemm`, `rigel attention`) share: their
// common options (--out, --seed, --threads and the paired timing's), the
// device check, and one run's result files (a CSV and its JSON sidecar,
// claimed before the first case and rewritten after every case).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/executor.hpp"
#include "harness/paired.hpp"
#include "harness/report_io.hpp"

namespace CLI { class App; }

namespace rigel::cli {

// Paired timing unless --warmup or --min-time say otherwise: a warm-up long
// enough for the clock to settle, then about half a second of samples per side.
inline constexpr PairedConfig kBenchTiming{.warmup_s = 0.5, .min_time_s = 1.0, .min_pairs = 10, .max_pairs = 2000,
                                           .max_time_s = 30.0};

// The options every device command takes (timed ones: the timing too).
struct CommonArgs {
    std::string out, seed = "1", threads = "0", warmup, min_time;
};
void add_common_options(CLI::App* cmd, CommonArgs& a, bool timed);
PairedConfig timing_of(const CLI::App& cmd, const CommonArgs& a);

// A CUDA device of compute capability 9.0 (rigel's Hopper kernels are
// sm_90a); otherwise DeviceUnavailable ("skipped: `what` needs sm_90a ...").
std::unique_ptr<Executor> sm90_device(const std::string& what);

// "%.6g", empty for a non-finite number.
std::string num(double v);
// One line on stderr, "rigel: " first.
void say(const std::string& s);

// The columns every row of a run starts with.
struct RowContext {
    std::string run_id, host, device;
};

// A run's CSV and sidecar in `out` (nothing without --out), named
// <date>_<commit>_<file_tag>.csv; `what` is the sidecar's kind.
class RunFiles {
public:
    RunFiles(const std::string& out, const std::vector<std::string>& header, const std::string& what,
             const std::string& file_tag, const std::string& suite, std::uint64_t seed, Executor& ex);
    const RowContext& rows() const { return row_; }
    void write(const std::vector<std::vector<std::string>>& cells, const JsonObject& details, bool complete);
    // "wrote N row(s) in ...", or what an interruption kept.
    void report(std::size_t rows) const;

private:
    RowContext row_;
    Sidecar side_;
    std::vector<std::string> header_;
    std::optional<ResultFiles> files_;
};

}  // namespace rigel::cli
