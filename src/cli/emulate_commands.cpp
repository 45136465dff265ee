// `rigel emulate`: a GEMM computed on the CPU exactly as a GPU path computes it
// (src/probes/numerics/emulate.hpp), and, with --against on the H200, set bit
// for bit beside what rigel's GEMM library (library), one of the ladder's
// rungs (k21_mma_sync, k32_wgmma_persistent, ...) or a vendor library (cublas,
// cublaslt) returns for the same bytes.
//   rigel emulate --path wgmma_bf16 --m 1000 --n 1030 --k 1104 [--splits S]
//                 [--against library|RUNG|cublas|cublaslt] [--out DIR]
// Inputs are drawn as the ladder draws them (--recipe, --seed), quantized to
// the path's type; the library computes D = A B^T in fp32 (A M x K row-major,
// B N x K: layout NT), and the emulation follows the split of K the library's
// dispatcher chose for the shape, or the rung's own (cli/emulate_rungs.hpp:
// most chain all of K; k37 splits it by the shape and the SM count). A vendor
// library says nothing of its split (cuBLASLt names one in its algorithm,
// cuBLAS nothing; the ladder's vendor rungs neither): the split is inferred
// from D (emulate::infer), and how many of all of D's elements the inferred
// split reproduces is the finding.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/device_runs.hpp"
#include "cli/emulate_rungs.hpp"
#include "core/hash.hpp"
#include "core/recipe.hpp"
#include "gemm/driver.hpp"
#include "harness/executor.hpp"
#include "ladder/rung.hpp"
#include "probes/numerics/emulate.hpp"
#include "rigel/gemm.hpp"

namespace rigel::cli {
namespace {

struct EmulateArgs {
    std::string path = "wgmma_bf16", m = "1000", n = "1030", k = "1104", splits = "1", recipe = "normal",
                against = "none", shapes;
    CommonArgs common;
};

int parse_dim(const std::string& option, const std::string& text) {
    long long v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || v < 1 || v > 16384)
        throw std::invalid_argument(option + " '" + text + "' is not an integer from 1 to 16384");
    return static_cast<int>(v);
}

const std::vector<std::string>& header() {
    static const std::vector<std::string> h{
        "run_id", "host",     "device",   "path",     "instruction",    "m",       "n",
        "k",      "splits",   "k_tile",   "share",    "reduction",      "recipe",  "seed",
        "elements", "identical", "first_mismatch", "checksum", "sampled", "sample_identical", "algorithm"};
    return h;
}

gemm::Type library_type(DType t) {
    if (t == DType::bf16) return gemm::Type::bf16;
    if (t == DType::f16) return gemm::Type::f16;
    throw std::invalid_argument("the GEMM library's fp8 kernels promote every 128 of K inside each split of K, which "
                                "rigel emulate does not model yet: set the fp8 path against k33_wgmma_fp8, "
                                "k34_wgmma_fp8_promoted or k36_wgmma_fp8_promoted_cluster");
}

// The operand type of a vendor comparison. Refused before anything runs
// (vendor_refusal) where the vendor has no GEMM for it.
gemm::Type vendor_type(DType t) {
    switch (t) {
        case DType::bf16: return gemm::Type::bf16;
        case DType::f16: return gemm::Type::f16;
        case DType::e4m3: return gemm::Type::e4m3;
        case DType::e5m2: return gemm::Type::e5m2;
        default: break;
    }
    throw std::invalid_argument("no vendor GEMM takes " + std::string(name(t)) + " operands");
}

// Empty when `against` (cublas or cublaslt) has a GEMM for the path's
// operands; else one sentence why not. Known without the device, so it is
// said before the device is asked for.
std::string vendor_refusal(const std::string& against, DType t) {
    const bool fp8 = t == DType::e4m3 || t == DType::e5m2;
    if (against == "cublas" && fp8)
        return "--against cublas runs cublasGemmEx, which takes no fp8 operands: set an fp8 path against cublaslt "
               "or a vendor_cublaslt rung";
    if (against == "cublaslt" && t == DType::e5m2)
        return "cuBLASLt documents no e5m2 x e5m2 matmul (its fp8 pairs need an e4m3 operand), so --against "
               "cublaslt has nothing to compare with wgmma_e5m2; --against vendor_cublaslt_e5m2 asks this cuBLASLt";
    return {};
}

// The device's SM count, which k37's split of K depends on, from the facts
// the executor reports (cudaDeviceProp::multiProcessorCount).
int sm_count(const Executor& ex) {
    for (const auto& [key, value] : ex.describe()) {
        if (key != "gpu_sm_count") continue;
        int sms = 0;
        const char* end = value.data() + value.size();
        if (const auto [p, ec] = std::from_chars(value.data(), end, sms); ec == std::errc() && p == end && sms > 0)
            return sms;
    }
    throw std::runtime_error("the device reports no SM count, on which k37_wgmma_splitk's split of K depends");
}

std::uint32_t bits(float v) {
    std::uint32_t u = 0;
    std::memcpy(&u, &v, 4);
    return u;
}

struct Problem {
    int m, n, k;
};

// --shapes "MxNxK,MxNxK,...", or the one --m, --n, --k.
std::vector<Problem> problems_of(const EmulateArgs& a) {
    if (a.shapes.empty()) return {{parse_dim("--m", a.m), parse_dim("--n", a.n), parse_dim("--k", a.k)}};
    std::vector<Problem> out;
    for (const Shape& s : parse_shapes("--shapes", a.shapes, 16384))
        out.push_back({static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k)});
    return out;
}

struct Outcome {
    emulate::KSplit split;
    std::size_t elements = 0, identical = 0;
    std::string first, checksum;
    int sampled = 0, sample_identical = 0;  // a vendor library's: the inference's sample
    std::string algorithm;                  // a vendor library's, as it names it
};

bool is_vendor(const std::string& against) { return against == "cublas" || against == "cublaslt"; }

// A vendor rung of the ladder (vendor_cublaslt_e4m3_fastacc, ...) names no
// split of K either: its split is inferred from D as a vendor library's is.
bool is_vendor_rung(const std::string& against) {
    for (const Rung& r : cuda_rungs())
        if (r.id == against) return r.group == "vendor";
    return false;
}

bool split_inferred(const std::string& against) { return is_vendor(against) || is_vendor_rung(against); }

// The rung `id` of the CUDA ladder, if it takes the path's type with B
// stored N x K (as the emulation reads it); else std::invalid_argument.
const Rung& rung_for(const std::string& id, const emulate::Path& path) {
    for (const Rung& r : cuda_rungs()) {
        if (r.id != id) continue;
        if (r.b_layout != BLayout::n_by_k || (r.dtypes & dtype_bit(path.type)) == 0)
            throw std::invalid_argument("--against " + id + " does not take " + std::string(path.name) +
                                        "'s operands with B stored N x K");
        return r;
    }
    throw std::invalid_argument("--against '" + id + "' is not none, library or a CUDA rung of this build (rigel "
                                "ladder --list)");
}

// One problem: fresh inputs, the emulation, and with `ex` (a device) the
// library's D (against == "library": its split of K then the emulation's
// too), a ladder rung's (K not split) or a vendor library's beside it. A
// vendor's split is not known: emulate::infer() scores every hypothesis on a
// sample of D's elements, and the best is then held to all of D.
Outcome emulate_one(const emulate::Path& p, const Problem& pr, int splits, Recipe recipe, std::uint64_t seed,
                    int threads, Executor* ex, const std::string& against) {
    const emulate::Path* path = &p;
    const int m = pr.m, n = pr.n, k = pr.k;
    const bool compare = ex != nullptr;
    const auto rows_of_k = [&](std::uint64_t stream, int rows) {
        return make_operand(path->type, recipe, seed, stream, static_cast<std::size_t>(rows),
                            static_cast<std::size_t>(k), KAxis::cols);
    };
    const Operand A = rows_of_k(0, m), B = rows_of_k(1, n);

    // A, B and a poisoned fp32 D on the device, `launch` computing D, D back.
    const auto on_device = [&](const auto& launch) {
        DeviceBuffer da(*ex, A.bytes.size()), db(*ex, B.bytes.size()),
            dd(*ex, static_cast<std::size_t>(m) * n * sizeof(float));
        ex->upload(da.get(), A.bytes.data(), A.bytes.size());
        ex->upload(db.get(), B.bytes.data(), B.bytes.size());
        ex->poison(dd.get(), dd.size());
        launch(da.get(), db.get(), dd.get());
        ex->synchronize();
        std::vector<float> out(static_cast<std::size_t>(m) * n);
        ex->download(out.data(), dd.get(), dd.size());
        return out;
    };
    std::vector<float> device;
    emulate::KSplit split{.splits = splits};
    bool from_first = false;  // the partials added from the first (k37), not from zero
    Outcome o;
    if (compare && is_vendor(against)) {
        const gemm::Type t = vendor_type(path->type);
        const gemm::Desc desc{.m = m, .n = n, .k = k, .a_type = t, .b_type = t, .a_op = gemm::Op::n,
                              .b_op = gemm::Op::t,
                              .d_type = gemm::Type::f32};
        const gemm::Contender who = against == "cublas" ? gemm::Contender::cublas : gemm::Contender::cublaslt;
        device = on_device([&](const void* a, const void* b, void* d) {
            o.algorithm = gemm::run_baseline(who, desc, {.a = a, .b = b, .d = d},
                                             static_cast<gemm::Stream>(ex->stream()));
        });
    } else if (compare && against != "library") {
        const Rung& rung = rung_for(against, *path);
        const RungSplit rs = rung_split(against, path->type, m, n, k, against == kSplitKRung ? sm_count(*ex) : 0);
        split = rs.split;
        from_first = rs.from_first;
        device = on_device([&](const void* a, const void* b, void* c) {
            const GemmProblem gp{.type = path->type, .m = m, .n = n, .k = k, .a = a, .b = b, .c = c,
                                 .stream = ex->stream()};
            if (rung.check)
                if (const std::string why = rung.check(gp); !why.empty())
                    throw std::invalid_argument(std::string(rung.id) + " refuses " + std::to_string(m) + " x " +
                                                std::to_string(n) + " x " + std::to_string(k) + ": " + why);
            rung.run(gp);
        });
        if (rung.group == "vendor") o.algorithm = "the first algorithm of cuBLASLt's heuristic (the rung's choice)";
    } else if (compare) {
        const gemm::Desc desc{.m = m, .n = n, .k = k, .a_type = library_type(path->type),
                              .b_type = library_type(path->type), .a_op = gemm::Op::n, .b_op = gemm::Op::t,
                              .d_type = gemm::Type::f32};
        gemm::Plan plan(desc);
        split = {.splits = plan.choice().splits};
        device = on_device([&](const void* a, const void* b, void* d) {
            plan.run({.a = a, .b = b, .d = d}, static_cast<gemm::Stream>(ex->stream()));
        });
    }
    if (compare && split_inferred(against)) {
        const emulate::Path* const candidates[] = {path};
        // Up to a split per 16 of K (at most 256): a promotion every k-tile is a split of its own.
        const int max_splits = std::max(2, std::min(256, (k + 15) / 16));
        const auto fits =
            emulate::infer(candidates, A.values, B.values, m, n, k, device, 256, seed, max_splits, threads);
        split = fits.front().split;
        o.sampled = fits.front().sampled;
        o.sample_identical = fits.front().identical;
    }
    std::vector<float> d = emulate::gemm(*path, A.values, B.values, m, n, k, split, threads);
    if (from_first) sum_from_first(*path, A.values, B.values, m, n, k, split, d);

    // D's bits hashed as the ladder hashes its outputs.
    const std::uint64_t checksum = hash64(d.data(), d.size() * sizeof(float));
    std::size_t identical = 0;
    std::string first;
    for (std::size_t i = 0; compare && i < d.size(); ++i) {
        if (bits(d[i]) == bits(device[i])) {
            ++identical;
        } else if (first.empty()) {
            char text[160];
            std::snprintf(text, sizeof text, "D[%zu][%zu]: device %.9g, emulated %.9g", i / n, i % n,
                          static_cast<double>(device[i]), static_cast<double>(d[i]));
            first = text;
        }
    }
    char sum_text[32];
    std::snprintf(sum_text, sizeof sum_text, "%016llx", static_cast<unsigned long long>(checksum));
    o.split = split;
    o.elements = d.size();
    o.identical = identical;
    o.first = first;
    o.checksum = sum_text;
    return o;
}

int run_emulate(const EmulateArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.common.out);
    const emulate::Path* path = emulate::path_named(a.path);
    if (!path) throw std::invalid_argument("--path '" + a.path + "' is not one of " + emulate::path_names());
    if (a.against == "library") library_type(path->type);  // refused before anything runs
    if (is_vendor(a.against))
        if (const std::string why = vendor_refusal(a.against, path->type); !why.empty())
            throw std::invalid_argument(why);
    const std::vector<Problem> problems = problems_of(a);
    const int splits = parse_dim("--splits", a.splits);
    const auto recipe = parse_recipe(a.recipe);
    if (!recipe) throw std::invalid_argument("--recipe '" + a.recipe + "' is not a recipe");

    const std::uint64_t seed = parse_seed("--seed", a.common.seed);
    const int threads = parse_threads("--threads", a.common.threads);
    const bool compare = a.against != "none";
    // A rung is refused before anything runs, and, in a build with CUDA rungs, before a missing device
    // makes the run a skip (a build without CUDA knows no rung, and says why it cannot run instead).
    const bool names_rung = compare && a.against != "library" && !is_vendor(a.against);
    if (names_rung && !cuda_rungs().empty()) rung_for(a.against, *path);
    std::unique_ptr<Executor> ex = compare ? sm90_device("rigel emulate --against " + a.against) : make_host_executor();

    if (!path->measured)
        say(std::string(path->name) + "'s model is " + std::string(path->model_source) +
            ", not yet measured bit-identical on the device: a comparison here is its test");
    // The comparison in the name: runs of one path against the library and a rung share a folder.
    const std::string stem = "emulate_" + std::string(path->name) + (compare ? "_" + a.against : "");
    RunFiles files(a.common.out, header(), "emulate", stem, std::string(path->name), seed, *ex);
    std::vector<std::vector<std::string>> cells;
    bool all_identical = true;
    for (std::size_t i = 0; i < problems.size(); ++i) {
        const Problem& pr = problems[i];
        const std::uint64_t problem_seed = seed + i;  // fresh inputs per problem
        const Outcome o =
            emulate_one(*path, pr, splits, *recipe, problem_seed, threads, compare ? ex.get() : nullptr, a.against);
        const std::string shape = std::to_string(pr.m) + " x " + std::to_string(pr.n) + " x " + std::to_string(pr.k);
        const std::string inferred =
            split_inferred(a.against) ? " (inferred: the best of the hypotheses on " + std::to_string(o.sample_identical) +
                                       "/" + std::to_string(o.sampled) + " sampled elements; " + a.against + " ran " +
                                       o.algorithm + ")"
                                 : "";
        say(std::string(path->name) + " " + shape + ", " + emulate::describe(o.split) + inferred + ": " +
            (compare ? std::to_string(o.identical) + "/" + std::to_string(o.elements) + " bit-identical to " +
                           (a.against == "library" ? std::string("the library's") : a.against + "'s")
                     : "D's checksum " + o.checksum) +
            (o.first.empty() ? "" : "; first difference " + o.first));
        all_identical = all_identical && o.identical == o.elements;
        const RowContext& x = files.rows();
        cells.push_back({x.run_id, x.host, x.device, std::string(path->name), std::string(path->instruction),
                         std::to_string(pr.m), std::to_string(pr.n), std::to_string(pr.k),
                         std::to_string(o.split.splits), std::to_string(o.split.k_tile),
                         o.split.share == emulate::Share::floor ? "floor" : "ceil",
                         o.split.reduction == emulate::Reduction::serial ? "serial" : "pairwise", a.recipe,
                         std::to_string(problem_seed), std::to_string(o.elements),
                         compare ? std::to_string(o.identical) : "", o.first, o.checksum,
                         o.sampled ? std::to_string(o.sampled) : "",
                         o.sampled ? std::to_string(o.sample_identical) : "", o.algorithm});
        JsonObject side;
        side.str("path", std::string(path->name)).str("instruction", std::string(path->instruction))
            .str("against", a.against).str("model", std::string(path->model_source))
            .str("model_measured", path->measured ? "yes" : "no");
        files.write(cells, side, i + 1 == problems.size());
    }
    files.report(cells.size());
    // rigel's own kernels are held to the model (exit 1 on a difference); a
    // vendor's match is what the inference found, reported, not asserted.
    return compare && !split_inferred(a.against) && !all_identical ? 1 : 0;
}

}  // namespace

std::vector<SubcommandHook> add_emulate_commands(CLI::App& app) {
    static EmulateArgs ea;
    auto* cmd = app.add_subcommand("emulate", "A GEMM on the CPU exactly as a GPU path computes it (the measured "
                                              "tensor-core model), optionally beside the GEMM library's bits");
    cmd->add_option("--path", ea.path, "the path: " + emulate::path_names())->capture_default_str();
    cmd->add_option("--m", ea.m, "rows of D")->capture_default_str();
    cmd->add_option("--n", ea.n, "columns of D")->capture_default_str();
    cmd->add_option("--k", ea.k, "the inner dimension")->capture_default_str();
    cmd->add_option("--shapes", ea.shapes, "several problems, MxNxK,MxNxK,... (each with fresh inputs: seed, seed + "
                                            "1, ...), one CSV row each");
    cmd->add_option("--splits", ea.splits, "K split this many ways (with --against library: the library's choice)")
        ->capture_default_str();
    cmd->add_option("--recipe", ea.recipe, "the inputs' distribution (uniform, normal, small_int, hostile)")
        ->capture_default_str();
    cmd->add_option("--against", ea.against, "none; library (the GEMM library, fp32 D, layout NT); a CUDA rung "
                                              "of the ladder taking B as N x K (k21_mma_sync, k32_wgmma_persistent, "
                                              "...); or cublas / cublaslt (the split of K inferred from D): run it on "
                                              "the device and compare bit for bit (exit 1 on any difference from "
                                              "rigel's own kernels; a vendor's count is reported)")
        ->capture_default_str();
    add_common_options(cmd, ea.common, false);
    return {{cmd, [cmd] { return run_emulate(ea, *cmd); }}};
}

}  // namespace rigel::cli
