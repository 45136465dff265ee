// The GPU driver of `rigel attention` (src/attention/driver.hpp): buffers on
// the executor's stream, the reference's random Q, K, V uploaded (padding
// columns hold the bf16 NaN poison, so a kernel that reads them shows), O and
// lse poisoned with 0xFF bytes before every checked run, the bytes back and
// verify() on them; then paired timing of rigel against cuDNN with CUDA
// events after an L2 flush (Executor::time_once) and NVML sampling around the
// pairs.
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/driver.hpp"
#include "attention/reference.hpp"
#include "cuda/check.cuh"
#include "cuda/vendor/cudnn_attention.hpp"

namespace rigel::attention {
namespace {

cudaStream_t stream_of(Executor& ex) { return static_cast<cudaStream_t>(ex.stream()); }

// The device buffers of one case, with the host inputs they were filled from.
class DeviceCase {
public:
    DeviceCase(Executor& ex, const Desc& desc, std::uint64_t seed)
        : ex_(ex), desc_(with_defaults(desc)), sizes_(sizes(desc_)), in_(random_inputs(desc_, seed)) {
        q_ = upload(in_.q);
        k_ = upload(in_.k);
        v_ = upload(in_.v);
        dout_ = upload(in_.dout);
        o_ = buffer(sizes_.o * 2);
        lse_ = buffer(sizes_.lse * 4);
        dq_ = buffer(sizes_.q * 2);
        dk_ = buffer(sizes_.k * 2);
        dv_ = buffer(sizes_.v * 2);
    }

    const Desc& desc() const { return desc_; }
    ForwardArgs args() const {
        return {.q = q_->get(), .k = k_->get(), .v = v_->get(), .o = o_->get(), .lse = static_cast<float*>(lse_->get())};
    }
    BackwardArgs backward_args() const {
        return {.q = q_->get(),
                .k = k_->get(),
                .v = v_->get(),
                .o = o_->get(),
                .dout = dout_->get(),
                .lse = static_cast<const float*>(lse_->get()),
                .dq = dq_->get(),
                .dk = dk_->get(),
                .dv = dv_->get()};
    }

    // O and lse (the forward's outputs), or dQ, dK, dV (the backward's).
    void poison(bool gradients) {
        const std::vector<DeviceBuffer*> written =
            gradients ? std::vector<DeviceBuffer*>{dq_.get(), dk_.get(), dv_.get()}
                      : std::vector<DeviceBuffer*>{o_.get(), lse_.get()};
        for (DeviceBuffer* b : written)
            RIGEL_CUDA_CHECK(cudaMemsetAsync(b->get(), kPoisonByte, b->size(), stream_of(ex_)));
        ex_.synchronize();
    }

    // The gradients' bytes, dQ then dK then dV (for the deterministic mode's repeat check).
    std::vector<unsigned char> gradient_bytes() const {
        std::vector<unsigned char> out;
        for (const DeviceBuffer* b : {dq_.get(), dk_.get(), dv_.get()}) {
            const std::size_t at = out.size();
            out.resize(at + b->size());
            ex_.download(out.data() + at, b->get(), b->size());
        }
        return out;
    }

    Verdict check_outputs(bool backward, std::uint64_t seed, int threads) {
        const auto down16 = [&](const DeviceBuffer& b) {
            std::vector<std::uint16_t> h(b.size() / 2);
            ex_.download(h.data(), b.get(), b.size());
            return h;
        };
        const std::vector<std::uint16_t> o = down16(*o_);
        std::vector<float> lse(static_cast<std::size_t>(sizes_.lse));
        ex_.download(lse.data(), lse_->get(), lse.size() * 4);
        Outputs out{.o = o.data(), .lse = lse.data()};
        std::vector<std::uint16_t> dq, dk, dv;
        if (backward) {
            dq = down16(*dq_), dk = down16(*dk_), dv = down16(*dv_);
            out.dq = dq.data(), out.dk = dk.data(), out.dv = dv.data();
        }
        return verify(desc_, in_, out, seed, VerifyOptions{.backward = backward, .threads = threads, .cache = &refs_});
    }

private:
    std::unique_ptr<DeviceBuffer> buffer(std::int64_t bytes) {
        return std::make_unique<DeviceBuffer>(ex_, static_cast<std::size_t>(bytes));
    }
    std::unique_ptr<DeviceBuffer> upload(const std::vector<std::uint16_t>& host) {
        auto b = buffer(static_cast<std::int64_t>(host.size()) * 2);
        ex_.upload(b->get(), host.data(), host.size() * 2);
        return b;
    }

    Executor& ex_;
    Desc desc_;
    Sizes sizes_;
    Inputs in_;
    ReferenceCache refs_;  // every contender is checked on the same heads and rows of in_
    std::unique_ptr<DeviceBuffer> q_, k_, v_, dout_, o_, lse_, dq_, dk_, dv_;
};

struct Runner {
    Contender who;
    std::string kernel;
    std::function<void()> launch;
    bool backward = false;
};

// `plan` runs rigel (its kernel), and rigel_fa2 and rigel_decomposed (plans on those kernels, built by the caller).
Runner runner(Contender who, const Plan& plan, const DeviceCase& dc, Executor& ex, bool backward) {
    const cudaStream_t s = stream_of(ex);
    const ForwardArgs a = dc.args();
    const BackwardArgs ba = dc.backward_args();
    const Desc d = dc.desc();
    if (who == Contender::cudnn) {
        if (backward)
            return {who, cuda::vendor::cudnn_sdpa_version(), [d, ba, s] { cuda::vendor::cudnn_sdpa_backward(d, ba, s); },
                    true};
        return {who, cuda::vendor::cudnn_sdpa_version(), [d, a, s] { cuda::vendor::cudnn_sdpa_forward(d, a, s); }};
    }
    if (backward) return {who, plan.backward_kernel(), [&plan, ba, s] { plan.backward(ba, s); }, true};
    return {who, name(plan.kernel()), [&plan, a, s] { plan.forward(a, s); }};
}

// Poison what `r` writes, run it, check against float64. A backward runner
// reads the O and lse that the last forward left (the caller runs rigel's
// forward first; the backward's allowance takes their errors into account).
VerifyRow verify_one(const AttentionCase& c, DeviceCase& dc, const Runner& r, Executor& ex, std::uint64_t seed,
                     int threads) {
    VerifyRow row{.case_name = c.name, .desc = dc.desc(), .who = r.who, .kernel = r.kernel, .backward = r.backward};
    try {
        dc.poison(r.backward);
        r.launch();
        ex.synchronize();
        const Verdict v = dc.check_outputs(r.backward, seed, threads);
        row.pass = v.pass;
        row.err_max_scaled = v.err_max_scaled;
        row.checked_heads = v.checked_heads;
        row.checked_rows = v.checked_rows;
        row.reason = v.pass ? v.worst : v.reason;
    } catch (const std::exception& e) {
        row.pass = false;
        row.reason = std::string("error: ") + e.what();
    }
    return row;
}

// Times `candidate` against each of `against` in pairs (or alone when there is none).
void time_pairs(const AttentionCase& c, const DeviceCase& dc, const Runner& candidate,
                const std::vector<Runner>& against, const PairedConfig& timing, Executor& ex, BenchOutcome& out) {
    const double flop = candidate.backward ? backward_flops(dc.desc()) : forward_flops(dc.desc());
    BenchRow base{.case_name = c.name, .desc = dc.desc(), .kernel = candidate.kernel, .backward = candidate.backward};
    if (against.empty()) {
        const TimingConfig alone{.warmup_s = timing.warmup_s, .min_time_s = timing.min_time_s / 2};
        DeviceSampling sampling(ex);
        BenchRow row = base;
        row.baseline = Contender::none;
        row.stats.a = measure([&] { return ex.time_once(candidate.launch); }, alone);
        row.sample = sampling.stop();
        row.candidate_tflops = flop / row.stats.a.median_s * 1e-12;
        out.rows.push_back(std::move(row));
    }
    for (const Runner& b : against) {
        DeviceSampling sampling(ex);
        BenchRow row = base;
        row.baseline = b.who;
        row.stats = measure_paired([&] { return ex.time_once(candidate.launch); },
                                   [&] { return ex.time_once(b.launch); }, timing);
        row.sample = sampling.stop();
        row.candidate_tflops = flop / row.stats.a.median_s * 1e-12;
        row.baseline_tflops = flop / row.stats.b.median_s * 1e-12;
        out.rows.push_back(std::move(row));
    }
}

}  // namespace

std::vector<VerifyRow> verify_case(Executor& ex, const AttentionCase& c, Kernel kernel, bool baselines,
                                   std::uint64_t seed, int threads) {
    const Plan plan(c.desc, kernel);
    DeviceCase dc(ex, c.desc, seed);
    const bool cudnn = baselines && cuda::vendor::cudnn_sdpa_support(dc.desc()).empty();
    std::vector<VerifyRow> rows;
    if (cudnn) rows.push_back(verify_one(c, dc, runner(Contender::cudnn, plan, dc, ex, false), ex, seed, threads));
    // rigel's forward last, so that both backward passes read its O and lse.
    rows.push_back(verify_one(c, dc, runner(Contender::rigel, plan, dc, ex, false), ex, seed, threads));
    if (!rows.back().pass) return rows;
    rows.push_back(verify_one(c, dc, runner(Contender::rigel, plan, dc, ex, true), ex, seed, threads));
    // The deterministic mode (once per case: the backward pass is the same
    // whatever the forward kernel): checked against float64, then run again
    // on fresh poison and held to the same bytes.
    if (kernel == Kernel::fa2) {
        Desc det_desc = c.desc;
        det_desc.deterministic = true;
        const Plan det(det_desc, kernel);
        Runner r = runner(Contender::rigel, det, dc, ex, true);
        rows.push_back(verify_one(c, dc, r, ex, seed, threads));
        if (rows.back().pass) {
            const std::vector<unsigned char> first = dc.gradient_bytes();
            dc.poison(true);
            r.launch();
            ex.synchronize();
            if (dc.gradient_bytes() != first) {
                rows.back().pass = false;
                rows.back().reason = "a second run wrote other bytes: not deterministic";
            }
        }
    }
    if (baselines && cuda::vendor::cudnn_sdpa_backward_support(dc.desc()).empty())
        rows.push_back(verify_one(c, dc, runner(Contender::cudnn, plan, dc, ex, true), ex, seed, threads));
    return rows;
}

BenchOutcome bench_case(Executor& ex, const AttentionCase& c, Kernel kernel, const PairedConfig& timing,
                        std::uint64_t seed, int threads) {
    BenchOutcome out;
    const Plan plan(c.desc, kernel), rung2(c.desc, Kernel::fa2), rung1(c.desc, Kernel::decomposed);
    Desc det_desc = c.desc;
    det_desc.deterministic = true;
    const Plan det(det_desc, kernel);
    DeviceCase dc(ex, c.desc, seed);
    std::vector<Runner> against;
    const auto consider = [&](Runner r) {
        out.verified.push_back(verify_one(c, dc, r, ex, seed, threads));
        if (out.verified.back().pass) against.push_back(std::move(r));
    };

    // Forward: the baselines first, rigel's last (its O and lse stay for the backward pass).
    if (const std::string why = cuda::vendor::cudnn_sdpa_support(dc.desc()); !why.empty())
        out.skipped.push_back(std::string("cudnn: ") + why);
    else
        consider(runner(Contender::cudnn, plan, dc, ex, false));
    if (kernel == Kernel::fa3) consider(runner(Contender::rigel_fa2, rung2, dc, ex, false));
    // RIGEL's finding: the fused rungs against the decomposed one.
    if (kernel != Kernel::decomposed) consider(runner(Contender::rigel_decomposed, rung1, dc, ex, false));
    const Runner rigel = runner(Contender::rigel, plan, dc, ex, false);
    out.verified.push_back(verify_one(c, dc, rigel, ex, seed, threads));
    if (!out.verified.back().pass) return out;
    time_pairs(c, dc, rigel, against, timing, ex, out);

    // Backward, on rigel's O and lse.
    against.clear();
    const Runner rigel_bwd = runner(Contender::rigel, plan, dc, ex, true);
    out.verified.push_back(verify_one(c, dc, rigel_bwd, ex, seed, threads));
    if (!out.verified.back().pass) return out;
    if (const std::string why = cuda::vendor::cudnn_sdpa_backward_support(dc.desc()); !why.empty())
        out.skipped.push_back(std::string("cudnn backward: ") + why);
    else
        consider(runner(Contender::cudnn, plan, dc, ex, true));
    // The wgmma backward against the mma.sync one (rung 3 over rung 2).
    if (kernel == Kernel::fa3) consider(runner(Contender::rigel_fa2, rung2, dc, ex, true));
    // What the deterministic mode costs: the plan's backward (dQ by atomics) against the same
    // plan with dQ in a pass of its own.
    if (!c.desc.deterministic) consider(runner(Contender::rigel_deterministic, det, dc, ex, true));
    time_pairs(c, dc, rigel_bwd, against, timing, ex, out);
    return out;
}

}  // namespace rigel::attention
