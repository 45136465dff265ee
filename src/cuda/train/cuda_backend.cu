// The device backend of `rigel train` (trainer.hpp): GPT-2's step on rigel's
// kernels. Every matmul is a plan of the GEMM library with its epilogue fused
// where one applies (forward: bias, bias + GELU keeping the pre-activation,
// bias + residual add; backward: GELU' with the bias gradient in a pass of its
// own after the product, which measured faster than fusing it), attention is
// rigel's fused attention reading Q, K, V in place from the QKV projection,
// and the rest is rigel's own kernels (train_kernels.cuh). Weights and
// activations are bf16; master weights, gradients and AdamW's moments fp32.
//
// Per layer, forward (N = B T tokens, C channels):
//   ln1  = LN(x)                          layernorm_forward
//   qkv  = ln1 Wqkv^T + bqkv              GEMM NT, bias
//   y    = attention(qkv)                 attention::Plan (Q, K, V column blocks, ld 3C), lse kept
//   x2   = x + y Wproj^T + bproj          GEMM NT, bias, beta 1 with C = x
//   ln2  = LN(x2)
//   h    = gelu(ln2 Wfc^T + bfc)          GEMM NT, bias_gelu_aux (pre-activation kept)
//   x'   = x2 + h Wfcproj^T + bfcproj     GEMM NT, bias, beta 1
// then logits = LN(x) wte^T (the tied head) and the fused softmax
// cross-entropy, which leaves dlogits in place. The backward pass walks back
// with dX = dY W (GEMM NN) and dW += dY^T X (GEMM TN, fp32, beta 1 so micro-
// batches accumulate), LayerNorm's backward adding into the residual stream's
// gradient in place.
//
// With profiling on (rigel train run --profile), a CUDA event follows every
// phase of the step and phase_times() gives each phase's device time; the
// GEMM phases are named as the gemm suite's GPT-2 cases (fwd_qkv, ...), so a
// product's rate inside the step can be set beside its rate in `rigel gemm
// bench --suite gpt2`. The events cost a synchronization at the end of each
// profiled step.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/train/train_kernels.cuh"
#include "cuda/vendor/cublaslt_gemm.hpp"
#include "cuda/vendor/cudnn_attention.hpp"
#include "dist/partition.hpp"
#include "rigel/attention.hpp"
#include "rigel/gemm.hpp"
#include "train/trainer.hpp"

namespace rigel::train {
namespace {

namespace gemm = rigel::gemm;

template <class T>
class Device {
public:
    Device() = default;
    explicit Device(std::size_t n) : n_(n) { RIGEL_CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T))); }
    ~Device() { if (p_) cudaFree(p_); }
    Device(Device&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
    Device& operator=(Device&& o) noexcept { std::swap(p_, o.p_); std::swap(n_, o.n_); return *this; }
    T* get() const { return p_; }
    std::size_t size() const { return n_; }
private:
    T* p_ = nullptr;
    std::size_t n_ = 0;
};

using bf16 = __nv_bfloat16;

// CUDA events between the phases of a step, summed per phase (in the order
// first seen) over the profiled steps.
class PhaseTimer {
public:
    PhaseTimer() = default;
    PhaseTimer(const PhaseTimer&) = delete;
    PhaseTimer& operator=(const PhaseTimer&) = delete;
    ~PhaseTimer() {
        for (cudaEvent_t e : events_) cudaEventDestroy(e);
    }
    void enable(bool on) { on_ = on; }
    // A step starts: its first event.
    void begin(cudaStream_t s) {
        if (!on_) return;
        spans_.clear();
        open_ = true;
        record(s, 0);
    }
    // The work enqueued since the last mark was `phase` (outside a step, as in
    // a validation pass: not timed).
    void mark(const char* phase, const char* kind, double flops, cudaStream_t s) {
        if (!on_ || !open_) return;
        spans_.push_back({phase, kind, flops});
        record(s, spans_.size());
    }
    // The step's work is enqueued: waits for it and adds its spans.
    void end() {
        if (!on_ || !open_) return;
        open_ = false;
        if (spans_.empty()) return;
        RIGEL_CUDA_CHECK(cudaEventSynchronize(events_[spans_.size()]));
        std::map<std::string, double> flops_this_step;
        std::map<std::string, int> calls_this_step;
        for (std::size_t i = 0; i < spans_.size(); ++i) {
            float ms = 0;
            RIGEL_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
            const Span& sp = spans_[i];
            auto [it, fresh] = index_.try_emplace(sp.phase, totals_.size());
            if (fresh) totals_.push_back(PhaseTime{.phase = sp.phase, .kind = sp.kind});
            PhaseTime& t = totals_[it->second];
            t.seconds += ms * 1e-3;
            flops_this_step[sp.phase] += sp.flops;
            ++calls_this_step[sp.phase];
        }
        for (PhaseTime& t : totals_) {
            t.flops = flops_this_step[t.phase];
            t.calls = calls_this_step[t.phase];
            ++t.steps;
        }
    }
    const std::vector<PhaseTime>& totals() const { return totals_; }

private:
    struct Span {
        const char* phase;
        const char* kind;
        double flops;
    };
    void record(cudaStream_t s, std::size_t i) {
        while (events_.size() <= i) {
            cudaEvent_t e = nullptr;
            RIGEL_CUDA_CHECK(cudaEventCreate(&e));
            events_.push_back(e);
        }
        RIGEL_CUDA_CHECK(cudaEventRecord(events_[i], s));
    }
    bool on_ = false, open_ = false;
    std::vector<cudaEvent_t> events_;
    std::vector<Span> spans_;
    std::vector<PhaseTime> totals_;
    std::map<std::string, std::size_t> index_;
};

class CudaBackend final : public TrainBackend {
public:
    CudaBackend(const Gpt2Config& c, int batch, int seq, const CudaBackendOptions& o)
        : c_(c), B_(batch), T_(seq), N_(batch * seq), layout_(param_layout(c)), vendor_(o.vendor),
          deterministic_(o.deterministic), fused_dgelu_(!o.vendor && !o.deterministic && !o.split_dgelu) {
        if (o.vendor && o.deterministic)
            throw std::invalid_argument("--deterministic takes --backend cuda (cuDNN's attention backward may add in "
                                        "any order)");
        refuse_if_too_big();
        const std::size_t P = static_cast<std::size_t>(layout_.total);
        params_ = Device<float>(P), params16_ = Device<bf16>(P), grads_ = Device<float>(P), m_ = Device<float>(P),
        v_ = Device<float>(P);
        const std::vector<std::uint8_t> mask = decay_mask(c);
        mask_ = Device<std::uint8_t>(P);
        RIGEL_CUDA_CHECK(cudaMemcpy(mask_.get(), mask.data(), P, cudaMemcpyHostToDevice));
        const std::size_t NC = static_cast<std::size_t>(N_) * C();
        for (int l = 0; l < c.layers; ++l) {
            Acts a;
            a.in = Device<bf16>(NC), a.ln1 = Device<bf16>(NC), a.qkv = Device<bf16>(3 * NC), a.atty = Device<bf16>(NC);
            a.res2 = Device<bf16>(NC), a.ln2 = Device<bf16>(NC), a.fch = Device<bf16>(4 * NC), a.pre = Device<bf16>(4 * NC);
            a.mean1 = Device<float>(N_), a.rstd1 = Device<float>(N_), a.mean2 = Device<float>(N_), a.rstd2 = Device<float>(N_);
            a.lse = Device<float>(static_cast<std::size_t>(N_) * c.heads);
            acts_.push_back(std::move(a));
        }
        out_ = Device<bf16>(NC), lnf_ = Device<bf16>(NC), meanf_ = Device<float>(N_), rstdf_ = Device<float>(N_);
        logits_ = Device<bf16>(static_cast<std::size_t>(N_) * c.padded_vocab_size);
        losses_ = Device<float>(N_);
        tokens_ = Device<std::uint16_t>(N_), targets_ = Device<std::uint16_t>(N_);
        dres_ = Device<bf16>(NC), dln_ = Device<bf16>(NC), datty_ = Device<bf16>(NC), dqkv_ = Device<bf16>(3 * NC),
        dfch_ = Device<bf16>(4 * NC);
        sum_sq_ = Device<float>(1), norm_ws_ = Device<float>(cuda::train::sum_squares_workspace_floats());
        if (deterministic_) {  // the ordered sums' partials, and each micro-batch's rows grouped by token
            ws_ = Device<float>(cuda::train::deterministic_workspace_floats(N_, 4 * C()));
            token_rows_ = Device<std::int32_t>(static_cast<std::size_t>(3 * N_ + 1));
        }
        RIGEL_CUDA_CHECK(cudaStreamCreate(&stream_));
        const int D = C() / c.heads;
        attention_ = std::make_unique<attention::Plan>(attention::Desc{.batch = B_, .heads = c.heads, .seq = T_,
                                                                       .head_dim = D, .causal = true,
                                                                       .ldq = 3 * C(), .ldk = 3 * C(), .ldv = 3 * C(),
                                                                       .ldo = C(), .deterministic = deterministic_});
        if (vendor_) {
            attention_refusal_ = cuda::vendor::cudnn_sdpa_support(attention_->desc());
            if (attention_refusal_.empty())
                attention_refusal_ = cuda::vendor::cudnn_sdpa_backward_support(attention_->desc());
            vendor_attention_ = attention_refusal_.empty();
        }
    }
    ~CudaBackend() override {
        if (comm_) (void)cudaStreamDestroy(comm_);
        if (layer_done_) (void)cudaEventDestroy(layer_done_);
        cudaStreamDestroy(stream_);
    }

    std::string name() const override {
        if (!vendor_)
            return std::string("cuda (rigel's GEMM library, attention and training kernels") +
                   (deterministic_ ? "; deterministic: no atomic sums, attention's backward on mma.sync)"
                    : fused_dgelu_ ? "; GELU's backward fused into the MLP's dX product)"
                                   : "; GELU's backward in a pass of its own)");
        std::string kept;
        for (const auto& [phase, why] : vendor_refused_) kept += (kept.empty() ? "" : "; ") + phase + ": " + why;
        return std::string("cuda-vendor, for comparison only: cuBLASLt for the matmuls (same epilogues), ") +
               (vendor_attention_ ? "cuDNN for attention" : "rigel's attention (cuDNN: " + attention_refusal_ + ")") +
               ", rigel's kernels for the rest" + (kept.empty() ? "" : "; on rigel's GEMM library: " + kept);
    }

    void load(const ModelState& s) override {
        const std::size_t bytes = s.params.size() * sizeof(float);
        if (s.params.size() != params_.size()) throw std::invalid_argument("model state does not fit the model");
        RIGEL_CUDA_CHECK(cudaMemcpy(params_.get(), s.params.data(), bytes, cudaMemcpyHostToDevice));
        // Sharded (ZeRO stage 1): only this rank's part of the moments.
        const std::size_t b = sharded_ ? shard_.begin : 0, n = sharded_ ? shard_.size() : s.params.size();
        RIGEL_CUDA_CHECK(cudaMemcpy(m_.get(), s.m.data() + b, n * sizeof(float), cudaMemcpyHostToDevice));
        RIGEL_CUDA_CHECK(cudaMemcpy(v_.get(), s.v.data() + b, n * sizeof(float), cudaMemcpyHostToDevice));
        refresh_bf16();
    }

    ModelState save() override {
        ModelState s;
        const std::size_t P = params_.size();
        s.params.resize(P), s.m.resize(P), s.v.resize(P);
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        if (sharded_) {  // every rank's shard of the weights and the moments, gathered (every rank calls this)
            gather_to_host(s.params, params_.get() + shard_.begin);
            gather_to_host(s.m, m_.get());
            gather_to_host(s.v, v_.get());
            return s;
        }
        const std::size_t bytes = P * sizeof(float);
        RIGEL_CUDA_CHECK(cudaMemcpy(s.params.data(), params_.get(), bytes, cudaMemcpyDeviceToHost));
        RIGEL_CUDA_CHECK(cudaMemcpy(s.m.data(), m_.get(), bytes, cudaMemcpyDeviceToHost));
        RIGEL_CUDA_CHECK(cudaMemcpy(s.v.data(), v_.get(), bytes, cudaMemcpyDeviceToHost));
        return s;
    }

    StepStats step(std::span<const Batch> micro, double lr, std::int64_t t, const TrainOptions& o) override {
        check_shape(o);
        prof_.begin(stream_);
        RIGEL_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.size() * sizeof(float), stream_));
        if (deterministic_) {
            if (det_total_.size() == 0) det_total_ = Device<float>(grads_.size());
            RIGEL_CUDA_CHECK(cudaMemsetAsync(det_total_.get(), 0, det_total_.size() * sizeof(float), stream_));
        }
        other("zero_grads");
        StepStats st;
        const double count = static_cast<double>(micro.size()) * o.world();  // every rank's micro-batches
        if (o.sync && !comm_) {
            RIGEL_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
            RIGEL_CUDA_CHECK(cudaEventCreateWithFlags(&layer_done_, cudaEventDisableTiming));
        }
        const float dloss = 1.0f / static_cast<float>(N_ * micro.size() * static_cast<std::size_t>(o.world()));
        for (std::size_t i = 0; i < micro.size(); ++i) {
            upload(micro[i]);
            other("upload");
            forward();
            st.loss += mean_loss() / count;
            other("loss_readback");
            if (deterministic_) {
                deterministic_backward(dloss, o);
                continue;
            }
            // On the step's last micro-batch each layer's gradients are final as the pass leaves it.
            backward(dloss, i + 1 == micro.size() ? o.sync : nullptr);
        }
        if (deterministic_) {  // the micro-batches' gradients, added in their global order, become the step's
            RIGEL_CUDA_CHECK(cudaMemcpyAsync(grads_.get(), det_total_.get(), grads_.size() * sizeof(float),
                                             cudaMemcpyDeviceToDevice, stream_));
            other("gradient_sync");
        }
        if (o.sync) {  // the losses summed after the gradients, then the norm waits for every sum
            // After everything on the training stream (the deterministic mode's gathers run there): one
            // communicator's collectives in the order every rank issued them.
            RIGEL_CUDA_CHECK(cudaEventRecord(layer_done_, stream_));
            RIGEL_CUDA_CHECK(cudaStreamWaitEvent(comm_, layer_done_, 0));
            float loss = static_cast<float>(st.loss);
            RIGEL_CUDA_CHECK(cudaMemcpyAsync(sum_sq_.get(), &loss, sizeof(float), cudaMemcpyHostToDevice, comm_));
            o.sync->sum(sum_sq_.get(), 1, comm_);
            RIGEL_CUDA_CHECK(cudaMemcpyAsync(&loss, sum_sq_.get(), sizeof(float), cudaMemcpyDeviceToHost, comm_));
            RIGEL_CUDA_CHECK(cudaStreamSynchronize(comm_));
            st.loss = loss;
            RIGEL_CUDA_CHECK(cudaEventRecord(layer_done_, comm_));
            RIGEL_CUDA_CHECK(cudaStreamWaitEvent(stream_, layer_done_, 0));
            other("gradient_sync");
        }
        RIGEL_CUDA_CHECK(cudaMemsetAsync(sum_sq_.get(), 0, sizeof(float), stream_));
        cuda::train::sum_squares(sum_sq_.get(), grads_.get(), static_cast<std::int64_t>(grads_.size()), stream_,
                                 norm_ws_.get());
        other("grad_norm");
        float sum_sq = 0;
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(&sum_sq, sum_sq_.get(), sizeof(float), cudaMemcpyDeviceToHost, stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        st.grad_norm = std::sqrt(static_cast<double>(sum_sq));
        const double scale = clip_factor(st.grad_norm, o.clip);
        const AdamWSettings& a = o.adamw;
        if (o.sync && o.shard_optimizer && !sharded_) enter_sharding(*o.sync);
        // Sharded: AdamW on this rank's part only (its moments are all this rank keeps), then every
        // rank's updated bf16 weights gathered.
        const std::size_t b = sharded_ ? shard_.begin : 0, n = sharded_ ? shard_.size() : params_.size();
        if (n > 0)
            cuda::train::adamw(params_.get() + b, params16_.get() + b, grads_.get() + b, m_.get(), v_.get(),
                               mask_.get() + b, static_cast<std::int64_t>(n), static_cast<float>(lr),
                               static_cast<float>(a.beta1), static_cast<float>(a.beta2), static_cast<float>(a.eps),
                               static_cast<float>(a.weight_decay), static_cast<float>(1 - std::pow(a.beta1, t)),
                               static_cast<float>(1 - std::pow(a.beta2, t)), static_cast<float>(scale), stream_);
        other("adamw");
        if (sharded_) {
            sharded_->gather(params16_.get(), shard_step_ * sizeof(bf16), stream_);
            other("weight_gather");
        }
        prof_.end();
        std::size_t free = 0, total = 0;
        RIGEL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        peak_ = std::max(peak_, static_cast<double>(total - free));
        return st;
    }

    // The device's memory in use (all of it, as nvidia-smi counts it) at the end of each step, at its largest.
    double peak_memory_bytes() const override { return peak_; }

    void set_profiling(bool on) override { prof_.enable(on); }
    std::vector<PhaseTime> phase_times() const override { return prof_.totals(); }

    double eval_loss(const Batch& b, const TrainOptions& o) override {
        check_shape(o);
        upload(b);
        forward();
        return mean_loss();
    }

    std::vector<float> logits_at(const Batch& b, int position) override {
        if (position < 0 || position >= T_)
            throw std::invalid_argument("logits_at: position " + std::to_string(position) + " is outside the " +
                                        std::to_string(T_) + " tokens of a row");
        upload(b);
        forward(false);
        const int Vp = c_.padded_vocab_size;
        std::vector<bf16> row(static_cast<std::size_t>(Vp));
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(row.data(), logits_.get() + static_cast<std::int64_t>(position) * Vp,
                                         row.size() * sizeof(bf16), cudaMemcpyDeviceToHost, stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        std::vector<float> out(row.size());
        for (std::size_t i = 0; i < row.size(); ++i) out[i] = __bfloat162float(row[i]);
        return out;
    }

private:
    struct Acts {
        Device<bf16> in, ln1, qkv, atty, res2, ln2, fch, pre;
        Device<float> mean1, rstd1, mean2, rstd2, lse;
    };

    int C() const { return c_.channels; }
    bf16* w16(Param p, int layer = 0) const { return params16_.get() + offset(p, layer); }
    float* grad(Param p, int layer = 0) const { return grads_.get() + offset(p, layer); }
    // Whether a tensor has one slice per layer, and that slice's element count.
    static bool layered(Param p) { return p != Param::wte && p != Param::wpe && p != Param::lnfw && p != Param::lnfb; }
    std::int64_t per_layer(Param p) const { return layout_.count(p) / c_.layers; }
    std::int64_t offset(Param p, int layer) const {
        return layout_.at(p) + (layered(p) ? layer * per_layer(p) : 0);
    }

    // Before any allocation: a micro-batch that cannot fit is refused in one
    // sentence, not by the first cudaMalloc that fails.
    void refuse_if_too_big() const {
        std::size_t free = 0, total = 0;
        RIGEL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        const double need = static_cast<double>(cuda_backend_bytes(c_, B_, T_)) + kHeadroomBytes;
        if (need > static_cast<double>(free)) {
            char text[320];
            std::snprintf(text, sizeof text,
                          "a micro-batch of %d x %d tokens needs about %.2f GB of device memory (weights, AdamW "
                          "state, activations, logits), and %.2f GB are free: lower --batch and raise "
                          "--accumulation",
                          B_, T_, need / 1e9, static_cast<double>(free) / 1e9);
            throw std::invalid_argument(text);
        }
    }
    static constexpr double kHeadroomBytes = 256e6;  // the GEMM plans' workspaces, allocated on first use

    void check_shape(const TrainOptions& o) const {
        if (o.batch != B_ || o.seq != T_)
            throw std::invalid_argument("the cuda backend was built for batch " + std::to_string(B_) + " x " +
                                        std::to_string(T_) + " tokens");
    }

    // ZeRO stage 1 from the first sharded step on: the moments shrink to this rank's shard (the
    // memory it saves: 8 bytes a parameter on all but one rank's share), and the bf16 weights get
    // room to be gathered in place (world x shard_step elements).
    void enter_sharding(GradientSync& sync) {
        const std::size_t P = params_.size();
        shard_ = dist::shard(P, sync.world(), sync.rank(), TrainOptions::kShardAlign);
        shard_step_ = dist::shard_step(P, sync.world(), TrainOptions::kShardAlign);
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        Device<float> m(shard_.size()), v(shard_.size());
        RIGEL_CUDA_CHECK(cudaMemcpy(m.get(), m_.get() + shard_.begin, shard_.size() * sizeof(float),
                                    cudaMemcpyDeviceToDevice));
        RIGEL_CUDA_CHECK(cudaMemcpy(v.get(), v_.get() + shard_.begin, shard_.size() * sizeof(float),
                                    cudaMemcpyDeviceToDevice));
        Device<bf16> w(shard_step_ * static_cast<std::size_t>(sync.world()));
        RIGEL_CUDA_CHECK(cudaMemcpy(w.get(), params16_.get(), P * sizeof(bf16), cudaMemcpyDeviceToDevice));
        m_ = std::move(m), v_ = std::move(v), params16_ = std::move(w);
        sharded_ = &sync;
    }

    // This rank's shard (`shard` on the device, shard_.size() floats) into `out` at its place, with
    // every other rank's shard gathered beside it.
    void gather_to_host(std::vector<float>& out, const float* shard) {
        Device<float> all(shard_step_ * static_cast<std::size_t>(sharded_->world()));
        RIGEL_CUDA_CHECK(cudaMemcpy(all.get() + shard_.begin, shard, shard_.size() * sizeof(float),
                                    cudaMemcpyDeviceToDevice));
        sharded_->gather(all.get(), shard_step_ * sizeof(float), stream_);
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(out.data(), all.get(), out.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    // The bf16 copy the model computes with (AdamW refreshes it after every step).
    void refresh_bf16() {
        cuda::train::to_bf16(params16_.get(), params_.get(), static_cast<std::int64_t>(params_.size()), stream_);
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    void upload(const Batch& b) {
        std::vector<std::uint16_t> in(b.inputs.begin(), b.inputs.end()), tg(b.targets.begin(), b.targets.end());
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(tokens_.get(), in.data(), in.size() * 2, cudaMemcpyHostToDevice, stream_));
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(targets_.get(), tg.data(), tg.size() * 2, cudaMemcpyHostToDevice, stream_));
        std::vector<std::int32_t> packed;  // deterministic: rows, starts, token_of in one buffer
        if (deterministic_) {
            const TokenRows g = group_rows_by_token(b.inputs);
            distinct_ = static_cast<int>(g.token_of.size());
            packed = g.packed();
            RIGEL_CUDA_CHECK(cudaMemcpyAsync(token_rows_.get(), packed.data(), packed.size() * sizeof(std::int32_t),
                                             cudaMemcpyHostToDevice, stream_));
        }
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host vectors die here
    }

    // A GEMM plan per (shape, layouts, epilogue, output type), built once.
    gemm::Plan& plan(std::int64_t m, std::int64_t n, std::int64_t k, gemm::Op a, gemm::Op b, gemm::Type out,
                     gemm::Epilogue e) {
        const auto key = std::make_tuple(m, n, k, a, b, out, e);
        auto it = plans_.find(key);
        if (it == plans_.end())
            // Atomic additions (the split weight gradients) everywhere but in the deterministic mode.
            it = plans_.emplace(key, std::make_unique<gemm::Plan>(gemm::Desc{.m = m, .n = n, .k = k, .a_op = a,
                                                                              .b_op = b, .d_type = out, .epilogue = e,
                                                                              .allow_atomics = !deterministic_}))
                     .first;
        return *it->second;
    }
    // One product of the step, `phase` to the profiler: rigel's plan, or with
    // vendor_ cuBLASLt wherever it computes the same thing.
    void product(const char* phase, std::int64_t m, std::int64_t n, std::int64_t k, gemm::Op a, gemm::Op b,
                 gemm::Type out, gemm::Epilogue e, const gemm::Args& args) {
        gemm::Plan& p = plan(m, n, k, a, b, out, e);
        if (vendor_ && vendor_takes(phase, p.desc()))
            cuda::vendor::cublaslt_gemm(p.desc(), args, stream_);
        else
            p.run(args, stream_);
        prof_.mark(phase, "gemm", 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
                   stream_);
    }
    void other(const char* phase) { prof_.mark(phase, "other", 0, stream_); }

    // Whether cuBLASLt computes `d` as rigel's plan does (asked once per
    // phase); a refusal keeps that product on rigel's library and is named.
    bool vendor_takes(const char* phase, const gemm::Desc& d) {
        auto it = vendor_support_.find(phase);
        if (it == vendor_support_.end()) {
            const std::string why = cuda::vendor::cublaslt_gemm_support(d);
            it = vendor_support_.emplace(phase, why.empty()).first;
            if (!why.empty()) vendor_refused_.emplace_back(phase, why);
        }
        return it->second;
    }
    void attention_forward(const attention::ForwardArgs& a) {
        if (vendor_attention_)
            cuda::vendor::cudnn_sdpa_forward(attention_->desc(), a, stream_);
        else
            attention_->forward(a, stream_);
    }
    void attention_backward(const attention::BackwardArgs& a) {
        if (vendor_attention_)
            cuda::vendor::cudnn_sdpa_backward(attention_->desc(), a, stream_);
        else
            attention_->backward(a, stream_);
    }

    // Y (N x OC) = X W^T (+ bias) (+ residual): the forward layout NT.
    void linear(const char* phase, bf16* y, const bf16* x, const bf16* w, const bf16* bias, int in, int out,
                gemm::Epilogue e = gemm::Epilogue::bias, const bf16* residual = nullptr, bf16* aux = nullptr) {
        product(phase, N_, out, in, gemm::Op::n, gemm::Op::t, gemm::Type::bf16, e,
                {.a = x, .b = w, .d = y, .c = residual, .bias = bias, .aux = aux, .beta = residual ? 1.0f : 0.0f});
    }
    // dX (N x in) = dY W: NN. With dgelu_bgrad: dX = (dY W) gelu'(aux), its column sums added into bgrad.
    void linear_dx(const char* phase, bf16* dx, const bf16* dy, const bf16* w, int in, int out,
                   gemm::Epilogue e = gemm::Epilogue::none, const bf16* aux = nullptr, float* bgrad = nullptr) {
        product(phase, N_, in, out, gemm::Op::n, gemm::Op::n, gemm::Type::bf16, e,
                {.a = dy, .b = w, .d = dx, .aux = const_cast<bf16*>(aux), .bgrad = bgrad,
                 .bgrad_accumulate = bgrad != nullptr});
    }
    // dW (out x in) += dY^T X: TN, fp32, accumulated.
    void linear_dw(const char* phase, float* dw, const bf16* dy, const bf16* x, int in, int out) {
        product(phase, out, in, N_, gemm::Op::t, gemm::Op::n, gemm::Type::f32, gemm::Epilogue::none,
                {.a = dy, .b = x, .d = dw, .c = dw, .beta = 1.0f});
    }

    // with_loss false: the logits stay (sampling), no cross-entropy.
    void forward(bool with_loss = true) {
        const int C = this->C(), Vp = c_.padded_vocab_size;
        cuda::train::encoder_forward(acts_[0].in.get(), tokens_.get(), w16(Param::wte), w16(Param::wpe), N_, T_, C,
                                     stream_);
        other("encoder_forward");
        for (int l = 0; l < c_.layers; ++l) {
            Acts& a = acts_[static_cast<std::size_t>(l)];
            cuda::train::layernorm_forward(a.ln1.get(), a.mean1.get(), a.rstd1.get(), a.in.get(), w16(Param::ln1w, l),
                                           w16(Param::ln1b, l), N_, C, stream_);
            other("layernorm_forward");
            linear("fwd_qkv", a.qkv.get(), a.ln1.get(), w16(Param::qkvw, l), w16(Param::qkvb, l), C, 3 * C);
            attention_forward({.q = a.qkv.get(), .k = a.qkv.get() + C, .v = a.qkv.get() + 2 * C, .o = a.atty.get(),
                               .lse = a.lse.get()});
            prof_.mark("attention_forward", "attention", attention::forward_flops(attention_->desc()), stream_);
            linear("fwd_attn_proj", a.res2.get(), a.atty.get(), w16(Param::attprojw, l), w16(Param::attprojb, l), C, C,
                   gemm::Epilogue::bias, a.in.get());
            cuda::train::layernorm_forward(a.ln2.get(), a.mean2.get(), a.rstd2.get(), a.res2.get(), w16(Param::ln2w, l),
                                           w16(Param::ln2b, l), N_, C, stream_);
            other("layernorm_forward");
            linear("fwd_mlp_up", a.fch.get(), a.ln2.get(), w16(Param::fcw, l), w16(Param::fcb, l), C, 4 * C,
                   gemm::Epilogue::bias_gelu_aux, nullptr, a.pre.get());
            bf16* next = l + 1 < c_.layers ? acts_[static_cast<std::size_t>(l) + 1].in.get() : out_.get();
            linear("fwd_mlp_down", next, a.fch.get(), w16(Param::fcprojw, l), w16(Param::fcprojb, l), 4 * C, C, gemm::Epilogue::bias,
                   a.res2.get());
        }
        cuda::train::layernorm_forward(lnf_.get(), meanf_.get(), rstdf_.get(), out_.get(), w16(Param::lnfw),
                                       w16(Param::lnfb), N_, C, stream_);
        other("layernorm_forward");
        product("fwd_lm_head", N_, Vp, C, gemm::Op::n, gemm::Op::t, gemm::Type::bf16, gemm::Epilogue::none,
                {.a = lnf_.get(), .b = w16(Param::wte), .d = logits_.get()});
        if (!with_loss) return;
        // The losses, and the logits replaced by their gradient for a mean over the N tokens of this
        // micro-batch (backward() scales by the micro-batch count through its own dloss).
        cuda::train::crossentropy_fused(losses_.get(), logits_.get(), targets_.get(), 1.0f, N_, c_.vocab_size, Vp,
                                        stream_);
        other("crossentropy");
    }

    double mean_loss() {
        std::vector<float> h(static_cast<std::size_t>(N_));
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(h.data(), losses_.get(), h.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream_));
        RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
        double s = 0;
        for (float x : h) s += x;
        return s / N_;
    }

    // Data parallel, on the step's last micro-batch: the ranks' sums of tensors `ps` (of layer `layer`)
    // on the communication stream, once this stream has finished them, so that they overlap the rest of
    // the backward pass (which never writes them again).
    void sum_when_done(GradientSync* sync, std::initializer_list<Param> ps, int layer = 0) {
        if (!sync) return;
        RIGEL_CUDA_CHECK(cudaEventRecord(layer_done_, stream_));
        RIGEL_CUDA_CHECK(cudaStreamWaitEvent(comm_, layer_done_, 0));
        std::vector<GradientSync::Tensor> bucket;
        for (Param p : ps)
            bucket.push_back({grad(p, layer), static_cast<std::size_t>(layered(p) ? per_layer(p) : layout_.count(p))});
        sync->sum_bucket(bucket, comm_);
    }

    // The deterministic mode's micro-batch: its gradients alone (grads_ zeroed
    // first), then added to the step's total in the micro-batches' global
    // order. Under `rigel launch` the ranks compute the micro-batches j N + r
    // of round j together; every rank gathers the round's N gradients and
    // adds them in rank order, so N ranks add exactly what one process with N
    // times the accumulation adds, in the same order, bit for bit (where one
    // process's step is itself deterministic). The price: world x the
    // parameters' fp32 bytes gathered per micro-batch instead of one sum.
    void deterministic_backward(float dloss, const TrainOptions& o) {
        const std::size_t P = grads_.size();
        RIGEL_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, P * sizeof(float), stream_));
        backward(dloss, nullptr);
        if (!o.sync) {
            cuda::train::add_into(det_total_.get(), grads_.get(), static_cast<std::int64_t>(P), stream_);
            other("gradient_sum");
            return;
        }
        const int world = o.sync->world();
        if (det_gather_.size() == 0) det_gather_ = Device<float>(P * static_cast<std::size_t>(world));
        RIGEL_CUDA_CHECK(cudaMemcpyAsync(det_gather_.get() + P * static_cast<std::size_t>(o.sync->rank()),
                                         grads_.get(), P * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
        o.sync->gather(det_gather_.get(), P * sizeof(float), stream_);
        for (int r = 0; r < world; ++r)
            cuda::train::add_into(det_total_.get(), det_gather_.get() + P * static_cast<std::size_t>(r),
                                  static_cast<std::int64_t>(P), stream_);
        other("gradient_gather");
    }

    // dlogits holds (softmax - onehot) per token; `dloss` (1 / tokens of the whole step) scales it here,
    // in the first product of the backward pass, through alpha. `sync` (the step's last micro-batch of a
    // data-parallel run): each layer's gradients summed over the ranks as soon as they are final.
    void backward(float dloss, GradientSync* sync = nullptr) {
        const int C = this->C(), Vp = c_.padded_vocab_size;
        RIGEL_CUDA_CHECK(cudaMemsetAsync(dres_.get(), 0, dres_.size() * sizeof(bf16), stream_));
        other("zero_grads");
        product("bwd_lm_head_dx", N_, C, Vp, gemm::Op::n, gemm::Op::n, gemm::Type::bf16, gemm::Epilogue::none,
                {.a = logits_.get(), .b = w16(Param::wte), .d = dln_.get(), .alpha = dloss});
        product("bwd_lm_head_dw", Vp, C, N_, gemm::Op::t, gemm::Op::n, gemm::Type::f32, gemm::Epilogue::none,
                {.a = logits_.get(), .b = lnf_.get(), .d = grad(Param::wte), .c = grad(Param::wte), .alpha = dloss,
                 .beta = 1.0f});
        // Each LayerNorm backward below also sums the residual stream's gradient it leaves (dsum): the
        // bias gradient of the linear layer that wrote that stream (the MLP's projection of the layer
        // below, or the attention's projection), so those biases take no pass of their own.
        cuda::train::layernorm_backward(dres_.get(), grad(Param::lnfw), grad(Param::lnfb), dln_.get(), out_.get(),
                                        w16(Param::lnfw), meanf_.get(), rstdf_.get(), N_, C, stream_, ws(),
                                        grad(Param::fcprojb, c_.layers - 1));
        other("layernorm_backward");
        sum_when_done(sync, {Param::lnfw, Param::lnfb});
        for (int l = c_.layers - 1; l >= 0; --l) {
            Acts& a = acts_[static_cast<std::size_t>(l)];
            // x' = x2 + h Wfcproj^T + b: dres flows on to x2 unchanged.
            linear_dw("bwd_mlp_down_dw", grad(Param::fcprojw, l), dres_.get(), a.fch.get(), 4 * C, C);
            // dX with GELU' applied and the bias gradient added into db, in the product's epilogue (its aux,
            // the pre-activation, loaded a tile ahead); or, in the deterministic mode (no atomic adds), on
            // cuda-vendor and with --split-dgelu, dX then a pass of its own that reads dX and the
            // pre-activation once, in 16-byte rows.
            if (fused_dgelu_) {
                linear_dx("bwd_mlp_down_dx", dfch_.get(), dres_.get(), w16(Param::fcprojw, l), 4 * C, C,
                          gemm::Epilogue::dgelu_bgrad, a.pre.get(), grad(Param::fcb, l));
            } else {
                linear_dx("bwd_mlp_down_dx", dfch_.get(), dres_.get(), w16(Param::fcprojw, l), 4 * C, C);
                cuda::train::gelu_backward_bias(dfch_.get(), a.pre.get(), grad(Param::fcb, l), N_, 4 * C, stream_,
                                                ws());
                other("gelu_backward");
            }
            linear_dw("bwd_mlp_up_dw", grad(Param::fcw, l), dfch_.get(), a.ln2.get(), C, 4 * C);
            linear_dx("bwd_mlp_up_dx", dln_.get(), dfch_.get(), w16(Param::fcw, l), C, 4 * C);
            cuda::train::layernorm_backward(dres_.get(), grad(Param::ln2w, l), grad(Param::ln2b, l), dln_.get(),
                                            a.res2.get(), w16(Param::ln2w, l), a.mean2.get(), a.rstd2.get(), N_, C,
                                            stream_, ws(), grad(Param::attprojb, l));
            other("layernorm_backward");
            // x2 = x + y Wproj^T + b
            linear_dw("bwd_attn_proj_dw", grad(Param::attprojw, l), dres_.get(), a.atty.get(), C, C);
            linear_dx("bwd_attn_proj_dx", datty_.get(), dres_.get(), w16(Param::attprojw, l), C, C);
            attention_backward({.q = a.qkv.get(), .k = a.qkv.get() + C, .v = a.qkv.get() + 2 * C, .o = a.atty.get(),
                                .dout = datty_.get(), .lse = a.lse.get(), .dq = dqkv_.get(), .dk = dqkv_.get() + C,
                                .dv = dqkv_.get() + 2 * C});
            prof_.mark("attention_backward", "attention", attention::backward_flops(attention_->desc()), stream_);
            linear_dw("bwd_qkv_dw", grad(Param::qkvw, l), dqkv_.get(), a.ln1.get(), C, 3 * C);
            cuda::train::bias_backward(grad(Param::qkvb, l), dqkv_.get(), N_, 3 * C, stream_, ws());
            other("bias_backward");
            linear_dx("bwd_qkv_dx", dln_.get(), dqkv_.get(), w16(Param::qkvw, l), C, 3 * C);
            cuda::train::layernorm_backward(dres_.get(), grad(Param::ln1w, l), grad(Param::ln1b, l), dln_.get(),
                                            a.in.get(), w16(Param::ln1w, l), a.mean1.get(), a.rstd1.get(), N_, C,
                                            stream_, ws(), l > 0 ? grad(Param::fcprojb, l - 1) : nullptr);
            other("layernorm_backward");
            sum_when_done(sync,
                          {Param::ln1w, Param::ln1b, Param::qkvw, Param::qkvb, Param::attprojw, Param::attprojb,
                           Param::ln2w, Param::ln2b, Param::fcw, Param::fcb, Param::fcprojw, Param::fcprojb},
                          l);
        }
        if (deterministic_) {
            cuda::train::encoder_backward_ordered(grad(Param::wte), grad(Param::wpe), dres_.get(),
                                                  cuda::train::token_rows_in(token_rows_.get(), N_, distinct_), N_,
                                                  T_, C, stream_);
        } else {
            cuda::train::encoder_backward(grad(Param::wte), grad(Param::wpe), dres_.get(), tokens_.get(), N_, T_, C,
                                          stream_);
        }
        other("encoder_backward");
        sum_when_done(sync, {Param::wte, Param::wpe});  // the tied LM head's and the encoder's, last
    }

    Gpt2Config c_;
    int B_, T_, N_;
    ParamLayout layout_;
    Device<float> params_, grads_, m_, v_;
    Device<bf16> params16_;
    Device<std::uint8_t> mask_;
    std::vector<Acts> acts_;
    Device<bf16> out_, lnf_, logits_, dres_, dln_, datty_, dqkv_, dfch_;
    Device<float> meanf_, rstdf_, losses_, sum_sq_;
    Device<float> norm_ws_;  // the gradient norm's per-CTA partial sums, added in order
    Device<std::uint16_t> tokens_, targets_;
    std::unique_ptr<attention::Plan> attention_;
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, gemm::Op, gemm::Op, gemm::Type, gemm::Epilogue>,
             std::unique_ptr<gemm::Plan>>
        plans_;
    cudaStream_t stream_ = nullptr;
    GradientSync* sharded_ = nullptr;  // ZeRO stage 1: m_ and v_ hold shard_ only
    dist::Range shard_{};
    std::size_t shard_step_ = 0;
    cudaStream_t comm_ = nullptr;      // data parallel: the gradient sums' stream
    cudaEvent_t layer_done_ = nullptr;  // where this stream is when a sum may start
    double peak_ = 0;
    PhaseTimer prof_;
    bool vendor_ = false, vendor_attention_ = false;
    bool deterministic_ = false;
    // GELU's backward and its bias gradient in the epilogue of the MLP's dX product (dgelu_bgrad, adding
    // into the bias gradient by atomic adds): not in the deterministic mode, nor on cuda-vendor, whose
    // cuBLASLt writes the bias gradient afresh where the step adds into it across micro-batches.
    bool fused_dgelu_ = false;
    Device<float> ws_;                // deterministic: the ordered sums' partials
    Device<float> det_total_;         // deterministic: the step's gradients, summed micro-batch by micro-batch
    Device<float> det_gather_;        // deterministic, several ranks: a round's micro-batches' gradients
    Device<std::int32_t> token_rows_;  // deterministic: the micro-batch's rows grouped by token
    int distinct_ = 0;                 // its distinct tokens
    float* ws() { return deterministic_ ? ws_.get() : nullptr; }
    std::string attention_refusal_;
    std::map<std::string, bool> vendor_support_;
    std::vector<std::pair<std::string, std::string>> vendor_refused_;
};

}  // namespace

std::unique_ptr<TrainBackend> make_cuda_backend(const Gpt2Config& c, int batch, int seq,
                                                const CudaBackendOptions& o) {
    return std::make_unique<CudaBackend>(c, batch, seq, o);
}

}  // namespace rigel::train
