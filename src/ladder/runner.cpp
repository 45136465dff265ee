// The ladder runner.
#include "ladder/runner.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "core/hash.hpp"
#include "core/host_threads.hpp"

namespace rigel {
namespace {

constexpr std::int64_t kMaxDim = (1ll << 31) - 1;

std::int64_t parse_dim(const std::string& s, const std::string& whole) {
    std::int64_t v = 0;
    const auto* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    if (s.empty() || ec != std::errc() || p != end)
        throw std::invalid_argument("size '" + whole + "' is not a number or MxNxK");
    if (v <= 0) throw std::invalid_argument("size '" + whole + "' must be >= 1");
    if (v > kMaxDim) throw std::invalid_argument("size '" + whole + "' exceeds 2^31-1");
    return v;
}

Executor* executor_for(Backend b, const LadderContext& ctx) { return b == Backend::cpu ? ctx.cpu : ctx.cuda; }

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

// Operand bytes as stored (elements, and mxfp4's scales).
double operand_bytes_of(DType t, std::int64_t lines, std::int64_t k) {
    return static_cast<double>(operand_bytes(t, static_cast<std::size_t>(lines), static_cast<std::size_t>(k)));
}

// Host bytes one (shape, type) needs at the peak: operands as bytes and as
// float64 values, a transposed copy of B, the output, and the reference rows.
double host_bytes_needed(const Shape& s, DType t) {
    const double ma = static_cast<double>(s.m) * static_cast<double>(s.k);
    const double mb = static_cast<double>(s.k) * static_cast<double>(s.n);
    const double mc = static_cast<double>(s.m) * static_cast<double>(s.n);
    return (ma + 2 * mb) * 8 + operand_bytes_of(t, s.m, s.k) + 2 * operand_bytes_of(t, s.n, s.k) +
           2 * (ma + mb) * 8 + mc * 4 * 2 + mc * 8;
}

double device_bytes_needed(const Shape& s, DType t) {
    const double mc = static_cast<double>(s.m) * static_cast<double>(s.n);
    return operand_bytes_of(t, s.m, s.k) + operand_bytes_of(t, s.n, s.k) + static_cast<double>(out_bytes(t, 1)) * mc;
}

int resolve_threads(int requested) {
    if (requested > 0) return requested;
    return default_host_threads();
}

int rung_threads(const Rung& r, int threads) { return (r.backend == Backend::cpu && r.parallel) ? threads : 1; }

GemmProblem problem_of(const Rung& r, Executor& ex, const Shape& s, DType type, int threads) {
    return GemmProblem{.type = type, .m = s.m, .n = s.n, .k = s.k, .a = nullptr, .b = nullptr, .c = nullptr,
                       .threads = rung_threads(r, threads), .stream = ex.stream()};
}

// Why a rung will not run at this shape and type, decided before any data
// exists; empty when it runs.
std::string refusal_of(const Rung& r, Executor& ex, const Shape& s, DType type, int threads, bool force) {
    const std::string why_not = ex.unavailable_reason();
    if (!why_not.empty()) return "skipped: " + why_not;
    if (r.min_sm > ex.compute_capability())
        return "skipped: needs sm_" + std::to_string(r.min_sm) + ", device is sm_" +
               std::to_string(ex.compute_capability());
    if (r.check) {
        const std::string refusal = r.check(problem_of(r, ex, s, type, threads));
        if (!refusal.empty()) return "refused: " + refusal;
    }
    const double work = static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    if (r.max_work > 0 && work > r.max_work && !force)
        return "skipped: M*N*K = " + fmt("%.3g", work) + " is above this rung's default limit " +
               fmt("%.3g", r.max_work) + " (--force runs it)";
    return {};
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
    return buf;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// "0.4 s", "42 s", "2 min 05 s", "1 h 07 min".
std::string duration_text(double s) {
    char buf[48];
    if (s < 10)
        std::snprintf(buf, sizeof buf, "%.1f s", s);
    else if (s < 60)
        std::snprintf(buf, sizeof buf, "%.0f s", s);
    else if (s < 3600)
        std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
    else
        std::snprintf(buf, sizeof buf, "%d h %02d min", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
    return buf;
}

// A step that takes at least this long says so: before it is timed, how long
// the timing should take, and when it ends, how long it took.
constexpr double kLongStepSeconds = 10.0;

// The progress lines, one per event: "[step/steps, elapsed] rung type shape: what".
class Progress {
public:
    Progress(const std::function<void(const std::string&)>& out, std::size_t steps)
        : out_(out), steps_(steps), start_(Clock::now()) {}
    void next_step() { ++step_; }
    void say(const std::string& line) const {
        if (out_) out_(line);
    }
    void say(const ResultRow& row, const std::string& what) const {
        say("[" + std::to_string(step_) + "/" + std::to_string(steps_) + ", " + duration_text(seconds_since(start_)) +
            "] " + row.rung + " " + row.dtype + " " + row.shape.str() + ": " + what);
    }

private:
    const std::function<void(const std::string&)>& out_;
    std::size_t steps_;
    std::size_t step_ = 0;
    Clock::time_point start_;
};

// What the runs of one (shape, type) share, each made once: the quantized
// inputs (at once), B as N x K and the float64 reference (when a run first
// needs them; a group whose rungs all refuse computes no reference).
class GroupInputs {
public:
    GroupInputs(const PlannedGroup& g, const LadderOptions& opts, int threads, const Progress& progress)
        : shape(g.shape), type(g.type), seed_(opts.seed), threads_(threads) {
        const auto m = static_cast<std::size_t>(shape.m);
        const auto n = static_cast<std::size_t>(shape.n);
        const auto k = static_cast<std::size_t>(shape.k);
        progress.say("preparing " + shape.str() + " " + std::string(name(type)) + ": inputs and float64 reference");
        // A is M x K and B is K x N, K along A's columns and B's rows (where
        // mxfp4's scale blocks run).
        a = make_operand(type, opts.recipe, opts.seed, 0, m, k, KAxis::cols);
        b = make_operand(type, opts.recipe, opts.seed, 1, k, n, KAxis::rows);
        input_hash = hash64(a.bytes.data(), a.bytes.size()) ^ mix64(hash64(b.bytes.data(), b.bytes.size()));
        host_out.resize(out_bytes(type, m * n));
    }
    const Reference& reference() {
        if (!ref_) ref_ = compute_reference(a.values, b.values, shape.m, shape.n, shape.k, seed_, threads_);
        return *ref_;
    }
    const Operand& b_as(BLayout layout) {
        if (layout == BLayout::k_by_n) return b;
        if (!b_nk_) b_nk_ = transposed(b, static_cast<std::size_t>(shape.k), static_cast<std::size_t>(shape.n));
        return *b_nk_;
    }

    const Shape shape;
    const DType type;
    Operand a, b;
    std::uint64_t input_hash = 0;
    std::vector<unsigned char> host_out;

private:
    std::uint64_t seed_;
    int threads_;
    std::optional<Operand> b_nk_;
    std::optional<Reference> ref_;
};

// A row whose timing threw: FAIL with the reason, and no rate reported.
void fail_timing(ResultRow& row, const std::string& reason) {
    row.status = Status::fail;
    row.reason = reason;
    row.timing = {};
    row.gflops = 0;
    row.device_sample = {};
    row.paired = {};
    row.paired_vendor.clear();
}

// One planned run: poison the output, run once, verify against the
// reference, and only then time (unless `time_it` is false).
ResultRow run_one(const PlannedRun& p, GroupInputs& in, const LadderOptions& opts, bool time_it, int threads,
                  Progress& progress) {
    const Rung& r = *p.rung;
    Executor& ex = *p.executor;
    progress.next_step();
    ResultRow row;
    row.rung = r.id;
    row.backend = name(r.backend);
    row.group = r.group;
    row.dtype = name(in.type);
    row.shape = in.shape;
    row.vendor = r.vendor;
    row.parallel = r.parallel;
    row.threads = rung_threads(r, threads);
    row.input_hash = in.input_hash;
    row.device = ex.device_name();
    row.status = Status::skip;
    if (!p.refusal.empty()) {
        row.reason = p.refusal;
        progress.say(row, p.refusal);
        return row;
    }

    const Reference& ref = in.reference();
    row.checked_rows = static_cast<std::int64_t>(ref.rows.size());
    const Operand& b = in.b_as(r.b_layout);
    DeviceBuffer da(ex, in.a.bytes.size()), db(ex, b.bytes.size()), dc(ex, in.host_out.size());
    ex.upload(da.get(), in.a.bytes.data(), in.a.bytes.size());
    ex.upload(db.get(), b.bytes.data(), b.bytes.size());
    ex.poison(dc.get(), in.host_out.size());
    GemmProblem prob = problem_of(r, ex, in.shape, in.type, threads);
    prob.a = da.get();
    prob.b = db.get();
    prob.c = dc.get();

    progress.say(row, "verifying");
    const auto t0 = Clock::now();
    try {
        r.run(prob);
        ex.synchronize();
    } catch (const std::exception& e) {
        row.status = Status::fail;
        row.reason = std::string("error: ") + e.what();
        progress.say(row, "FAIL (" + row.reason + ")");
        return row;
    }
    const double one_run_s = seconds_since(t0);
    ex.download(in.host_out.data(), dc.get(), in.host_out.size());
    row.verdict = verify(in.type, in.host_out.data(), ref);
    row.status = row.verdict.pass ? Status::pass : Status::fail;
    row.reason = row.verdict.reason;
    if (row.verdict.pass && time_it) {
        const TimingConfig& tc = r.backend == Backend::cpu ? opts.cpu_timing : opts.gpu_timing;
        const double expected_s = expected_measure_seconds(one_run_s, tc);
        if (expected_s >= kLongStepSeconds)
            progress.say(row, "verified in " + duration_text(one_run_s) + "; timing, about " +
                                  duration_text(expected_s));
        // A rung that throws while it is timed fails its own row; the group's
        // other rows, and the rest of the ladder, still run.
        try {
            DeviceSampling sampling(ex);
            row.timing = measure([&] { return ex.time_once([&] { r.run(prob); }); }, tc);
            row.device_sample = sampling.stop();
            row.gflops = gflops(static_cast<double>(in.shape.m), static_cast<double>(in.shape.n),
                                static_cast<double>(in.shape.k), row.timing.median_s);
        } catch (const std::exception& e) {
            fail_timing(row, std::string("error while timing: ") + e.what());
        }
        if (row.timing.capped)
            progress.say(row, "the time cap of " + fmt("%g", tc.max_time_s) + " s ended the timing after " +
                                  std::to_string(row.timing.reps) + " repetition(s)");
    }
    const double step_s = seconds_since(t0);
    progress.say(row, std::string(name(row.status)) +
                          (row.gflops > 0 ? " " + fmt("%.2f", row.gflops) + " " + std::string(rate_unit(in.type))
                                          : "") +
                          (row.reason.empty() ? "" : " (" + row.reason + ")") +
                          (step_s >= kLongStepSeconds ? ", took " + duration_text(step_s) : ""));
    return row;
}

// LadderOptions::paired: each passing, timed rung of a group against the
// vendor rung of its backend it is judged by (on the CPU, with the same
// threading): the variant (cuBLASLt's FAST_ACCUM) where the group has one and
// the rung does not promote (Rung::promotes), else the primary; both on the
// group's inputs in buffers of their own, in paired samples.
void pair_with_vendor(const PlannedGroup& g, std::span<ResultRow> rows, GroupInputs& in, const LadderOptions& opts,
                      int threads, Progress& progress) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
        ResultRow& row = rows[i];
        if (row.status != Status::pass || row.timing.reps == 0 || row.vendor != VendorRank::none) continue;
        const Rung& r = *g.runs[i].rung;
        const auto vendor_row = [&](VendorRank rank) {
            std::size_t v = rows.size();
            for (std::size_t j = 0; j < rows.size(); ++j)
                if (rows[j].vendor == rank && rows[j].status == Status::pass && rows[j].backend == row.backend &&
                    (row.backend != "cpu" || rows[j].parallel == row.parallel))
                    v = j;
            return v;
        };
        std::size_t v = r.promotes ? rows.size() : vendor_row(VendorRank::variant);
        if (v == rows.size()) v = vendor_row(VendorRank::primary);
        if (v == rows.size()) continue;
        const Rung& vendor = *g.runs[v].rung;
        Executor& ex = *g.runs[i].executor;
        const auto problem = [&](const Rung& x, DeviceBuffer& da, DeviceBuffer& db, DeviceBuffer& dc) {
            const Operand& b = in.b_as(x.b_layout);
            ex.upload(da.get(), in.a.bytes.data(), in.a.bytes.size());
            ex.upload(db.get(), b.bytes.data(), b.bytes.size());
            GemmProblem p = problem_of(x, ex, in.shape, in.type, threads);
            p.a = da.get(), p.b = db.get(), p.c = dc.get();
            return p;
        };
        // As in run_one: a throw while pairing fails this row alone.
        try {
            DeviceBuffer ra(ex, in.a.bytes.size()), rb(ex, in.b_as(r.b_layout).bytes.size()),
                rc(ex, in.host_out.size());
            DeviceBuffer va(ex, in.a.bytes.size()), vb(ex, in.b_as(vendor.b_layout).bytes.size()),
                vc(ex, in.host_out.size());
            const GemmProblem pr = problem(r, ra, rb, rc), pv = problem(vendor, va, vb, vc);
            row.paired = measure_paired([&] { return ex.time_once([&] { r.run(pr); }); },
                                        [&] { return ex.time_once([&] { vendor.run(pv); }); }, opts.paired_timing);
        } catch (const std::exception& e) {
            fail_timing(row, "error while timing, paired with " + std::string(vendor.id) + ": " + e.what());
            progress.say(row, "FAIL (" + row.reason + ")");
            continue;
        }
        row.paired_vendor = vendor.id;
        progress.say(row, "paired with " + std::string(vendor.id) + ": " + fmt("%.3f", row.paired.ratio_median) +
                              " [" + fmt("%.3f", row.paired.ratio_p10) + ", " + fmt("%.3f", row.paired.ratio_p90) +
                              "], " + std::to_string(row.paired.pairs) + " pairs");
    }
}

}  // namespace

std::string Shape::str() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

Shape parse_shape(const std::string& text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const auto x = text.find('x', start);
        parts.push_back(text.substr(start, x == std::string::npos ? std::string::npos : x - start));
        if (x == std::string::npos) break;
        start = x + 1;
    }
    Shape s;
    if (parts.size() == 1) {
        s.m = s.n = s.k = parse_dim(parts[0], text);
    } else if (parts.size() == 3) {
        s.m = parse_dim(parts[0], text);
        s.n = parse_dim(parts[1], text);
        s.k = parse_dim(parts[2], text);
    } else {
        throw std::invalid_argument("size '" + text + "' is not N or MxNxK");
    }
    // M*N*K must fit in int64 (flop counts and index arithmetic).
    __int128 work = static_cast<__int128>(s.m) * s.n * s.k;
    if (work > static_cast<__int128>(INT64_MAX / 2))
        throw std::invalid_argument("size '" + text + "': M*N*K overflows 64-bit arithmetic");
    return s;
}

bool tile_multiple(const Shape& s) { return s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0; }

std::optional<Shape> odd_companion(const std::vector<Shape>& shapes, const std::vector<Backend>& backends) {
    if (!std::all_of(shapes.begin(), shapes.end(), tile_multiple)) return std::nullopt;
    const bool cuda = std::find(backends.begin(), backends.end(), Backend::cuda) != backends.end();
    return cuda ? Shape{1021, 1028, 1040} : Shape{509, 1021, 1031};
}

std::vector<DType> default_dtypes(Backend b) {
    if (b == Backend::cpu) return {DType::f32};
    return {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::e4m3};
}

bool rung_selected(const Rung& r, const std::vector<std::string>& filters) {
    if (filters.empty()) return true;
    return std::any_of(filters.begin(), filters.end(),
                       [&](const std::string& f) { return f == r.id || f == r.group || f == "all"; });
}

std::vector<DType> backend_types(Backend b, const LadderOptions& opts, const std::vector<const Rung*>& rungs) {
    std::vector<DType> out;
    for (DType t : opts.dtypes.empty() ? default_dtypes(b) : opts.dtypes)
        if (std::any_of(rungs.begin(), rungs.end(), [&](const Rung* r) {
                return r->backend == b && (r->dtypes & dtype_bit(t)) && rung_selected(*r, opts.rungs);
            }))
            out.push_back(t);
    return out;
}

void validate_request(const LadderOptions& opts, const LadderContext& ctx) {
    if (opts.shapes.empty() && opts.verify_shapes.empty()) throw std::invalid_argument("no sizes given");
    const auto& rungs = ctx.rungs;
    for (const auto& f : opts.rungs) {
        const bool known = f == "all" || std::any_of(rungs.begin(), rungs.end(), [&](const Rung* r) {
                               return f == r->id || f == r->group;
                           });
        if (!known) {
            std::string ids;
            for (const Rung* r : rungs) ids += (ids.empty() ? "" : ", ") + std::string(r->id);
            throw std::invalid_argument("unknown rung '" + f + "' (known: " + ids + ")");
        }
    }
    // A type is refused only when no selected rung of any selected backend
    // takes it: with --backend all, bf16 runs on the CUDA rungs alone.
    std::vector<DType> runnable;
    for (Backend b : opts.backends)
        for (DType t : backend_types(b, opts, rungs))
            if (std::find(runnable.begin(), runnable.end(), t) == runnable.end()) runnable.push_back(t);
    const auto taken_text = [&] {
        std::string have;
        for (const auto& d : dtype_table())
            if (std::any_of(rungs.begin(), rungs.end(), [&](const Rung* r) {
                    return std::find(opts.backends.begin(), opts.backends.end(), r->backend) != opts.backends.end() &&
                           (r->dtypes & dtype_bit(d.type)) && rung_selected(*r, opts.rungs);
                }))
                have += (have.empty() ? "" : ", ") + std::string(d.name);
        return " (they take: " + (have.empty() ? std::string("none") : have) + ")";
    };
    std::string backends;
    for (Backend b : opts.backends) backends += (backends.empty() ? "" : "/") + std::string(name(b));
    for (DType t : opts.dtypes)
        if (std::find(runnable.begin(), runnable.end(), t) == runnable.end())
            throw std::invalid_argument("no selected " + backends + " rung takes type " + std::string(name(t)) +
                                        taken_text());
    if (runnable.empty()) {
        std::string defaults;
        for (Backend b : opts.backends)
            for (DType t : default_dtypes(b)) defaults += (defaults.empty() ? "" : ", ") + std::string(name(t));
        throw std::invalid_argument("no selected " + backends + " rung takes a default type (" + defaults +
                                    "); name one with --dtype" + taken_text());
    }
    for (Backend b : opts.backends) {
        Executor* ex = executor_for(b, ctx);
        if (!ex) throw std::invalid_argument("backend " + std::string(name(b)) + " is not available");
        if (!ex->unavailable_reason().empty()) continue;  // the runner reports SKIP rows
        const auto types = backend_types(b, opts, rungs);
        std::vector<Shape> every = opts.shapes;
        every.insert(every.end(), opts.verify_shapes.begin(), opts.verify_shapes.end());
        for (const Shape& s : every)
            for (DType t : types) {
                const double host = host_bytes_needed(s, t);
                const double host_free = static_cast<double>(ctx.cpu->free_memory_bytes());
                if (host_free > 0 && host > host_free)
                    throw std::invalid_argument("size " + s.str() + " in " + std::string(name(t)) + " needs " +
                                                fmt("%.1f", host / (1 << 30)) + " GiB of host memory; " +
                                                fmt("%.1f", host_free / (1 << 30)) + " GiB is available");
                if (b == Backend::cuda) {
                    const double dev = device_bytes_needed(s, t);
                    const double dev_free = static_cast<double>(ex->free_memory_bytes());
                    if (dev > 0.9 * dev_free)
                        throw std::invalid_argument("size " + s.str() + " in " + std::string(name(t)) + " needs " +
                                                    fmt("%.1f", dev / (1 << 30)) + " GiB of device memory; " +
                                                    fmt("%.1f", dev_free / (1 << 30)) + " GiB is free");
                }
            }
    }
}

std::string_view name(Status s) {
    switch (s) {
        case Status::pass: return "PASS";
        case Status::fail: return "FAIL";
        case Status::skip: return "SKIP";
    }
    return "?";
}

std::string_view rate_unit(DType t) { return t == DType::i8 ? "Gop/s" : "Gflop/s"; }

double expected_measure_seconds(double one_run_s, const TimingConfig& tc) {
    // measure(): runs until warmup_s has passed (at least once), then until
    // min_reps runs and min_time_s are both reached, stopping at max_reps or
    // at the first run that ends past max_time_s.
    const double v = one_run_s;
    if (!(v > 0)) return tc.warmup_s + tc.min_time_s;
    const double wanted = std::max<double>(tc.min_reps, std::ceil(tc.min_time_s / v));
    const double until_max_time = std::floor(tc.max_time_s / v) + 1;
    const double runs = std::min({wanted, until_max_time, static_cast<double>(tc.max_reps)});
    return std::max(v, tc.warmup_s) + runs * v;
}

LadderPlan plan_ladder(const LadderOptions& opts, const LadderContext& ctx) {
    validate_request(opts, ctx);
    LadderPlan plan;
    plan.threads = resolve_threads(opts.threads);

    std::vector<DType> all_types;
    for (Backend b : opts.backends)
        for (DType t : backend_types(b, opts, ctx.rungs))
            if (std::find(all_types.begin(), all_types.end(), t) == all_types.end()) all_types.push_back(t);

    std::vector<std::pair<Shape, bool>> shapes;  // (shape, verified only)
    for (const Shape& s : opts.shapes) shapes.emplace_back(s, false);
    for (const Shape& s : opts.verify_shapes) shapes.emplace_back(s, true);
    for (const auto& [shape, verify_only] : shapes)
        for (DType type : all_types) {
            PlannedGroup group{.shape = shape, .type = type, .runs = {}, .verify_only = verify_only};
            for (Backend b : opts.backends) {
                const auto types = backend_types(b, opts, ctx.rungs);
                if (std::find(types.begin(), types.end(), type) == types.end()) continue;
                for (const Rung* r : ctx.rungs)
                    if (r->backend == b && (r->dtypes & dtype_bit(type)) && rung_selected(*r, opts.rungs))
                        group.runs.push_back({.rung = r,
                                              .executor = executor_for(b, ctx),
                                              .refusal = refusal_of(*r, *executor_for(b, ctx), shape, type,
                                                                    plan.threads, opts.force)});
            }
            plan.steps += group.runs.size();
            if (!group.runs.empty()) plan.groups.push_back(std::move(group));
        }
    return plan;
}

std::vector<ResultRow> run_ladder(const LadderOptions& opts, const LadderContext& ctx) {
    const LadderPlan plan = plan_ladder(opts, ctx);
    Progress progress{ctx.progress, plan.steps};
    const std::string host = host_name();
    std::vector<ResultRow> rows;
    for (const PlannedGroup& group : plan.groups) {
        GroupInputs in(group, opts, plan.threads, progress);
        const std::size_t first = rows.size();
        for (const PlannedRun& run : group.runs) {
            // A stop request (SIGINT, SIGTERM) ends the run between measurements.
            if (ctx.should_stop && ctx.should_stop()) break;
            rows.push_back(run_one(run, in, opts, !opts.verify_only && !group.verify_only, plan.threads, progress));
            rows.back().host = host;
        }
        if (opts.paired && !opts.verify_only && !group.verify_only && rows.size() - first == group.runs.size() &&
            !(ctx.should_stop && ctx.should_stop()))
            pair_with_vendor(group, std::span<ResultRow>(rows).subspan(first), in, opts, plan.threads, progress);
        if (ctx.checkpoint) {
            std::vector<ResultRow> so_far = rows;
            fill_ratios(so_far);
            ctx.checkpoint(so_far);
        }
        if (ctx.should_stop && ctx.should_stop()) break;
    }
    fill_ratios(rows);
    return rows;
}

void fill_ratios(std::vector<ResultRow>& rows) {
    // Over the naive CPU rung, and as a share of the vendor library's default
    // path on the same backend (and, on the CPU, with the same threading).
    for (ResultRow& row : rows) {
        if (row.status != Status::pass || row.gflops <= 0) continue;
        for (const ResultRow& o : rows) {
            if (o.status != Status::pass || o.gflops <= 0 || o.shape.m != row.shape.m || o.shape.n != row.shape.n ||
                o.shape.k != row.shape.k || o.dtype != row.dtype)
                continue;
            if (o.rung == kNaiveRungId) row.x_over_naive = row.gflops / o.gflops;
            if (o.vendor == VendorRank::primary && o.backend == row.backend &&
                (row.backend != "cpu" || o.parallel == row.parallel))
                row.pct_of_vendor = 100.0 * row.gflops / o.gflops;
        }
    }
}

JsonObject timing_settings(const LadderOptions& opts) {
    JsonObject t;
    t.boolean("verify_only", opts.verify_only).boolean("force", opts.force).boolean("paired", opts.paired);
    for (Backend b : opts.backends) {
        const TimingConfig& tc = b == Backend::cpu ? opts.cpu_timing : opts.gpu_timing;
        t.object(std::string(name(b)), JsonObject{}
                                           .num("warmup_s", tc.warmup_s)
                                           .num("min_time_s", tc.min_time_s)
                                           .integer("min_reps", tc.min_reps)
                                           .integer("max_reps", tc.max_reps)
                                           .num("max_time_s", tc.max_time_s));
    }
    if (opts.paired) {
        const PairedConfig& pc = opts.paired_timing;
        t.object("pairs", JsonObject{}
                              .num("warmup_s", pc.warmup_s)
                              .num("min_time_s", pc.min_time_s)
                              .integer("min_pairs", pc.min_pairs)
                              .integer("max_pairs", pc.max_pairs)
                              .num("max_time_s", pc.max_time_s)
                              .num("block_s", pc.block_s));
    }
    return t;
}

std::vector<std::string> result_header() {
    return {"run_id", "host", "device", "rung", "backend", "group", "dtype", "m", "n", "k", "threads", "status",
            "reason", "vendor", "time_median_s", "time_min_s", "time_p10_s", "time_p90_s", "noise_rel", "reps",
            "rate", "rate_unit", "x_over_naive", "pct_of_vendor", "err_rel_fro", "err_max_scaled", "tolerance",
            "checked_rows", "recipe", "seed", "input_hash", "output_hash", "sm_clock_mhz", "mem_clock_mhz",
            "power_w", "power_max_w", "temp_c", "clock_event_mask", "throttled", "paired_vendor",
            "paired_ratio_median", "paired_ratio_p10", "paired_ratio_p90", "paired_pairs"};
}

std::vector<std::string> result_cells(const ResultRow& r, const std::string& run_id, Recipe recipe,
                                      std::uint64_t seed) {
    auto num = [](double v) { return std::isfinite(v) ? fmt("%.6g", v) : std::string(); };
    auto hex = [](std::uint64_t v) {
        char buf[20];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
        return std::string(buf);
    };
    const bool timed = r.timing.reps > 0;
    const bool ran = r.status != Status::skip;
    const auto& d = r.device_sample;
    const auto type = parse_dtype(r.dtype);
    return {run_id, r.host, r.device, r.rung, r.backend, r.group, r.dtype, std::to_string(r.shape.m),
            std::to_string(r.shape.n), std::to_string(r.shape.k), std::to_string(r.threads),
            std::string(name(r.status)), r.reason, r.vendor != VendorRank::none ? "1" : "0",
            timed ? num(r.timing.median_s) : "", timed ? num(r.timing.min_s) : "",
            timed ? num(r.timing.p10_s) : "", timed ? num(r.timing.p90_s) : "",
            timed ? num(r.timing.noise_rel) : "", timed ? std::to_string(r.timing.reps) : "",
            timed ? num(r.gflops) : "", timed && type ? std::string(rate_unit(*type)) : "", num(r.x_over_naive),
            num(r.pct_of_vendor), ran ? num(r.verdict.err_rel_fro) : "", ran ? num(r.verdict.err_max_scaled) : "",
            ran ? num(r.verdict.tolerance) : "", ran ? std::to_string(r.checked_rows) : "",
            std::string(name(recipe)), std::to_string(seed), hex(r.input_hash),
            ran ? hex(r.verdict.out_hash) : "", d.valid ? num(d.sm_clock_mhz) : "",
            d.valid ? num(d.mem_clock_mhz) : "", d.valid ? num(d.power_w) : "", d.valid ? num(d.power_max_w) : "",
            d.valid ? num(d.temp_c) : "", d.valid ? hex(d.clock_event_mask) : "",
            d.valid ? (d.throttled ? "1" : "0") : "", r.paired_vendor,
            r.paired.pairs > 0 ? num(r.paired.ratio_median) : "", r.paired.pairs > 0 ? num(r.paired.ratio_p10) : "",
            r.paired.pairs > 0 ? num(r.paired.ratio_p90) : "",
            r.paired.pairs > 0 ? std::to_string(r.paired.pairs) : ""};
}

}  // namespace rigel
