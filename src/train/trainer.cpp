// The training loop and the host reference backend (trainer.hpp).
#include "train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

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

// The options a checkpoint records, as text (JSON), and compares on resume:
// a run continues only with the batch shape and data it started with.
std::string options_text(const TrainOptions& o) {
    // The accumulation over all ranks: a run resumes with any number of ranks
    // that keeps the global batch (world x accumulation).
    return "{\"train_file\": \"" + o.train_file.filename().string() + "\", \"batch\": " + std::to_string(o.batch) +
           ", \"seq\": " + std::to_string(o.seq) + ", \"accumulation\": " + std::to_string(o.accumulation * o.world()) +
           ", \"seed\": " + std::to_string(o.seed) + "}";
}

double validation_loss(const TrainOptions& o, const TokenFile& val, TrainBackend& backend) {
    DataLoader loader(val, o.batch, o.seq);  // the same batches at every evaluation
    double sum = 0;
    for (int i = 0; i < o.val_batches; ++i) sum += backend.eval_loss(loader.next_batch(), o);
    return sum / o.val_batches;
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
    std::optional<TokenFile> val;
    if (!o.val_file.empty()) val = read_token_file(o.val_file, o.model.vocab_size);

    // The starting state: a checkpoint's, or GPT-2's initialization.
    std::int64_t done = 0;
    LoaderState loader_state{};
    ModelState state;
    if (o.resume) {
        Checkpoint c = load_checkpoint(o.checkpoint);
        if (const std::string why = check_compatible(c, o.model); !why.empty())
            throw std::invalid_argument(o.checkpoint.string() + ": " + why);
        if (c.options != options_text(o))
            throw std::invalid_argument(o.checkpoint.string() + " was written by a run with other options (" +
                                        c.options + "), not " + options_text(o));
        if (c.step >= (o.stop_after > 0 ? std::min(o.stop_after, o.steps) : o.steps))
            throw std::invalid_argument(o.checkpoint.string() + " is at step " + std::to_string(c.step) +
                                        ": nothing left of " + std::to_string(o.steps) + " steps");
        done = c.step;
        loader_state = c.loader;
        state = {std::move(c.parameters), std::move(c.first_moment), std::move(c.second_moment)};
    } else {
        // The checkpoint's folder, made now: a run must not find out at its first checkpoint that it cannot write.
        if (!o.checkpoint.empty() && o.checkpoint.has_parent_path()) {
            std::error_code ec;
            std::filesystem::create_directories(o.checkpoint.parent_path(), ec);
            if (ec || !std::filesystem::is_directory(o.checkpoint.parent_path()))
                throw std::invalid_argument("the checkpoint's folder " + o.checkpoint.parent_path().string() +
                                            " cannot be made: " + ec.message());
        }
        if (!o.checkpoint.empty() && o.rank() == 0 && std::filesystem::exists(o.checkpoint))
            throw std::invalid_argument(o.checkpoint.string() + " exists: pass --resume to continue it, or name "
                                        "another file");
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
                                                 .options = options_text(o)});
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
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        log.loss = st.loss;
        log.grad_norm = st.grad_norm;
        log.tokens_per_s = static_cast<double>(o.batch) * o.seq * o.accumulation * o.world() / seconds;
        log.flops_per_s = training_flops_per_token(o.model, o.seq) * log.tokens_per_s;
        log.peak_memory = backend.peak_memory_bytes();
        log.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Several ranks stop at the same step (one that stopped alone would leave the others waiting in a sum).
        bool out_of_time = o.max_seconds > 0 && log.elapsed_s >= o.max_seconds;
        if (o.sync && o.max_seconds > 0) out_of_time = o.sync->any(out_of_time);
        const bool last = step == end || out_of_time;
        if (val && (last || (o.val_every > 0 && step % o.val_every == 0))) {
            log.val_loss = validation_loss(o, *val, backend);
            log.has_val = true;
        }
        if (last || (o.checkpoint_every > 0 && step % o.checkpoint_every == 0)) log.checkpointed = write_checkpoint(step);
        on_step(log);
        if (out_of_time) break;
    }
    return backend.save();
}

}  // namespace rigel::train
