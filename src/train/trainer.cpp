// The training loop and the host reference backend (trainer.hpp).
#include "train/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "core/hash.hpp"
#include "dist/partition.hpp"
#include "train/checkpoint.hpp"
#include "train/gpt2_reference.hpp"

namespace rigel::train {
namespace {

// ZeRO stage 1 on host vectors: `x`'s shards, each up to date on its own
// rank, gathered in place (padded to world x shard_step for the all-gather).
void gather_shards(std::vector<float>& x, GradientSync& sync) {
    const std::size_t step = dist::shard_step(x.size(), sync.world(), TrainOptions::kShardAlign);
    std::vector<float> padded(step * static_cast<std::size_t>(sync.world()), 0.0f);
    std::copy(x.begin(), x.end(), padded.begin());
    sync.gather(padded.data(), step * sizeof(float), nullptr);
    std::copy(padded.begin(), padded.begin() + static_cast<std::ptrdiff_t>(x.size()), x.begin());
}

class ReferenceBackend final : public TrainBackend {
public:
    explicit ReferenceBackend(const Gpt2Config& c) : config_(c), mask_(decay_mask(c)) {}
    std::string name() const override { return "reference (float64 on the host)"; }
    void load(const ModelState& s) override { state_ = s; }
    ModelState save() override {
        if (sharded_) {  // the moments of the other ranks' shards (the weights are gathered every step)
            gather_shards(state_.m, *sharded_);
            gather_shards(state_.v, *sharded_);
        }
        return state_;
    }

    StepStats step(std::span<const Batch> micro, double lr, std::int64_t t, const TrainOptions& o) override {
        const std::vector<double> params(state_.params.begin(), state_.params.end());
        std::vector<double> sum(params.size(), 0.0), grads;
        StepStats st;
        const double count = static_cast<double>(micro.size()) * o.world();  // every rank's micro-batches
        for (const Batch& b : micro) {
            st.loss += ref::loss(config_, params, b.inputs, b.targets, o.batch, o.seq, &grads) / count;
            for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += grads[i] / count;
        }
        std::vector<float> g(sum.begin(), sum.end());
        if (o.sync) {
            o.sync->sum(g.data(), g.size(), nullptr);
            float loss = static_cast<float>(st.loss);
            o.sync->sum(&loss, 1, nullptr);
            st.loss = loss;
        }
        st.grad_norm = global_norm(g);
        const double scale = clip_factor(st.grad_norm, o.clip);
        if (o.sync && o.shard_optimizer) {  // ZeRO stage 1: this rank's shard, then every rank's weights
            sharded_ = o.sync;
            const dist::Range r = dist::shard(g.size(), o.world(), o.rank(), TrainOptions::kShardAlign);
            const auto part = [&](auto& x) { return std::span(x).subspan(r.begin, r.size()); };
            adamw_step(part(state_.params), part(g), part(state_.m), part(state_.v), part(mask_), o.adamw, lr, t,
                       scale);
            gather_shards(state_.params, *o.sync);
        } else {
            adamw_step(state_.params, g, state_.m, state_.v, mask_, o.adamw, lr, t, scale);
        }
        return st;
    }

    double eval_loss(const Batch& b, const TrainOptions& o) override {
        const std::vector<double> params(state_.params.begin(), state_.params.end());
        return ref::loss(config_, params, b.inputs, b.targets, o.batch, o.seq);
    }

private:
    Gpt2Config config_;
    std::vector<std::uint8_t> mask_;
    ModelState state_;
    GradientSync* sharded_ = nullptr;  // set by a step with a sharded optimizer: save() gathers
};

// A number as JSON text that reads back to the same double.
std::string exact(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return text;
}

// The options a checkpoint records, as text (JSON), and compares on resume
// character for character: a run continues only with the schedule, the
// optimizer's settings, the batch shape, the seed and the training tokens it
// started with, since any other would not end where one uninterrupted run
// ends. Left out: what may differ between the pieces of one run (where it
// stops, how often it checkpoints and validates, the validation file,
// profiling), and the train file's folder (a run may move); its name, token
// count and a hash of its tokens say whether it is the same data.
std::string options_text(const TrainOptions& o, const TokenFile& train_tokens) {
    const std::uint64_t tokens_hash =
        hash64(train_tokens.tokens.data(), train_tokens.tokens.size() * sizeof(std::uint16_t));
    char hash_hex[17];
    std::snprintf(hash_hex, sizeof hash_hex, "%016" PRIx64, tokens_hash);
    // The accumulation over all ranks: a run resumes with any number of ranks
    // that keeps the global batch (world x accumulation).
    return "{\"train_file\": \"" + o.train_file.filename().string() +
           "\", \"train_tokens\": " + std::to_string(train_tokens.tokens.size()) + ", \"train_hash\": \"" + hash_hex +
           "\", \"batch\": " + std::to_string(o.batch) + ", \"seq\": " + std::to_string(o.seq) +
           ", \"accumulation\": " + std::to_string(o.accumulation * o.world()) + ", \"seed\": " + std::to_string(o.seed) +
           ", \"steps\": " + std::to_string(o.steps) + ", \"lr\": " + exact(o.lr) +
           ", \"warmup\": " + std::to_string(o.warmup) + ", \"final_lr_fraction\": " + exact(o.final_lr_fraction) +
           ", \"clip\": " + exact(o.clip) + ", \"beta1\": " + exact(o.adamw.beta1) + ", \"beta2\": " +
           exact(o.adamw.beta2) + ", \"eps\": " + exact(o.adamw.eps) + ", \"weight_decay\": " +
           exact(o.adamw.weight_decay) + "}";
}

// The validation loss on the same batches at every evaluation: those of a
// copy of `start`, a loader at the validation file's first batch.
double validation_loss(const TrainOptions& o, const DataLoader& start, TrainBackend& backend) {
    DataLoader loader = start;
    double sum = 0;
    for (int i = 0; i < o.val_batches; ++i) sum += backend.eval_loss(loader.next_batch(), o);
    return sum / o.val_batches;
}

// Empty when a file can be made in `folder`, else why not: a file is created
// there (O_CREAT | O_EXCL, under a name no other process or rank takes) and
// removed at once, so that a run finds out now, not at its first checkpoint,
// that the folder is read-only or not its own.
std::string probe_writable(const std::filesystem::path& folder) {
    std::string name = (folder / ".rigel_write_probe.XXXXXX").string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) return std::strerror(errno);
    ::close(fd);
    ::unlink(name.c_str());
    return {};
}

}  // namespace

std::string check(const TrainOptions& o) {
    if (const std::string why = check(o.model); !why.empty()) return why;
    if (o.batch < 1 || o.seq < 1 || o.accumulation < 1) return "batch, sequence length and accumulation must be at least 1";
    if (o.seq > o.model.max_seq_len)
        return "a sequence of " + std::to_string(o.seq) + " tokens exceeds the model's context of " +
               std::to_string(o.model.max_seq_len);
    if (o.steps < 1) return "steps must be at least 1";
    if (!(o.lr > 0) || !std::isfinite(o.lr)) return "the learning rate must be finite and positive";
    if (o.warmup < 0 || o.checkpoint_every < 0 || o.val_every < 0 || o.stop_after < 0 || !(o.max_seconds >= 0))
        return "warm-up, intervals and limits cannot be negative";
    if (o.val_batches < 1) return "validation needs at least 1 batch";
    if ((o.resume || o.init_only) && o.checkpoint.empty()) return "resuming and --init-only need a checkpoint file";
    if (o.resume && o.init_only) return "--init-only starts a run; it cannot resume one";
    return {};
}

std::unique_ptr<TrainBackend> make_reference_backend(const Gpt2Config& c) {
    return std::make_unique<ReferenceBackend>(c);
}

ModelState train(const TrainOptions& o, TrainBackend& backend, const std::function<void(const StepLog&)>& on_step) {
    if (const std::string why = check(o); !why.empty()) throw std::invalid_argument(why);
    TokenFile train_tokens = read_token_file(o.train_file, o.model.vocab_size);
    const std::string options = options_text(o, train_tokens);
    // The validation loader, made now: a file too short for one batch is
    // refused before the first step, not at the first validation.
    std::optional<DataLoader> val;
    if (!o.val_file.empty()) val.emplace(read_token_file(o.val_file, o.model.vocab_size), o.batch, o.seq);

    // The checkpoint's folder, made now and probed: a run must not find out at
    // its first checkpoint that it cannot write. A fresh run never writes over
    // a checkpoint. Every rank checks (they see the same files), and with
    // several the ranks decide together, so that none goes on alone into the
    // first step's sum, and none writes before every one has looked.
    if (!o.checkpoint.empty()) {
        const std::filesystem::path folder = o.checkpoint.has_parent_path() ? o.checkpoint.parent_path() : ".";
        std::string refusal;
        if (!o.resume) {
            std::error_code ec;
            std::filesystem::create_directories(folder, ec);
            if (ec || !std::filesystem::is_directory(folder))
                refusal = "the checkpoint's folder " + folder.string() + " cannot be made" +
                          (ec ? ": " + ec.message() : std::string());
        }
        // (Resuming from a folder that is not there: load_checkpoint names the missing file.)
        if (refusal.empty() && std::filesystem::is_directory(folder))
            if (const std::string why = probe_writable(folder); !why.empty())
                refusal = "the checkpoint's folder " + folder.string() + " cannot be written: " + why;
        if (refusal.empty() && !o.resume && std::filesystem::exists(o.checkpoint))
            refusal = o.checkpoint.string() + " exists: pass --resume to continue it, or name another file";
        if (o.sync && o.sync->any(!refusal.empty()) && refusal.empty())
            refusal = "another rank refused to start with the checkpoint " + o.checkpoint.string();
        if (!refusal.empty()) throw std::invalid_argument(refusal);
    }

    // The starting state: a checkpoint's, or GPT-2's initialization.
    std::int64_t done = 0;
    LoaderState loader_state{};
    ModelState state;
    if (o.resume) {
        Checkpoint c = load_checkpoint(o.checkpoint);
        if (const std::string why = check_compatible(c, o.model); !why.empty())
            throw std::invalid_argument(o.checkpoint.string() + ": " + why);
        if (c.options != options)
            throw std::invalid_argument(o.checkpoint.string() + " was written by a run with other options (" +
                                        c.options + "), not " + options);
        if (c.step >= (o.stop_after > 0 ? std::min(o.stop_after, o.steps) : o.steps))
            throw std::invalid_argument(o.checkpoint.string() + " is at step " + std::to_string(c.step) +
                                        ": nothing left of " + std::to_string(o.steps) + " steps");
        done = c.step;
        loader_state = c.loader;
        state = {std::move(c.parameters), std::move(c.first_moment), std::move(c.second_moment)};
    } else {
        const std::vector<double> init = ref::init_params(o.model, o.seed);
        state.params.assign(init.begin(), init.end());
        state.m.assign(state.params.size(), 0.0f);
        state.v.assign(state.params.size(), 0.0f);
    }
    DataLoader loader(std::move(train_tokens), o.batch, o.seq, loader_state);
    backend.load(state);

    const auto write_checkpoint = [&](std::int64_t step) {
        if (o.checkpoint.empty()) return false;
        // A sharded optimizer's save() gathers from every rank: all call it, rank 0 writes.
        if (o.rank() != 0 && !(o.sync && o.shard_optimizer)) return false;
        ModelState s = backend.save();
        if (o.rank() != 0) return false;
        save_checkpoint(o.checkpoint, Checkpoint{.config = o.model,
                                                 .step = step,
                                                 .parameters = std::move(s.params),
                                                 .first_moment = std::move(s.m),
                                                 .second_moment = std::move(s.v),
                                                 .loader = loader.state(),
                                                 .rng = {},
                                                 .options = options});
        return true;
    };
    if (o.init_only) {
        write_checkpoint(0);
        return state;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t end = o.stop_after > 0 ? std::min(o.stop_after, o.steps) : o.steps;
    for (std::int64_t step = done + 1; step <= end; ++step) {
        const auto t0 = std::chrono::steady_clock::now();
        // Every rank reads the step's world x accumulation batches and keeps its own share.
        std::vector<Batch> micro;
        for (int i = 0; i < o.accumulation * o.world(); ++i) {
            Batch b = loader.next_batch();
            if (i % o.world() == o.rank()) micro.push_back(std::move(b));
        }
        if (o.profile && step == done + 2) backend.set_profiling(true);  // the first step warms up
        StepLog log{.step = step, .lr = learning_rate(step - 1, o.lr, o.warmup, o.steps, o.final_lr_fraction)};
        const StepStats st = backend.step(micro, log.lr, step, o);
        log.loss = st.loss;
        log.grad_norm = st.grad_norm;
        log.peak_memory = backend.peak_memory_bytes();
        log.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Out of time, or asked to stop. Several ranks stop at the same step (one
        // that stopped alone would leave the others waiting in a sum): they
        // decide together, at every step where either can happen.
        bool stop = (o.max_seconds > 0 && log.elapsed_s >= o.max_seconds) || (o.should_stop && o.should_stop());
        if (o.sync && (o.max_seconds > 0 || o.should_stop)) stop = o.sync->any(stop);
        // The step's time ends after the vote, which waits on the host for the collectives queued before
        // it: with a sharded optimizer the step's AdamW and weight gather, which would otherwise fall
        // between two steps' timings, uncounted.
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        log.tokens_per_s = static_cast<double>(o.batch) * o.seq * o.accumulation * o.world() / seconds;
        log.flops_per_s = training_flops_per_token(o.model, o.seq) * log.tokens_per_s;
        const bool last = step == end || stop;
        if (val && (last || (o.val_every > 0 && step % o.val_every == 0))) {
            log.val_loss = validation_loss(o, *val, backend);
            log.has_val = true;
        }
        if (last || (o.checkpoint_every > 0 && step % o.checkpoint_every == 0)) log.checkpointed = write_checkpoint(step);
        on_step(log);
        if (stop) break;
    }
    return backend.save();
}

}  // namespace rigel::train
