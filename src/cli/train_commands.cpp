// `rigel train`: GPT-2 training.
//   rigel train run --data FILE [...]           the training loop (src/train/trainer.hpp) on the float64
//                                              host reference or on rigel's kernels (--backend cuda)
//   rigel train sample --checkpoint F [...]     text from a checkpoint (temperature, top-k), on the host
//   rigel train check [--seed N] [--out DIR]   each of rigel's own training kernels against float64
//                                              (exit 1 if one fails, 77 without a device)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/device_runs.hpp"
#include "dist/file_sync.hpp"
#include "dist/nccl_sync.hpp"
#include "dist/rendezvous.hpp"
#include "harness/interrupt.hpp"
#include "train/checkpoint.hpp"
#include "train/layer_check.hpp"
#include "train/sampling.hpp"
#include "train/trainer.hpp"

namespace rigel::cli {
namespace {

struct CheckArgs {
    CommonArgs common;
};

const std::vector<std::string>& check_header() {
    static const std::vector<std::string> h{"run_id", "host",  "device",  "kernel", "shape",
                                            "pass",   "err_max_scaled", "checked", "worst"};
    return h;
}

// MFU's denominator: the H200's dense bf16 tensor rate as NVIDIA's data sheet
// states it (989.5 Tflop/s at its boost clock), the convention the field's MFU
// figures use. The probes measure what the card sustains (FINDINGS.md).
constexpr double kH200DenseBf16Flops = 989.5e12;

struct RunArgs {
    std::string data, val, model = "tiny", backend = "reference", checkpoint, out;
    std::string batch = "4", seq = "64", accumulation = "1", steps = "20", stop_after = "0", max_seconds = "0";
    std::string lr = "6e-4", warmup = "0", weight_decay = "0.1", clip = "1.0", seed = "1";
    std::string checkpoint_every = "0", val_every = "0", val_batches = "4";
    bool resume = false, init_only = false, profile = false, shard_optimizer = false, deterministic = false;
    bool split_dgelu = false;
};

// The models `--model` names: GPT-2 small, and a small one the host reference trains in seconds a step.
struct ModelChoice {
    train::Gpt2Config config;
};
ModelChoice model_named(const std::string& name) {
    if (name == "gpt2") return {train::kGpt2Small};
    if (name == "tiny")
        return {train::Gpt2Config{.layers = 2, .heads = 2, .channels = 64, .max_seq_len = 64, .vocab_size = 50257,
                                  .padded_vocab_size = 50304}};
    throw std::invalid_argument("--model '" + name + "' is not tiny or gpt2");
}

std::int64_t parse_count(const std::string& option, const std::string& text, std::int64_t min) {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || v < min || v > std::numeric_limits<std::int32_t>::max())
        throw std::invalid_argument(option + " '" + text + "' is not an integer from " + std::to_string(min) +
                                    " to 2147483647");
    return v;
}

double parse_real(const std::string& option, const std::string& text, double min) {
    double v = 0;
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v) || v < min)
        throw std::invalid_argument(option + " '" + text + "' is not a finite number of at least " + num(min));
    return v;
}

const std::vector<std::string>& profile_header() {
    static const std::vector<std::string> h{"run_id", "host",        "device", "phase",  "kind",
                                            "calls",  "ms_per_step", "share",  "tflops", "steps"};
    return h;
}

// --profile: the backend's phases, the slowest first, as a table and (with
// --out) a CSV of their own.
void report_profile(const std::vector<train::PhaseTime>& phases, const std::string& out, const std::string& name,
                    const std::string& model, std::uint64_t seed, Executor& ex) {
    if (phases.empty()) {
        say("--profile: the backend times nothing (the reference backend has no device phases)");
        return;
    }
    std::vector<train::PhaseTime> sorted = phases;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const train::PhaseTime& a, const train::PhaseTime& b) { return a.seconds > b.seconds; });
    double total = 0;
    for (const train::PhaseTime& p : sorted) total += p.seconds / static_cast<double>(p.steps);
    RunFiles files(out, profile_header(), "train_profile", name, model, seed, ex);
    std::vector<std::vector<std::string>> cells;
    std::printf("%-22s %-9s %5s %12s %7s %9s\n", "phase", "kind", "calls", "ms per step", "share", "Tflop/s");
    for (const train::PhaseTime& p : sorted) {
        const double s = p.seconds / static_cast<double>(p.steps);
        const std::string rate = p.flops > 0 ? num(p.flops / s * 1e-12) : "";
        std::printf("%-22s %-9s %5d %12.3f %6.1f%% %9s\n", p.phase.c_str(), p.kind.c_str(), p.calls, s * 1e3,
                    100 * s / total, rate.c_str());
        const RowContext& x = files.rows();
        cells.push_back({x.run_id, x.host, x.device, p.phase, p.kind, std::to_string(p.calls), num(s * 1e3),
                         num(s / total), rate, std::to_string(p.steps)});
    }
    std::printf("%-22s %-9s %5s %12.3f\n", "total", "", "", total * 1e3);
    JsonObject d;
    d.str("model", model).num("device_ms_per_step", total * 1e3);
    files.write(cells, d, true);
    files.report(cells.size());
}

const std::vector<std::string>& log_header() {
    static const std::vector<std::string> h{"run_id",       "host",      "device",   "step",
                                            "loss",         "val_loss",  "lr",       "grad_norm",
                                            "tokens_per_s", "tflops",    "mfu",      "peak_memory_gb",
                                            "elapsed_s",    "checkpointed"};
    return h;
}

int run_train(const RunArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.out);
    train::TrainOptions o;
    o.model = model_named(a.model).config;
    if (a.backend != "reference" && a.backend != "cuda" && a.backend != "cuda-vendor")
        throw std::invalid_argument("--backend '" + a.backend + "' is not reference, cuda or cuda-vendor");
    const bool on_device = a.backend != "reference";
    if (a.data.empty()) throw std::invalid_argument("--data is required: a token file (scripts/prepare_data.py)");
    o.train_file = a.data;
    o.val_file = a.val;
    o.batch = static_cast<int>(parse_count("--batch", a.batch, 1));
    o.seq = static_cast<int>(parse_count("--seq", a.seq, 1));
    o.accumulation = static_cast<int>(parse_count("--accumulation", a.accumulation, 1));
    o.steps = parse_count("--steps", a.steps, 1);
    o.stop_after = parse_count("--stop-after", a.stop_after, 0);
    o.max_seconds = parse_real("--max-seconds", a.max_seconds, 0);
    o.lr = parse_real("--lr", a.lr, 0);
    o.warmup = parse_count("--warmup", a.warmup, 0);
    o.adamw.weight_decay = parse_real("--weight-decay", a.weight_decay, 0);
    o.clip = parse_real("--clip", a.clip, 0);
    o.seed = parse_seed("--seed", a.seed);
    o.checkpoint = a.checkpoint;
    o.checkpoint_every = parse_count("--checkpoint-every", a.checkpoint_every, 0);
    o.val_every = parse_count("--val-every", a.val_every, 0);
    o.val_batches = static_cast<int>(parse_count("--val-batches", a.val_batches, 1));
    o.resume = a.resume;
    o.init_only = a.init_only;
    o.profile = a.profile;
    o.shard_optimizer = a.shard_optimizer;
    if (a.deterministic && a.backend != "cuda")
        throw std::invalid_argument("--deterministic takes --backend cuda (the reference backend is exact and "
                                    "deterministic as it is; cuda-vendor's cuDNN attention is not)");
    if (a.split_dgelu && a.backend == "reference")
        throw std::invalid_argument("--split-dgelu takes --backend cuda (the reference backend has no fused products)");
    if (const std::string why = train::check(o); !why.empty()) throw std::invalid_argument(why);

    // Several ranks (`rigel launch`): data parallel over NCCL, rank 0 the one
    // that prints, logs and checkpoints.
    const dist::RankInfo rank = dist::rank_from_env();
    if (rank.world > 1 && o.profile) throw std::invalid_argument("--profile times one process: run it without launch");
    // A wrong token file is an error on any machine, before a missing device makes the run a skip.
    (void)train::token_file_size(o.train_file);
    if (!o.val_file.empty()) (void)train::token_file_size(o.val_file);
    std::unique_ptr<Executor> ex =
        on_device ? sm90_device("rigel's training") : make_host_executor();
    // Under `rigel launch` the gradients go through NCCL even on one rank
    // (its sum is the identity), so one GPU exercises the data-parallel path;
    // the reference backend's ranks sum through files in the rendezvous
    // folder (dist/file_sync.hpp), so the path runs on a machine with no GPU.
    if (a.shard_optimizer && rank.rendezvous.empty())
        throw std::invalid_argument("--shard-optimizer shards AdamW's state over the ranks of `rigel launch`");
    std::unique_ptr<train::GradientSync> sync;
    if (!rank.rendezvous.empty()) {
        sync = on_device ? dist::make_nccl_sync(rank) : dist::make_file_sync(rank);
        o.sync = sync.get();
    }
    const bool speaks = rank.rank == 0;
    // A SIGINT or SIGTERM (forwarded by `rigel launch` to every rank) stops
    // the run after the step in progress, validated if due and checkpointed,
    // so that --resume continues it; a second one quits at once.
    install_stop_handlers();
    o.should_stop = stop_requested;
    RunFiles files(speaks ? a.out : std::string(), log_header(), "train_log", "train_" + a.model + "_" + a.backend,
                   a.model, o.seed, *ex);
    auto backend = on_device ? train::make_cuda_backend(o.model, o.batch, o.seq,
                                                        {.vendor = a.backend == "cuda-vendor",
                                                         .deterministic = a.deterministic,
                                                         .split_dgelu = a.split_dgelu})
                                       : train::make_reference_backend(o.model);
    std::vector<std::vector<std::string>> cells;
    std::int64_t last_step = 0, last_checkpoint = 0;
    train::train(o, *backend, [&](const train::StepLog& l) {
        last_step = l.step;
        if (l.checkpointed) last_checkpoint = l.step;
        if (!speaks) return;
        if (cells.empty())  // the files and the checkpoint were accepted
            say("training " + a.model + " (" + std::to_string(train::param_layout(o.model).total) + " parameters) on " +
                backend->name() + (rank.world > 1 ? " x " + std::to_string(rank.world) + " ranks" : "") + ", " +
                std::to_string(static_cast<std::int64_t>(o.batch) * o.seq * o.accumulation * rank.world) +
                " tokens per step");
        std::printf("step %5lld/%lld  loss %.4f%s  lr %.3g  norm %.3f  %.0f tok/s%s%s\n",
                    static_cast<long long>(l.step), static_cast<long long>(o.steps), l.loss,
                    l.has_val ? ("  val " + num(l.val_loss)).c_str() : "", l.lr, l.grad_norm, l.tokens_per_s,
                    l.peak_memory > 0 ? ("  MFU " + num(100 * l.flops_per_s / kH200DenseBf16Flops) + " %  peak " +
                                         num(l.peak_memory / 1e9) + " GB")
                                            .c_str()
                                      : "",
                    l.checkpointed ? "  (checkpoint)" : "");
        std::fflush(stdout);
        const RowContext& x = files.rows();
        const bool device = l.peak_memory > 0;
        cells.push_back({x.run_id, x.host, x.device, std::to_string(l.step), num(l.loss),
                         l.has_val ? num(l.val_loss) : "", num(l.lr), num(l.grad_norm), num(l.tokens_per_s),
                         num(l.flops_per_s * 1e-12), device ? num(l.flops_per_s / kH200DenseBf16Flops) : "",
                         device ? num(l.peak_memory / 1e9) : "", num(l.elapsed_s), l.checkpointed ? "1" : "0"});
        JsonObject d;
        d.str("model", a.model).str("backend", backend->name()).integer("steps", o.steps);
        // Under `rigel launch`: how many ranks the tokens/s count, and where AdamW's state lived.
        d.integer("ranks", rank.world).str("optimizer_state", o.shard_optimizer ? "sharded over the ranks (ZeRO stage 1)"
                                                                                : "replicated");
        // A step's geometry (accumulation per rank: a step reads batch x seq x accumulation tokens on each
        // rank), and whether it ran without atomic sums: what reproduce/scaling_report.py groups runs by.
        d.integer("batch", o.batch).integer("seq", o.seq).integer("accumulation", o.accumulation);
        d.integer("tokens_per_rank_step", static_cast<std::int64_t>(o.batch) * o.seq * o.accumulation);
        d.boolean("deterministic", a.deterministic);
        d.boolean("split_dgelu", a.split_dgelu);
        // Complete only at the schedule's last step: a run stopped before it
        // (--stop-after, --max-seconds, a signal) is a piece that --resume continues.
        files.write(cells, d, l.step == o.steps);
    });
    // Stopped by a signal: the shell's code for it, on every rank, once the files say what was done.
    const int stopped_by = stop_signal();
    if (!speaks) return stopped_by != 0 ? 128 + stopped_by : 0;
    files.report(cells.size());
    if (o.profile && !o.init_only)
        report_profile(backend->phase_times(), a.out, "profile_" + a.model + "_" + a.backend, a.model, o.seed, *ex);
    if (o.init_only) say("wrote the initialization to " + a.checkpoint + " (step 0)");
    if (stopped_by != 0 && !o.init_only && last_step < o.steps)
        say("stopped after step " + std::to_string(last_step) + " of " + std::to_string(o.steps) +
            (last_checkpoint == last_step && last_step > 0 ? "; --resume continues from " + a.checkpoint
                                                           : "; no checkpoint (--checkpoint) to resume from"));
    return stopped_by != 0 ? 128 + stopped_by : 0;
}

struct SampleArgs {
    std::string checkpoint, tokenizer = "data/shakespeare/gpt2.tiktoken", tokens = "64", temperature = "1.0",
                            top_k = "40", seed = "1", backend = "reference";
};

int run_sample(const SampleArgs& a) {
    if (a.checkpoint.empty()) throw std::invalid_argument("--checkpoint is required");
    if (a.backend != "reference" && a.backend != "cuda")
        throw std::invalid_argument("--backend '" + a.backend + "' is not reference or cuda");
    const int count = static_cast<int>(parse_count("--tokens", a.tokens, 1));
    const double temperature = parse_real("--temperature", a.temperature, 0);
    const int top_k = static_cast<int>(parse_count("--top-k", a.top_k, 0));
    rigel::Rng rng(parse_seed("--seed", a.seed));
    const train::Checkpoint c = train::load_checkpoint(a.checkpoint);
    if (const std::string why = train::check(c.config); !why.empty())
        throw std::invalid_argument(a.checkpoint + ": " + why);
    const train::Gpt2Decoder decoder(a.tokenizer);
    const std::string on = a.backend == "cuda" ? "rigel's kernels (bf16 weights)" : "the float64 host reference";
    const auto start = [&] {
        say("sampling " + std::to_string(count) + " tokens from " + a.checkpoint + " (step " + std::to_string(c.step) +
            ") on " + on + ", temperature " + num(temperature) + ", top-k " + std::to_string(top_k));
    };
    std::vector<int> out;
    if (a.backend == "cuda") {
        // One row of the model's whole context, recomputed per token; the
        // tokens after the context's end are padding that causal attention
        // keeps out of the logits read.
        auto ex = sm90_device("rigel train sample --backend cuda");
        const int T = c.config.max_seq_len;
        auto backend = train::make_cuda_backend(c.config, 1, T);
        train::ModelState s;
        s.params = c.parameters, s.m = c.first_moment, s.v = c.second_moment;
        backend->load(s);
        start();
        train::Batch b;
        b.inputs.assign(static_cast<std::size_t>(T), 0);
        b.targets.assign(static_cast<std::size_t>(T), 0);
        const auto next_logits = [&](std::span<const int> context) {
            std::copy(context.begin(), context.end(), b.inputs.begin());
            const std::vector<float> row = backend->logits_at(b, static_cast<int>(context.size()) - 1);
            return std::vector<double>(row.begin(), row.end());
        };
        out = train::generate(next_logits, T, c.config.vocab_size, {train::kEndOfText}, count, temperature, top_k, rng);
    } else {
        const std::vector<double> params(c.parameters.begin(), c.parameters.end());
        start();
        out = train::generate(c.config, params, {train::kEndOfText}, count, temperature, top_k, rng);
    }
    std::printf("%s\n", decoder.decode(out).c_str());
    return 0;
}

int run_check(const CheckArgs& a, const CLI::App& cmd) {
    check_out_option(cmd, a.common.out);
    const std::uint64_t seed = parse_seed("--seed", a.common.seed);
    auto ex = sm90_device("rigel's training kernels");
    RunFiles files(a.common.out, check_header(), "train_check", "train_check", "train_check", seed, *ex);
    const std::vector<train::LayerCheck> checks = train::check_layers(seed);
    std::vector<std::vector<std::string>> cells;
    int failed = 0;
    std::printf("%-40s %-34s %-4s %10s  %s\n", "kernel", "shape", "", "err/allow", "worst");
    for (const train::LayerCheck& c : checks) {
        failed += !c.pass;
        std::printf("%-40s %-34s %-4s %10s  %s\n", c.kernel.c_str(), c.shape.c_str(), c.pass ? "pass" : "FAIL",
                    num(c.err_max_scaled).c_str(), c.worst.c_str());
        const RowContext& x = files.rows();
        cells.push_back({x.run_id, x.host, x.device, c.kernel, c.shape, c.pass ? "1" : "0", num(c.err_max_scaled),
                         std::to_string(c.checked), c.worst});
    }
    JsonObject d;
    d.integer("checks", static_cast<long long>(checks.size())).integer("failed", failed);
    files.write(cells, d, true);
    files.report(cells.size());
    if (failed) {
        say(std::to_string(failed) + " of " + std::to_string(checks.size()) + " training kernel check(s) FAILED");
        return 1;
    }
    say("all " + std::to_string(checks.size()) + " training kernel checks passed");
    return 0;
}

}  // namespace

std::vector<SubcommandHook> add_train_commands(CLI::App& app) {
    static CheckArgs ca;
    static RunArgs ra;
    static SampleArgs sa;
    auto* cmd = app.add_subcommand("train", "GPT-2 training: the loop on rigel's kernels or the float64 reference, "
                                            "sampling, and rigel's training kernels checked");
    cmd->require_subcommand(1);
    auto* run = cmd->add_subcommand("run", "Train a GPT-2 on a token file, checkpointing and resuming");
    run->add_option("--data", ra.data, "training tokens (llm.c's uint16 format; scripts/prepare_data.py)");
    run->add_option("--val", ra.val, "validation tokens (same format)");
    run->add_option("--model", ra.model, "tiny (2 layers, 64 channels) or gpt2 (124M)")->capture_default_str();
    run->add_option("--backend", ra.backend, "reference (float64 on the host) or cuda (rigel's kernels, checked "
                                             "against the reference by `rigel train check`); cuda-vendor, for "
                                             "comparison only: cuBLASLt and cuDNN where they compute the same thing")
        ->capture_default_str();
    run->add_option("--batch", ra.batch, "sequences per micro-batch")->capture_default_str();
    run->add_option("--seq", ra.seq, "tokens per sequence")->capture_default_str();
    run->add_option("--accumulation", ra.accumulation, "micro-batches per step")->capture_default_str();
    run->add_option("--steps", ra.steps, "the schedule's steps")->capture_default_str();
    run->add_option("--stop-after", ra.stop_after, "stop after this step, checkpointed (0: at --steps)")
        ->capture_default_str();
    run->add_option("--max-seconds", ra.max_seconds, "stop after the step that passes this, checkpointed (0: none)")
        ->capture_default_str();
    run->add_option("--lr", ra.lr, "peak learning rate")->capture_default_str();
    run->add_option("--warmup", ra.warmup, "warm-up steps")->capture_default_str();
    run->add_option("--weight-decay", ra.weight_decay, "AdamW's decay, on the matrices")->capture_default_str();
    run->add_option("--clip", ra.clip, "global gradient norm limit (0: none)")->capture_default_str();
    run->add_option("--seed", ra.seed, "initialization seed")->capture_default_str();
    run->add_option("--checkpoint", ra.checkpoint, "checkpoint file (written atomically)");
    run->add_option("--checkpoint-every", ra.checkpoint_every, "steps between checkpoints (0: at the end only)")
        ->capture_default_str();
    run->add_flag("--resume", ra.resume, "continue from --checkpoint");
    run->add_flag("--init-only", ra.init_only, "write the initialization to --checkpoint as step 0 and stop (another "
                                               "program, such as scripts/gpt2_torch.py, can start from it)");
    run->add_option("--val-every", ra.val_every, "steps between validations (0: at the end only)")
        ->capture_default_str();
    run->add_option("--val-batches", ra.val_batches, "batches per validation")->capture_default_str();
    run->add_flag("--shard-optimizer", ra.shard_optimizer,
                  "ZeRO stage 1 under `rigel launch`: each rank keeps AdamW's moments for its shard of the "
                  "parameters only and the ranks gather the updated weights");
    run->add_flag("--deterministic", ra.deterministic,
                  "--backend cuda with no atomic sums in the step (ordered partial sums; attention's backward on "
                  "mma.sync): a run repeats bit for bit, a little slower");
    run->add_flag("--split-dgelu", ra.split_dgelu,
                  "--backend cuda with GELU's backward and its bias gradient in a pass of their own after the MLP's "
                  "dX product (as --deterministic and cuda-vendor run them), not fused into its epilogue: for "
                  "comparison");
    run->add_flag("--profile", ra.profile, "time each phase of the step on the device from the second step on (a "
                                           "synchronization per step) and report them, slowest first");
    run->add_option("--out", ra.out, "folder for the log CSV and its JSON sidecar (none: print only)");
    auto* sample = cmd->add_subcommand("sample", "Text from a checkpoint, after an end-of-text token (on the host: "
                                                 "seconds per token for GPT-2 small)");
    sample->add_option("--checkpoint", sa.checkpoint, "a checkpoint of rigel train run");
    sample->add_option("--tokenizer", sa.tokenizer, "GPT-2's rank file (make data writes it beside the tokens)")
        ->capture_default_str();
    sample->add_option("--tokens", sa.tokens, "tokens to generate")->capture_default_str();
    sample->add_option("--temperature", sa.temperature, "0: always the likeliest token")->capture_default_str();
    sample->add_option("--top-k", sa.top_k, "draw among the k likeliest (0: all)")->capture_default_str();
    sample->add_option("--seed", sa.seed, "the draw's seed")->capture_default_str();
    sample->add_option("--backend", sa.backend, "reference (float64 on the host) or cuda (rigel's kernels)")
        ->capture_default_str();
    auto* check = cmd->add_subcommand("check", "Each of rigel's own training kernels against float64 (exit 1 if one "
                                               "fails)");
    add_common_options(check, ca.common, false);
    return {{run, [run] { return run_train(ra, *run); }},
            {sample, [] { return run_sample(sa); }},
            {check, [check] { return run_check(ca, *check); }}};
}

}  // namespace rigel::cli
