// The suite table. Each row replaces a block of repeated flags: the H200
// visit's steps (scripts/h200_visit.sh) and the GPU part of `make run`
// (scripts/run_default.sh) call these by name.
#include "ladder/suites.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "harness/timing.hpp"
#include "ladder/runner.hpp"

namespace rigel {
namespace {

// The Hopper sweeps time each shape for at least 0.4 s after a 1 s warm-up:
// long enough for the clock to settle at the power limit, short enough that
// one sweep fits one device call.
constexpr double kSweepWarmupSeconds = 1.0;
constexpr double kSweepMinSeconds = 0.4;

const std::vector<Suite>& table() {
    static const std::vector<Suite> suites{
        Suite{.name = "cpu",
              .purpose = "the CPU ladder in f32 at 2048^3, naive loop to all cores, beside OpenBLAS on one and on "
                         "all threads",
              .backend = "cpu",
              .dtypes = {"f32"},
              .sizes = {"2048"}},
        Suite{.name = "cpu_f64",
              .purpose = "the CPU ladder in f64 at 1024^3",
              .backend = "cpu",
              .dtypes = {"f64"},
              .sizes = {"1024"}},
        Suite{.name = "gpu_short",
              .purpose = "make run's GPU part: the best SIMT rung in f32, mma.sync and the persistent and cluster "
                         "wgmma kernels in bf16, each beside cuBLAS (a couple of minutes)",
              .backend = "cuda",
              .rungs = {"k16_warptiled", "k21_mma_sync", "k32_wgmma_persistent", "k35_wgmma_cluster_multicast",
                        "vendor"},
              .dtypes = {"f32", "bf16"},
              .sizes = {"2048", "4096"}},
        Suite{.name = "gpu_ladder",
              .purpose = "every CUDA rung in every type it takes at 4096^3: the README's ladder table",
              .backend = "cuda",
              .dtypes = {"all"},
              .sizes = {"4096"}},
        Suite{.name = "fp4",
              .purpose = "the FP4 emulation (e2m1, mxfp4) against the f16 mma.sync rung it is built on",
              .backend = "cuda",
              .rungs = {"k21_mma_sync", "k24_mma_sync_fp4"},
              .dtypes = {"f16", "e2m1", "mxfp4"},
              .sizes = {"4096", "8192"},
              .warmup_s = kSweepWarmupSeconds,
              .min_time_s = kSweepMinSeconds},
        Suite{.name = "splitk",
              .purpose = "split K on the skinny shapes where whole-tile rungs leave SMs idle, against cuBLAS",
              .backend = "cuda",
              .rungs = {"k32_wgmma_persistent", "k35_wgmma_cluster_multicast", "k37_wgmma_splitk", "vendor"},
              .dtypes = {"bf16", "e4m3"},
              .sizes = {"16x4096x4096", "128x7168x16384", "64x8192x8192", "8192x8192x1024", "4096", "17x33x8192",
                        "65x300x2048"},
              .warmup_s = kSweepWarmupSeconds,
              .min_time_s = kSweepMinSeconds},
        Suite{.name = "bench",
              .purpose = "the Hopper rungs against cuBLAS on square sizes 512^3 to 8192^3",
              .backend = "cuda",
              .rungs = {"hopper", "vendor"},
              .dtypes = {"bf16", "e4m3"},
              .sizes = {"512", "1024", "2048", "4096", "8192"},
              .warmup_s = kSweepWarmupSeconds,
              .min_time_s = kSweepMinSeconds},
        Suite{.name = "bench_llm",
              .purpose = "the Hopper rungs against cuBLAS at 16384^3 and on LLM shapes",
              .backend = "cuda",
              .rungs = {"hopper", "vendor"},
              .dtypes = {"bf16", "e4m3"},
              .sizes = {"16384", "4096x11008x4096", "8192x8192x1024", "16x4096x4096", "128x7168x16384"},
              .warmup_s = kSweepWarmupSeconds,
              .min_time_s = kSweepMinSeconds},
    };
    return suites;
}

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

std::vector<Backend> backends_of(std::string_view backend) {
    if (backend == "cpu") return {Backend::cpu};
    if (backend == "cuda") return {Backend::cuda};
    if (backend == "all") return {Backend::cpu, Backend::cuda};
    return {};
}

}  // namespace

std::span<const Suite> suite_table() { return table(); }

const Suite* find_suite(std::string_view name) {
    for (const Suite& s : table())
        if (s.name == name) return &s;
    return nullptr;
}

std::string suite_options_text(const Suite& s) {
    std::string out = "--backend " + std::string(s.backend);
    const auto list = [&](const char* option, const std::vector<std::string>& values) {
        if (values.empty()) return;
        out += std::string(" ") + option;
        for (const auto& v : values) out += " " + v;
    };
    list("--rungs", s.rungs);
    list("--dtype", s.dtypes);
    list("--sizes", s.sizes);
    if (s.warmup_s) out += " --warmup " + seconds_text(*s.warmup_s);
    if (s.min_time_s) out += " --min-time " + seconds_text(*s.min_time_s);
    return out;
}

SuiteCheck check_suite(const Suite& s, std::span<const Rung* const> registry) {
    SuiteCheck c;
    const auto problem = [&](const std::string& what) { c.problems.push_back(what); };
    const std::vector<Backend> backends = backends_of(s.backend);
    if (backends.empty()) problem("backend '" + std::string(s.backend) + "' is not cpu, cuda or all");

    if (s.sizes.empty()) problem("names no size");
    std::vector<std::string> shapes;
    for (const auto& text : s.sizes) {
        try {
            const std::string shape = parse_shape(text).str();
            if (std::find(shapes.begin(), shapes.end(), shape) != shapes.end())
                problem("size " + text + " repeats " + shape);
            shapes.push_back(shape);
        } catch (const std::invalid_argument& e) {
            problem(e.what());
        }
    }
    for (const auto& [what, v] : {std::pair{"warm-up", s.warmup_s}, std::pair{"minimum time", s.min_time_s}})
        if (v && !(std::isfinite(*v) && *v >= 0 && *v <= kMaxMeasureSeconds))
            problem(std::string(what) + " " + seconds_text(*v) + " s is outside 0 to " +
                    seconds_text(kMaxMeasureSeconds) + " s");

    const bool all_types = std::find(s.dtypes.begin(), s.dtypes.end(), "all") != s.dtypes.end();
    if (s.dtypes.empty()) problem("names no type (the types, or all)");
    if (all_types && s.dtypes.size() > 1) problem("names all beside other types");
    std::uint32_t types = 0;
    for (const auto& d : s.dtypes) {
        if (d == "all") continue;
        const auto t = parse_dtype(d);
        if (!t)
            problem("type '" + d + "' is not a type");
        else if (types & dtype_bit(*t))
            problem("type " + d + " repeats");
        else
            types |= dtype_bit(*t);
    }

    std::vector<const Rung*> own;  // the rungs of the suite's backends
    for (const Rung* r : registry)
        if (std::find(backends.begin(), backends.end(), r->backend) != backends.end()) own.push_back(r);
    if (own.empty()) {
        c.checked_rungs = false;
        return c;
    }
    const auto takes = [&](const Rung* r) { return all_types || (r->dtypes & types) != 0; };
    for (const auto& f : s.rungs) {
        const std::vector<std::string> one{f};
        const auto named = [&](const Rung* r) { return rung_selected(*r, one); };
        if (std::none_of(own.begin(), own.end(), named))
            problem("'" + f + "' is no " + std::string(s.backend) + " rung or group");
        else if (std::none_of(own.begin(), own.end(), [&](const Rung* r) { return named(r) && takes(r); }))
            problem("'" + f + "' takes none of the suite's types");
    }
    std::vector<const Rung*> selected;
    for (const Rung* r : own)
        if (rung_selected(*r, s.rungs)) selected.push_back(r);
    if (all_types && selected.empty()) problem("selects no rung");
    for (const auto& info : dtype_table())
        if ((types & dtype_bit(info.type)) &&
            std::none_of(selected.begin(), selected.end(), [&](const Rung* r) { return r->dtypes & dtype_bit(info.type); }))
            problem("no selected rung takes type " + std::string(info.name));
    return c;
}

}  // namespace rigel
