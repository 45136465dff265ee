// The ladder runner.
#include "ladder/runner.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "core/hash.hpp"

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

bool rung_selected(const Rung& r, const std::vector<std::string>& filters) {
    if (filters.empty()) return true;
    return std::any_of(filters.begin(), filters.end(),
                       [&](const std::string& f) { return f == r.id || f == r.group || f == "all"; });
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
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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

std::vector<DType> default_dtypes(Backend b) {
    if (b == Backend::cpu) return {DType::f32};
    return {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::e4m3};
}

void validate_request(const LadderOptions& opts, const LadderContext& ctx) {
    if (opts.shapes.empty()) throw std::invalid_argument("no sizes given");
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
    for (Backend b : opts.backends) {
        const auto types = opts.dtypes.empty() ? default_dtypes(b) : opts.dtypes;
        for (DType t : types) {
            const bool any = std::any_of(rungs.begin(), rungs.end(), [&](const Rung* r) {
                return r->backend == b && (r->dtypes & dtype_bit(t)) && rung_selected(*r, opts.rungs);
            });
            if (!any) {
                std::string have;
                for (const auto& d : dtype_table())
                    if (std::any_of(rungs.begin(), rungs.end(), [&](const Rung* r) {
                            return r->backend == b && (r->dtypes & dtype_bit(d.type)) && rung_selected(*r, opts.rungs);
                        }))
                        have += (have.empty() ? "" : ", ") + std::string(d.name);
                throw std::invalid_argument("no selected " + std::string(name(b)) + " rung takes type " +
                                            std::string(name(t)) + " (they take: " + (have.empty() ? "none" : have) +
                                            ")");
            }
        }
        Executor* ex = executor_for(b, ctx);
        if (!ex) throw std::invalid_argument("backend " + std::string(name(b)) + " is not available");
        if (!ex->unavailable_reason().empty()) continue;  // the runner reports SKIP rows
        for (const Shape& s : opts.shapes)
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

std::vector<ResultRow> run_ladder(const LadderOptions& opts, const LadderContext& ctx) {
    validate_request(opts, ctx);
    const int threads = resolve_threads(opts.threads);
    const auto& rungs = ctx.rungs;
    std::vector<ResultRow> rows;
    auto say = [&](const std::string& s) {
        if (ctx.progress) ctx.progress(s);
    };

    // Count the steps for the progress line.
    std::size_t total = 0, step = 0;
    for (const Shape& s : opts.shapes) {
        (void)s;
        for (Backend b : opts.backends)
            for (DType t : opts.dtypes.empty() ? default_dtypes(b) : opts.dtypes)
                for (const Rung* r : rungs)
                    if (r->backend == b && (r->dtypes & dtype_bit(t)) && rung_selected(*r, opts.rungs)) ++total;
    }

    std::vector<DType> all_types;
    for (Backend b : opts.backends)
        for (DType t : opts.dtypes.empty() ? default_dtypes(b) : opts.dtypes)
            if (std::find(all_types.begin(), all_types.end(), t) == all_types.end()) all_types.push_back(t);

    for (const Shape& shape : opts.shapes) {
        for (DType type : all_types) {
            std::vector<PlannedRun> plan;
            for (Backend b : opts.backends) {
                const auto types = opts.dtypes.empty() ? default_dtypes(b) : opts.dtypes;
                if (std::find(types.begin(), types.end(), type) == types.end()) continue;
                for (const Rung* r : rungs)
                    if (r->backend == b && (r->dtypes & dtype_bit(type)) && rung_selected(*r, opts.rungs))
                        plan.push_back({r, executor_for(b, ctx)});
            }
            if (plan.empty()) continue;
            // A stop request (SIGINT, SIGTERM) ends the run between measurements.
            if (ctx.should_stop && ctx.should_stop()) break;

            const auto m = static_cast<std::size_t>(shape.m);
            const auto n = static_cast<std::size_t>(shape.n);
            const auto k = static_cast<std::size_t>(shape.k);
            say("preparing " + shape.str() + " " + std::string(name(type)) + ": inputs and float64 reference");
            // A is M x K and B is K x N, K along A's columns and B's rows (where
            // mxfp4's scale blocks run).
            const Operand a = make_operand(type, opts.recipe, opts.seed, 0, m, k, KAxis::cols);
            const Operand b = make_operand(type, opts.recipe, opts.seed, 1, k, n, KAxis::rows);
            std::optional<Operand> b_nk;  // made when a rung wants B as N x K
            const std::uint64_t input_hash =
                hash64(a.bytes.data(), a.bytes.size()) ^ mix64(hash64(b.bytes.data(), b.bytes.size()));
            std::optional<Reference> ref;
            std::vector<unsigned char> host_out(out_bytes(type, m * n));

            for (const PlannedRun& p : plan) {
                if (ctx.should_stop && ctx.should_stop()) break;
                const Rung& r = *p.rung;
                Executor& ex = *p.executor;
                ++step;
                ResultRow row;
                row.rung = r.id;
                row.backend = name(r.backend);
                row.group = r.group;
                row.dtype = name(type);
                row.shape = shape;
                row.vendor = r.vendor;
                row.parallel = r.parallel;
                row.threads = (r.backend == Backend::cpu && r.parallel) ? threads : 1;
                row.input_hash = input_hash;
                row.status = "SKIP";

                GemmProblem prob{type, shape.m, shape.n, shape.k, nullptr, nullptr, nullptr, row.threads,
                                 ex.stream()};
                const double work = static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                                    static_cast<double>(shape.k);
                const std::string why_not = ex.unavailable_reason();
                std::string refusal;
                if (!why_not.empty()) {
                    refusal = "skipped: " + why_not;
                } else if (r.min_sm > ex.compute_capability()) {
                    refusal = "skipped: needs sm_" + std::to_string(r.min_sm) + ", device is sm_" +
                              std::to_string(ex.compute_capability());
                } else if (r.check) {
                    refusal = r.check(prob);
                    if (!refusal.empty()) refusal = "refused: " + refusal;
                }
                if (refusal.empty() && r.max_work > 0 && work > r.max_work && !opts.force) {
                    refusal = "skipped: M*N*K = " + fmt("%.3g", work) + " is above this rung's default limit " +
                              fmt("%.3g", r.max_work) + " (--force runs it)";
                }
                if (!refusal.empty()) {
                    row.reason = refusal;
                    say("[" + std::to_string(step) + "/" + std::to_string(total) + "] " + row.rung + " " +
                        row.dtype + " " + shape.str() + ": " + refusal);
                    rows.push_back(row);
                    continue;
                }

                if (!ref) ref = compute_reference(a.values, b.values, shape.m, shape.n, shape.k, opts.seed, threads);
                row.checked_rows = static_cast<std::int64_t>(ref->rows.size());
                const Operand* b_used = &b;
                if (r.b_layout == BLayout::n_by_k) {
                    if (!b_nk) b_nk = transposed(b, k, n);
                    b_used = &*b_nk;
                }

                DeviceBuffer da(ex, a.bytes.size()), db(ex, b_used->bytes.size()), dc(ex, host_out.size());
                ex.upload(da.get(), a.bytes.data(), a.bytes.size());
                ex.upload(db.get(), b_used->bytes.data(), b_used->bytes.size());
                ex.poison(dc.get(), host_out.size());
                prob.a = da.get();
                prob.b = db.get();
                prob.c = dc.get();

                say("[" + std::to_string(step) + "/" + std::to_string(total) + "] " + row.rung + " " + row.dtype +
                    " " + shape.str() + ": verifying");
                try {
                    r.run(prob);
                    ex.synchronize();
                } catch (const std::exception& e) {
                    row.status = "FAIL";
                    row.reason = std::string("error: ") + e.what();
                    rows.push_back(row);
                    continue;
                }
                ex.download(host_out.data(), dc.get(), host_out.size());
                row.verdict = verify(type, host_out.data(), *ref);
                row.status = row.verdict.pass ? "PASS" : "FAIL";
                row.reason = row.verdict.reason;
                if (row.verdict.pass && !opts.verify_only) {
                    const TimingConfig& tc = r.backend == Backend::cpu ? opts.cpu_timing : opts.gpu_timing;
                    ex.begin_sampling();
                    row.timing = measure([&] { return ex.time_once([&] { r.run(prob); }); }, tc);
                    row.device = ex.end_sampling();
                    row.gflops = gflops(static_cast<double>(shape.m), static_cast<double>(shape.n),
                                        static_cast<double>(shape.k), row.timing.median_s);
                }
                say("[" + std::to_string(step) + "/" + std::to_string(total) + "] " + row.rung + " " + row.dtype +
                    " " + shape.str() + ": " + row.status +
                    (row.gflops > 0 ? " " + fmt("%.2f", row.gflops) + " Gflop/s" : "") +
                    (row.reason.empty() ? "" : " (" + row.reason + ")"));
                rows.push_back(row);
            }
            if (ctx.checkpoint) {
                std::vector<ResultRow> so_far = rows;
                fill_ratios(so_far);
                ctx.checkpoint(so_far);
            }
        }
    }

    fill_ratios(rows);
    return rows;
}

void fill_ratios(std::vector<ResultRow>& rows) {
    // Over the naive CPU rung, and as a share of the vendor library's default
    // path on the same backend (and, on the CPU, with the same threading).
    for (ResultRow& row : rows) {
        if (row.status != "PASS" || row.gflops <= 0) continue;
        for (const ResultRow& o : rows) {
            if (o.status != "PASS" || o.gflops <= 0 || o.shape.m != row.shape.m || o.shape.n != row.shape.n ||
                o.shape.k != row.shape.k || o.dtype != row.dtype)
                continue;
            if (o.rung == kNaiveRungId) row.x_over_naive = row.gflops / o.gflops;
            if (o.vendor == VendorRank::primary && o.backend == row.backend &&
                (row.backend != "cpu" || o.parallel == row.parallel))
                row.pct_of_vendor = 100.0 * row.gflops / o.gflops;
        }
    }
}

std::vector<std::string> result_header() {
    return {"run_id", "rung", "backend", "group", "dtype", "m", "n", "k", "threads", "status", "reason",
            "vendor", "time_median_s", "time_min_s", "time_p10_s", "time_p90_s", "noise_rel", "reps", "gflops",
            "x_over_naive", "pct_of_vendor", "err_rel_fro", "err_max_scaled", "tolerance", "checked_rows",
            "recipe", "seed", "input_hash", "output_hash", "sm_clock_mhz", "mem_clock_mhz", "power_w",
            "power_max_w", "temp_c", "clock_event_mask", "throttled"};
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
    const bool ran = r.status != "SKIP";
    const auto& d = r.device;
    return {run_id, r.rung, r.backend, r.group, r.dtype, std::to_string(r.shape.m), std::to_string(r.shape.n),
            std::to_string(r.shape.k), std::to_string(r.threads), r.status, r.reason,
            r.vendor != VendorRank::none ? "1" : "0",
            timed ? num(r.timing.median_s) : "", timed ? num(r.timing.min_s) : "",
            timed ? num(r.timing.p10_s) : "", timed ? num(r.timing.p90_s) : "",
            timed ? num(r.timing.noise_rel) : "", timed ? std::to_string(r.timing.reps) : "",
            timed ? num(r.gflops) : "", num(r.x_over_naive), num(r.pct_of_vendor),
            ran ? num(r.verdict.err_rel_fro) : "", ran ? num(r.verdict.err_max_scaled) : "",
            ran ? num(r.verdict.tolerance) : "", ran ? std::to_string(r.checked_rows) : "",
            std::string(name(recipe)), std::to_string(seed), hex(r.input_hash),
            ran ? hex(r.verdict.out_hash) : "", d.valid ? num(d.sm_clock_mhz) : "",
            d.valid ? num(d.mem_clock_mhz) : "", d.valid ? num(d.power_w) : "", d.valid ? num(d.power_max_w) : "",
            d.valid ? num(d.temp_c) : "", d.valid ? hex(d.clock_event_mask) : "",
            d.valid ? (d.throttled ? "1" : "0") : ""};
}

}  // namespace rigel
