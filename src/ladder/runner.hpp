// The ladder runner: for every shape and type, quantize the inputs once, compute
// the float64 reference once, then walk the registry: check what each rung can
// take, poison the output, run, verify, and only then time.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "core/reference.hpp"
#include "harness/executor.hpp"
#include "harness/paired.hpp"
#include "harness/report_io.hpp"
#include "harness/timing.hpp"
#include "ladder/rung.hpp"

namespace rigel {

struct Shape {
    std::int64_t m = 0, n = 0, k = 0;
    std::string str() const;
};

// "1024" is a cube; "4096x11008x4096" is M x N x K. Throws std::invalid_argument
// with a message naming the bad text (non-numbers, <= 0, M*N*K overflow).
Shape parse_shape(const std::string& text);

inline constexpr std::string_view kNaiveRungId = "k01_cpu_naive";

// Whether M, N and K are all multiples of 16, as every tile of every rung is:
// a shape that is not exercises the rungs' edge paths.
bool tile_multiple(const Shape& s);

// The odd companion a suite or the default sizes are verified at (never timed,
// LadderOptions::verify_shapes), so that every rung meets a shape that is a
// multiple of no tile: none when one of `shapes` already is not. On the CPU
// alone 509x1021x1031; with the CUDA backend 1021x1028x1040, whose K is a
// multiple of 16 (TMA's 16-byte rows of fp8) and N of 4 (cuBLAS's int8
// kernels), neither of 32.
std::optional<Shape> odd_companion(const std::vector<Shape>& shapes, const std::vector<Backend>& backends);

struct LadderOptions {
    std::vector<Backend> backends{Backend::cpu};
    std::vector<Shape> shapes;
    // Shapes every rung is verified at and none timed (nor paired), after
    // `shapes`: the odd companions that are multiples of no tile, which a
    // rate table does not need but every rung's verification does.
    std::vector<Shape> verify_shapes;
    std::vector<DType> dtypes;          // empty: each backend's default types
    std::vector<std::string> rungs;     // rung ids or group names; empty: all
    Recipe recipe = Recipe::uniform;
    std::uint64_t seed = 1;
    int threads = 0;                    // 0: all hardware threads
    TimingConfig cpu_timing;
    TimingConfig gpu_timing;
    bool force = false;                 // run rungs past their default size limit
    bool verify_only = false;           // verify every rung, time none
    // Each timed rung also against its backend's primary vendor rung in
    // paired samples (harness/paired.hpp: A B, B A, ... under one clock), the
    // ratio that a head-to-head claim needs; the single-sided rates stay.
    bool paired = false;
    PairedConfig paired_timing;
};

// What became of one rung at one shape and type. SKIP: refused or not
// runnable here, with the reason, before anything ran.
enum class Status : std::uint8_t { pass, fail, skip };
std::string_view name(Status s);  // PASS, FAIL, SKIP: the CSV's and the table's words

struct ResultRow {
    std::string rung, backend, group, dtype;
    Shape shape;
    int threads = 1;
    Status status = Status::skip;
    std::string reason;
    VendorRank vendor = VendorRank::none;
    bool parallel = false;
    TimingStats timing;
    double gflops = 0;  // 2*M*N*K / median time / 1e9: Gflop/s, or Gop/s for integer types (rate_unit)
    double x_over_naive = std::numeric_limits<double>::quiet_NaN();
    double pct_of_vendor = std::numeric_limits<double>::quiet_NaN();
    Verdict verdict;
    std::uint64_t input_hash = 0;
    std::int64_t checked_rows = 0;
    std::string host;    // the machine's host name
    std::string device;  // the executor's device: GPU name, or CPU model
    DeviceSample device_sample;
    // LadderOptions::paired: this rung over the vendor rung `paired_vendor`
    // (rate over rate, per pair; above 1 this rung is faster).
    std::string paired_vendor;
    PairedStats paired;
};

// The unit of ResultRow::gflops for a type: "Gflop/s", or "Gop/s" where the
// products are integer operations (i8).
std::string_view rate_unit(DType t);

// One planned measurement: a rung on its executor at one shape and type.
// Refusals that need no data (device absent, compute capability, the rung's
// shape rules, the default size limit) are decided when planning.
struct PlannedRun {
    const Rung* rung = nullptr;
    Executor* executor = nullptr;
    std::string refusal;  // empty: run it
};

// The runs of one (shape, type): they share the inputs and the reference.
struct PlannedGroup {
    Shape shape;
    DType type = DType::f32;
    std::vector<PlannedRun> runs;
    bool verify_only = false;  // a shape of LadderOptions::verify_shapes
};

struct LadderPlan {
    std::vector<PlannedGroup> groups;
    std::size_t steps = 0;  // runs over all groups: the progress line's denominator
    int threads = 1;        // CPU threads of parallel rungs
};

// Everything the runner needs from the outside world.
struct LadderContext {
    Executor* cpu = nullptr;
    Executor* cuda = nullptr;
    std::function<void(const std::string&)> progress;  // one line per event, to stderr
    // Called after every (shape, type) with all rows so far, ratios filled, so
    // that an interrupted run keeps what it finished.
    std::function<void(const std::vector<ResultRow>&)> checkpoint;
    // Asked between measurements; true ends the run early with the rows so
    // far (the CLI's SIGINT/SIGTERM flag).
    std::function<bool()> should_stop;
    // The registry the run chooses from, assembled by the caller (the CLI puts
    // the CPU and CUDA tables end to end), so that the runner never reaches
    // for a backend's registry itself.
    std::vector<const Rung*> rungs;
};

// Whether --rungs `filters` (ids, groups, "all"; empty: every rung) select `r`.
bool rung_selected(const Rung& r, const std::vector<std::string>& filters);

// The types backend `b` runs: those asked for (or, none asked, its default
// types) that one of its selected rungs in `rungs` takes.
std::vector<DType> backend_types(Backend b, const LadderOptions& opts, const std::vector<const Rung*>& rungs);

// Validates the request and throws std::invalid_argument before anything runs:
// unknown rungs; a type asked for that no selected rung of any selected
// backend takes (a type some backends take runs on those alone); no runnable
// type at all; memory.
void validate_request(const LadderOptions& opts, const LadderContext& ctx);

// Validates the request, then expands shapes x types x selected rungs in the
// order they will run.
LadderPlan plan_ladder(const LadderOptions& opts, const LadderContext& ctx);

// Plan, run each planned run (inputs, reference, poison, run, verify, time),
// then report (ratios). Stops between measurements when ctx.should_stop says so.
// An exception from a rung while it is verified, timed or paired fails its row
// ("error: ...", "error while timing: ...") and the run goes on.
std::vector<ResultRow> run_ladder(const LadderOptions& opts, const LadderContext& ctx);

// Seconds that measure() is expected to take for a rung whose one run took
// one_run_s (warm-up, then repetitions up to the limits of the configuration).
double expected_measure_seconds(double one_run_s, const TimingConfig& tc);

// Fills x_over_naive and pct_of_vendor from the rows of the same shape and type.
void fill_ratios(std::vector<ResultRow>& rows);

// The types a backend runs when none are asked for.
std::vector<DType> default_dtypes(Backend b);

// The settings the run's measurements were taken under, for the sidecar:
// verify_only, force and paired; per backend of the run ("cpu", "cuda") its
// warm-up, minimum time, minimum and maximum repetitions and time cap; and,
// when paired, the pairs' own settings.
JsonObject timing_settings(const LadderOptions& opts);

// CSV columns and cells of a result row (one row per rung, shape, type).
std::vector<std::string> result_header();
std::vector<std::string> result_cells(const ResultRow& r, const std::string& run_id, Recipe recipe,
                                      std::uint64_t seed);

}  // namespace rigel
