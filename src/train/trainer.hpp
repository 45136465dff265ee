// The training loop of `rigel train run`, apart from where the model
// computes: data (token files, a resumable loader), the learning-rate
// schedule, gradient accumulation and clipping, AdamW, validation, logging and
// checkpoints that resume bit for bit. The model's step is a TrainBackend:
// the float64 host reference (make_reference_backend, for small models and
// for the tests that pin the loop down) or, on the device, rigel's kernels.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/gpt2.hpp"
#include "train/optimizer.hpp"
#include "train/token_file.hpp"

namespace rigel::train {

// Data parallelism (one process per GPU, `rigel launch`): what a step needs
// from the other ranks. Each rank takes every world-th of the step's
// world x accumulation micro-batches, so N ranks see exactly the batches one
// process sees with N times the accumulation; their gradients are summed here
// before the norm, and every rank then takes the same AdamW step on the same
// state (no broadcast needed). src/cuda/dist: NCCL's; the host tests: threads.
class GradientSync {
public:
    virtual ~GradientSync() = default;
    virtual int world() const = 0;
    virtual int rank() const = 0;
    // Sums n floats over the ranks, in place; every rank gets the sum. The
    // memory is the backend's own kind (the device backend's: device memory,
    // on its stream, which `stream` names; the reference backend's: host).
    virtual void sum(float* data, std::size_t n, void* stream) = 0;
    // One bucket: several tensors summed as one operation where the transport
    // can (NCCL: one group, one launch, instead of a small all-reduce per
    // tensor); by default one sum() each.
    struct Tensor {
        float* data;
        std::size_t n;
    };
    virtual void sum_bucket(std::span<const Tensor> tensors, void* stream) {
        for (const Tensor& t : tensors) sum(t.data, t.n, stream);
    }
    // All-gather in place: rank r's `bytes_per_rank` bytes at data + r x
    // bytes_per_rank reach every rank (ZeRO stage 1's updated shards).
    virtual void gather(void* data, std::size_t bytes_per_rank, void* stream) = 0;
    // True on every rank when `local` is true on any (host values; blocks):
    // a decision the ranks must take together, such as stopping at
    // --max-seconds, which each rank's own clock would otherwise decide apart.
    virtual bool any(bool local) = 0;
};

struct TrainOptions {
    std::filesystem::path train_file, val_file;  // val_file empty: no validation
    Gpt2Config model{};
    int batch = 4, seq = 64, accumulation = 1;  // tokens per step: batch x seq x accumulation
    std::int64_t steps = 10;           // the schedule's length
    std::int64_t stop_after = 0;       // stop (checkpointed) after this step; 0: at `steps`
    double max_seconds = 0;            // stop (checkpointed) after the step that passes this; 0: no limit
    // Asked after each step; true stops there, validated if due and
    // checkpointed, as --max-seconds does (`rigel train run`: a SIGINT or
    // SIGTERM arrived). With sync, set it on every rank or on none: the ranks
    // decide together, and one asked to stop stops them all.
    std::function<bool()> should_stop;
    double lr = 6e-4, final_lr_fraction = 0.1, clip = 1.0;
    std::int64_t warmup = 0;
    AdamWSettings adamw{};
    std::uint64_t seed = 1;                  // the initialization's
    std::filesystem::path checkpoint;        // empty: none written
    std::int64_t checkpoint_every = 0;       // and at the end; 0: only at the end
    bool resume = false;                     // continue from `checkpoint`
    bool init_only = false;                  // write the initialization to `checkpoint` as step 0, and stop
    std::int64_t val_every = 0;              // and at the end; 0: only at the end
    int val_batches = 4;
    bool profile = false;  // the backend times its phases from the second step on (TrainBackend::phase_times)
    GradientSync* sync = nullptr;  // several ranks; null: one process
    // ZeRO stage 1 (with sync): each rank keeps AdamW's state for its shard of
    // the parameters only (dist::shard), updates that shard, and the ranks
    // gather the updated weights; a checkpoint gathers the whole state.
    bool shard_optimizer = false;
    static constexpr std::size_t kShardAlign = 8;  // elements: 32 bytes of fp32, 16 of bf16
    int world() const { return sync ? sync->world() : 1; }
    int rank() const { return sync ? sync->rank() : 0; }
};

// Empty when the options make sense together, else one sentence.
std::string check(const TrainOptions& o);

// The model's state between steps: fp32 master weights and AdamW's moments.
struct ModelState {
    std::vector<float> params, m, v;
};

// Where the device's time goes in a step: one phase (a GEMM product, the
// attention, LayerNorm, AdamW, ...), summed over the profiled steps.
struct PhaseTime {
    std::string phase, kind;  // kind: gemm, attention or other
    double seconds = 0;       // over all profiled steps
    double flops = 0;         // per step (0 where not counted)
    int calls = 0;            // spans per step
    std::int64_t steps = 0;
};

struct StepStats {
    double loss = 0;       // mean over the step's micro-batches
    double grad_norm = 0;  // before clipping
};

class TrainBackend {
public:
    virtual ~TrainBackend() = default;
    virtual std::string name() const = 0;
    virtual void load(const ModelState& s) = 0;
    // The whole state. With a sharded optimizer (TrainOptions::shard_optimizer)
    // it gathers the shards: every rank must call it.
    virtual ModelState save() = 0;
    // Forward and backward over the micro-batches (gradients averaged over
    // all ranks' micro-batches: o.sync sums them), the global norm, clipping
    // to `clip`, then AdamW step t at `lr`. The loss is the mean over all ranks.
    virtual StepStats step(std::span<const Batch> micro, double lr, std::int64_t t, const TrainOptions& o) = 0;
    virtual double eval_loss(const Batch& b, const TrainOptions& o) = 0;
    // The forward pass alone over batch `b` (B x T tokens, as built): the
    // logits (padded vocabulary) of token `position` of row 0. For sampling.
    virtual std::vector<float> logits_at(const Batch& b, int position) {
        (void)b, (void)position;
        throw std::invalid_argument("the " + name() + " backend does not give logits");
    }
    // The most device memory in use so far, in bytes (0: not on a device).
    virtual double peak_memory_bytes() const { return 0; }
    // Times the phases of the steps that follow (a backend that cannot: nothing).
    virtual void set_profiling(bool) {}
    virtual std::vector<PhaseTime> phase_times() const { return {}; }
};

// The float64 reference model (gpt2_reference.hpp) with the host AdamW: slow,
// exact and deterministic.
std::unique_ptr<TrainBackend> make_reference_backend(const Gpt2Config& c);

// rigel's kernels on the device, for micro-batches of `batch` x `seq` tokens
// (src/cuda/train/cuda_backend.cu); a build without CUDA throws. With
// `vendor`, for comparison only: cuBLASLt computes the matmuls it supports
// with the same epilogues, and cuDNN the attention, rigel's kernels the rest
// (name() says which products stayed on rigel's GEMM library).
// deterministic: no atomic sums anywhere in the step (train_kernels.cuh; the
// attention backward on its deterministic mma.sync kernel), so that a step's
// bits repeat run to run; refused with vendor.
// split_dgelu: GELU's backward with its bias gradient in a pass of its own
// after the MLP's dX product, as the deterministic and vendor steps run it,
// rather than fused into that product's epilogue (dgelu_bgrad adding into the
// bias gradient): for comparison.
struct CudaBackendOptions {
    bool vendor = false;
    bool deterministic = false;
    bool split_dgelu = false;
};
std::unique_ptr<TrainBackend> make_cuda_backend(const Gpt2Config& c, int batch, int seq,
                                                const CudaBackendOptions& o = {});

// One line of the training log.
struct StepLog {
    std::int64_t step = 0;  // 1-based
    double loss = 0, val_loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, elapsed_s = 0;
    double flops_per_s = 0;   // training_flops_per_token x tokens/s
    double peak_memory = 0;   // bytes, the backend's
    bool has_val = false;
    bool checkpointed = false;
};

// With o.sync, every rank runs this with the same options: rank 0 alone
// writes the checkpoint (every rank's state is the same), the log's tokens/s
// count all ranks' tokens.
// Runs the loop from step 1 (or, resuming, from the checkpoint's next step)
// to o.steps (or o.stop_after, the step that passes o.max_seconds, or the
// step after which o.should_stop says stop; the schedule is always o.steps
// long, so a run stopped and resumed equals one that ran through), calling
// `on_step` after each. Throws std::invalid_argument, before any step, for
// bad options, token files (a validation file too short for one batch
// included), a checkpoint folder that cannot be written, or a checkpoint
// that does not fit: another model, or other options (the schedule, the
// optimizer's settings, the batch shape, the seed, or other training tokens).
// A fresh run refuses to write over an existing checkpoint, on every rank.
ModelState train(const TrainOptions& o, TrainBackend& backend, const std::function<void(const StepLog&)>& on_step);

}  // namespace rigel::train
