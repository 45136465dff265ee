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
        o_ = std::make_unique<DeviceBuffer>(ex, static_cast<std::size_t>(sizes_.o) * 2);
        lse_ = std::make_unique<DeviceBuffer>(ex, static_cast<std::size_t>(sizes_.lse) * 4);
    }

    const Desc& desc() const { return desc_; }
    ForwardArgs args() const {
        return {.q = q_->get(), .k = k_->get(), .v = v_->get(), .o = o_->get(), .lse = static_cast<float*>(lse_->get())};
    }

    void poison_outputs() {
        RIGEL_CUDA_CHECK(cudaMemsetAsync(o_->get(), kPoisonByte, o_->size(), stream_of(ex_)));
        RIGEL_CUDA_CHECK(cudaMemsetAsync(lse_->get(), kPoisonByte, lse_->size(), stream_of(ex_)));
        ex_.synchronize();
    }

    Verdict check_outputs(std::uint64_t seed, int threads) {
        std::vector<std::uint16_t> o(static_cast<std::size_t>(sizes_.o));
        std::vector<float> lse(static_cast<std::size_t>(sizes_.lse));
        ex_.download(o.data(), o_->get(), o.size() * 2);
        ex_.download(lse.data(), lse_->get(), lse.size() * 4);
        return verify(desc_, in_, Outputs{.o = o.data(), .lse = lse.data()}, seed,
                      VerifyOptions{.backward = false, .threads = threads});
    }

private:
    std::unique_ptr<DeviceBuffer> upload(const std::vector<std::uint16_t>& host) {
        auto b = std::make_unique<DeviceBuffer>(ex_, host.size() * 2);
        ex_.upload(b->get(), host.data(), host.size() * 2);
        return b;
    }

    Executor& ex_;
    Desc desc_;
    Sizes sizes_;
    Inputs in_;
    std::unique_ptr<DeviceBuffer> q_, k_, v_, o_, lse_;
};

struct Runner {
    Contender who;
    std::string kernel;
    std::function<void()> launch;
};

// `plan` runs rigel (its kernel) and rigel_fa2 (a plan on fa2, built by the caller).
Runner runner(Contender who, const Plan& plan, const DeviceCase& dc, Executor& ex) {
    const cudaStream_t s = stream_of(ex);
    const ForwardArgs a = dc.args();
    const Desc d = dc.desc();
    if (who == Contender::cudnn)
        return {who, cuda::vendor::cudnn_sdpa_version(), [d, a, s] { cuda::vendor::cudnn_sdpa_forward(d, a, s); }};
    return {who, name(plan.kernel()), [&plan, a, s] { plan.forward(a, s); }};
}

VerifyRow verify_one(const AttentionCase& c, DeviceCase& dc, const Runner& r, Executor& ex, std::uint64_t seed,
                     int threads) {
    VerifyRow row{.case_name = c.name, .desc = dc.desc(), .who = r.who, .kernel = r.kernel};
    try {
        dc.poison_outputs();
        r.launch();
        ex.synchronize();
        const Verdict v = dc.check_outputs(seed, threads);
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

}  // namespace

std::vector<VerifyRow> verify_case(Executor& ex, const AttentionCase& c, Kernel kernel, bool baselines,
                                   std::uint64_t seed, int threads) {
    const Plan plan(c.desc, kernel);
    DeviceCase dc(ex, c.desc, seed);
    std::vector<VerifyRow> rows{verify_one(c, dc, runner(Contender::rigel, plan, dc, ex), ex, seed, threads)};
    if (baselines && cuda::vendor::cudnn_sdpa_support(dc.desc()).empty())
        rows.push_back(verify_one(c, dc, runner(Contender::cudnn, plan, dc, ex), ex, seed, threads));
    return rows;
}

BenchOutcome bench_case(Executor& ex, const AttentionCase& c, Kernel kernel, const PairedConfig& timing,
                        std::uint64_t seed, int threads) {
    BenchOutcome out;
    const Plan plan(c.desc, kernel), rung2(c.desc, Kernel::fa2);
    DeviceCase dc(ex, c.desc, seed);
    const Runner rigel = runner(Contender::rigel, plan, dc, ex);
    out.verified.push_back(verify_one(c, dc, rigel, ex, seed, threads));
    const bool rigel_ok = out.verified.back().pass;
    std::vector<Runner> against;
    const auto consider = [&](Runner r) {
        out.verified.push_back(verify_one(c, dc, r, ex, seed, threads));
        if (out.verified.back().pass) against.push_back(std::move(r));
    };
    if (const std::string why = cuda::vendor::cudnn_sdpa_support(dc.desc()); !why.empty())
        out.skipped.push_back(std::string("cudnn: ") + why);
    else
        consider(runner(Contender::cudnn, plan, dc, ex));
    if (kernel != Kernel::fa2) consider(runner(Contender::rigel_fa2, rung2, dc, ex));
    if (!rigel_ok) return out;
    const double flop = forward_flops(dc.desc());
    if (against.empty()) {
        // Nothing to pair with: rigel timed alone, so its rate is still on record.
        const TimingConfig alone{.warmup_s = timing.warmup_s, .min_time_s = timing.min_time_s / 2};
        DeviceSampling sampling(ex);
        BenchRow row{.case_name = c.name, .desc = dc.desc(), .kernel = rigel.kernel, .baseline = Contender::none};
        row.stats.a = measure([&] { return ex.time_once(rigel.launch); }, alone);
        row.sample = sampling.stop();
        row.candidate_tflops = flop / row.stats.a.median_s * 1e-12;
        out.rows.push_back(std::move(row));
    }
    for (const Runner& b : against) {
        DeviceSampling sampling(ex);
        const PairedStats s = measure_paired([&] { return ex.time_once(rigel.launch); },
                                             [&] { return ex.time_once(b.launch); }, timing);
        BenchRow row{.case_name = c.name,
                     .desc = dc.desc(),
                     .kernel = rigel.kernel,
                     .baseline = b.who,
                     .stats = s,
                     .sample = sampling.stop()};
        row.candidate_tflops = flop / s.a.median_s * 1e-12;
        row.baseline_tflops = flop / s.b.median_s * 1e-12;
        out.rows.push_back(std::move(row));
    }
    return out;
}

}  // namespace rigel::attention
