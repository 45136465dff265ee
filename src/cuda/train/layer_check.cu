// `rigel train check` (src/train/layer_check.hpp): each training kernel
// against float64 on the same bf16 bytes.
//
// Allowances, per element (u = 2^-24, fp32's unit roundoff; ub = 2^-8, bf16's;
// a sum of n fp32 terms in any order is off by at most (n - 1) u sum |terms|,
// taken here as (n + 8) u sum |terms| to cover the few operations around it):
//   encoder forward   ub |ref| (one bf16 rounding of an exact fp32 sum of two bf16 values)
//   encoder backward  (n + 8) u sum |terms| over the n rows that add into an element
//   layernorm fwd     out: ub |ref| + 16 (C + 8) u (|norm w| + |b|): the mean and variance are fp32
//                     sums of C terms, each error carried through rstd into norm;
//                     mean: (C + 8) u mean|x|; rstd: 16 (C + 8) u rstd
//   bias backward     (N + 8) u sum |terms| (db's start value among them)
//   gelu backward     dh: ub |ref| + 16 u |dh| (|a| + |b|), GELU' = a + b its two terms as fp32 evaluates
//                     them; db: the bias rule over the products, plus their fp32 errors
//   layernorm bwd     dx: ub |ref| + 16 (C + 8) u rstd (|dnorm| + mean|dnorm| + |norm| mean|dnorm norm|), the
//                     reference taking the device's mean and rstd; dw, db: (N + 8) u sum |terms|
//   cross-entropy     loss: 2 (V + 16) u + 8 u (|lse| + |x_t|) (an fp32 sum of V exponentials, its log);
//                     dlogits: ub |ref| + (that loss allowance + 8 u) p |dloss| + 2^-133
//   adamw             params: 32 u (|p| + lr (|m^ / (sqrt(v^) + eps)| + wd |p|)) + lr m's allowance / (c1 (sqrt(v^)
//                     + eps)); m: 8 u (|m| + |g|); v: 8 u (|v| + g^2); the bf16
//                     copy must be exactly the fp32 result rounded to nearest even
// A NaN, or an element still holding the poison, fails whatever its allowance.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/formats.hpp"
#include "core/recipe.hpp"
#include "cuda/check.cuh"
#include "cuda/train/train_kernels.cuh"
#include "train/gpt2_reference.hpp"
#include "train/layer_check.hpp"
#include "train/optimizer.hpp"
#include "train/token_file.hpp"
#include "train/trainer.hpp"

namespace rigel::train {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kUb = 0x1p-8;

// A device array filled from (or read back into) a host vector.
template <class T>
class DeviceArray {
public:
    explicit DeviceArray(std::size_t n) : n_(n) { RIGEL_CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T))); }
    explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
    ~DeviceArray() { cudaFree(p_); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    T* get() const { return p_; }
    void upload(const std::vector<T>& host) {
        RIGEL_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }
    void poison() { RIGEL_CUDA_CHECK(cudaMemset(p_, 0xFF, n_ * sizeof(T))); }
    void zero() { RIGEL_CUDA_CHECK(cudaMemset(p_, 0, n_ * sizeof(T))); }
    std::vector<T> download() const {
        std::vector<T> h(n_);
        RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
        RIGEL_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
private:
    T* p_ = nullptr;
    std::size_t n_;
};

// Random bf16 bits, normal(mean, sd), and their values as doubles.
struct Bf16Data {
    std::vector<__nv_bfloat16> bits;
    std::vector<double> values;
};
Bf16Data random_bf16(std::size_t n, Rng& rng, double mean, double sd) {
    Bf16Data d;
    d.bits.resize(n);
    d.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        __nv_bfloat16_raw raw;
        raw.x = f32_to_bf16(static_cast<float>(mean + sd * rng.normal()));
        d.bits[i] = raw;
        d.values[i] = bf16_to_f32(raw.x);
    }
    return d;
}

double value(__nv_bfloat16 x) { return static_cast<double>(__bfloat162float(x)); }
double value(float x) { return static_cast<double>(x); }

// Accumulates the worst |device - ref| / allowance of one output.
class Judge {
public:
    Judge(LayerCheck& c, std::string output) : c_(c), output_(std::move(output)) {}
    void operator()(std::size_t i, double device, double ref, double allowed) {
        ++c_.checked;
        const double scaled = std::isnan(device) ? INFINITY : std::fabs(device - ref) / std::max(allowed, 1e-300);
        if (scaled > c_.err_max_scaled) {
            c_.err_max_scaled = scaled;
            c_.worst = output_ + "[" + std::to_string(i) + "]: device " + std::to_string(device) + ", float64 " +
                       std::to_string(ref);
        }
    }
private:
    LayerCheck& c_;
    std::string output_;
};

void finish(LayerCheck& c) { c.pass = c.checked > 0 && c.err_max_scaled <= 1.0; }

// The deterministic mode (train_kernels.cuh): its workspace, or none.
struct Workspace {
    std::optional<DeviceArray<float>> ws;
    Workspace(bool det, int N, int widest) {
        if (det) ws.emplace(cuda::train::deterministic_workspace_floats(N, widest));
    }
    float* get() const { return ws ? ws->get() : nullptr; }
    bool det() const { return ws.has_value(); }
};

// The deterministic mode's promise: `run` (which resets its outputs from the
// same bytes and returns them) gives the same bits twice. A difference fails
// the check, named.
template <typename Run>
void expect_repeat(LayerCheck& c, const Workspace& w, const std::string& what, Run run) {
    if (!w.det() || !c.pass) return;
    const auto first = run(), second = run();
    for (std::size_t i = 0; i < first.size(); ++i)
        if (std::memcmp(&first[i], &second[i], sizeof first[i]) != 0) {
            c.pass = false;
            c.worst = "deterministic mode: a second run differs in " + what + " at element " + std::to_string(i);
            return;
        }
}

std::string det_suffix(bool det) { return det ? ", deterministic" : ""; }

LayerCheck check_encoder(Rng& rng, bool det) {
    const int B = 4, T = 64, C = 768, Vp = 1024, N = B * T;
    LayerCheck c{.kernel = "encoder_forward, encoder_backward",
                 .shape = "N 256 x C 768, 100 distinct tokens" + det_suffix(det)};
    const Bf16Data wte = random_bf16(static_cast<std::size_t>(Vp) * C, rng, 0, 0.1);
    const Bf16Data wpe = random_bf16(static_cast<std::size_t>(T) * C, rng, 0, 0.1);
    const Bf16Data dout = random_bf16(static_cast<std::size_t>(N) * C, rng, 0, 1);
    std::vector<std::uint16_t> tokens(N);
    std::vector<int> tokens_int(N);
    for (int i = 0; i < N; ++i) tokens_int[i] = tokens[i] = static_cast<std::uint16_t>(rng.next() % 100);  // repeats
    DeviceArray<__nv_bfloat16> d_wte(wte.bits), d_wpe(wpe.bits), d_dout(dout.bits), d_out(static_cast<std::size_t>(N) * C);
    DeviceArray<std::uint16_t> d_tok(tokens);
    DeviceArray<float> d_dwte(std::vector<float>(static_cast<std::size_t>(Vp) * C, 0.0f)),
        d_dwpe(std::vector<float>(static_cast<std::size_t>(T) * C, 0.0f));
    d_out.poison();
    const Workspace w(det, N, C);
    // The deterministic mode's rows grouped by token, packed as the cuda backend packs them.
    const train::TokenRows g = train::group_rows_by_token(std::vector<std::int32_t>(tokens.begin(), tokens.end()));
    DeviceArray<std::int32_t> d_rows(g.packed());
    const cuda::train::TokenRows rows =
        cuda::train::token_rows_in(d_rows.get(), N, static_cast<int>(g.token_of.size()));
    const auto backward = [&] {
        if (w.det()) cuda::train::encoder_backward_ordered(d_dwte.get(), d_dwpe.get(), d_dout.get(), rows, N, T, C, nullptr);
        else cuda::train::encoder_backward(d_dwte.get(), d_dwpe.get(), d_dout.get(), d_tok.get(), N, T, C, nullptr);
    };
    cuda::train::encoder_forward(d_out.get(), d_tok.get(), d_wte.get(), d_wpe.get(), N, T, C, nullptr);
    backward();
    const auto out = d_out.download();
    const auto dwte = d_dwte.download(), dwpe = d_dwpe.download();
    std::vector<double> ref(out.size());
    ref::encoder_forward(ref, tokens_int, wte.values, wpe.values, B, T, C);
    Judge judge_out(c, "out");
    for (std::size_t i = 0; i < out.size(); ++i) judge_out(i, value(out[i]), ref[i], kUb * std::fabs(ref[i]) + 0x1p-133);
    std::vector<double> rte(dwte.size(), 0.0), rpe(dwpe.size(), 0.0), ate(dwte.size(), 0.0), ape(dwpe.size(), 0.0);
    std::vector<double> nte(dwte.size(), 0.0), npe(dwpe.size(), 0.0), absd(dout.values.size());
    for (std::size_t i = 0; i < absd.size(); ++i) absd[i] = std::fabs(dout.values[i]);
    ref::encoder_backward(rte, rpe, dout.values, tokens_int, B, T, C);
    ref::encoder_backward(ate, ape, absd, tokens_int, B, T, C);
    std::vector<double> ones(absd.size(), 1.0);
    ref::encoder_backward(nte, npe, ones, tokens_int, B, T, C);
    Judge judge_te(c, "dwte"), judge_pe(c, "dwpe");
    for (std::size_t i = 0; i < dwte.size(); ++i) judge_te(i, value(dwte[i]), rte[i], (nte[i] + 8) * kU * ate[i] + 1e-30);
    for (std::size_t i = 0; i < dwpe.size(); ++i) judge_pe(i, value(dwpe[i]), rpe[i], (npe[i] + 8) * kU * ape[i] + 1e-30);
    finish(c);
    expect_repeat(c, w, "dwte and dwpe", [&] {
        d_dwte.zero();
        d_dwpe.zero();
        backward();
        auto out = d_dwte.download();
        const auto pe = d_dwpe.download();
        out.insert(out.end(), pe.begin(), pe.end());
        return out;
    });
    return c;
}

// N rows of C: the kernels hold a row's 256-column pieces in registers, one
// instance per count (C 768: three; 264: two, the second ragged; 1024: four).
// N large enough that the backward pass's warps take several rows each.
LayerCheck check_layernorm(Rng& rng, int N, int C, bool det) {
    LayerCheck c{.kernel = "layernorm_forward, layernorm_backward",
                 .shape = "N " + std::to_string(N) + " x C " + std::to_string(C) + det_suffix(det)};
    const Workspace work(det, N, C);
    const Bf16Data x = random_bf16(static_cast<std::size_t>(N) * C, rng, 0.5, 2.0);
    const Bf16Data w = random_bf16(C, rng, 1.0, 0.2), b = random_bf16(C, rng, 0.0, 0.2);
    const Bf16Data dout = random_bf16(static_cast<std::size_t>(N) * C, rng, 0, 1);
    const Bf16Data dx0 = random_bf16(static_cast<std::size_t>(N) * C, rng, 0, 1);
    DeviceArray<__nv_bfloat16> d_x(x.bits), d_w(w.bits), d_b(b.bits), d_dout(dout.bits), d_dx(dx0.bits),
        d_out(static_cast<std::size_t>(N) * C);
    DeviceArray<float> d_mean(N), d_rstd(N), d_dw(std::vector<float>(C, 0.0f)), d_db(std::vector<float>(C, 0.0f));
    // dsum (the next bias's gradient, taken from dx as written) starts nonzero: the kernel adds.
    std::vector<float> dsum0(static_cast<std::size_t>(C));
    for (float& v : dsum0) v = static_cast<float>(rng.normal());
    DeviceArray<float> d_dsum(dsum0);
    d_out.poison();
    d_mean.poison();
    d_rstd.poison();
    cuda::train::layernorm_forward(d_out.get(), d_mean.get(), d_rstd.get(), d_x.get(), d_w.get(), d_b.get(), N, C,
                                   nullptr);
    cuda::train::layernorm_backward(d_dx.get(), d_dw.get(), d_db.get(), d_dout.get(), d_x.get(), d_w.get(),
                                    d_mean.get(), d_rstd.get(), N, C, nullptr, work.get(), d_dsum.get());
    const auto out = d_out.download();
    const auto mean = d_mean.download(), rstd = d_rstd.download(), dw = d_dw.download(), db = d_db.download();
    const auto dx = d_dx.download();
    const auto dsum = d_dsum.download();

    std::vector<double> rout(out.size()), rmean(N), rrstd(N);
    ref::layernorm_forward(rout, rmean, rrstd, x.values, w.values, b.values, N, C);
    Judge jo(c, "out"), jm(c, "mean"), jr(c, "rstd");
    const double acc = (C + 8) * kU;
    for (int n = 0; n < N; ++n) {
        double mean_abs = 0;
        for (int k = 0; k < C; ++k) mean_abs += std::fabs(x.values[static_cast<std::size_t>(n) * C + k]) / C;
        jm(static_cast<std::size_t>(n), value(mean[n]), rmean[n], acc * mean_abs + 1e-30);
        jr(static_cast<std::size_t>(n), value(rstd[n]), rrstd[n], 16 * acc * rrstd[n]);
        for (int k = 0; k < C; ++k) {
            const std::size_t i = static_cast<std::size_t>(n) * C + k;
            const double norm = (x.values[i] - rmean[n]) * rrstd[n];
            jo(i, value(out[i]), rout[i],
               kUb * std::fabs(rout[i]) + 16 * acc * (std::fabs(norm * w.values[k]) + std::fabs(b.values[k])) + 0x1p-133);
        }
    }
    // The backward pass against the reference fed the device's statistics.
    std::vector<double> dmean(mean.begin(), mean.end()), drstd(rstd.begin(), rstd.end());
    std::vector<double> rdx = dx0.values, rdw(C, 0.0), rdb(C, 0.0), adw(C, 0.0), adb(C, 0.0);
    ref::layernorm_backward(rdx, rdw, rdb, dout.values, x.values, w.values, dmean, drstd, N, C);
    Judge jdx(c, "dx"), jdw(c, "dw"), jdb(c, "db");
    for (int n = 0; n < N; ++n) {
        double mean_dnorm = 0, mean_dnorm_norm = 0;
        for (int k = 0; k < C; ++k) {
            const std::size_t i = static_cast<std::size_t>(n) * C + k;
            const double norm = (x.values[i] - dmean[n]) * drstd[n];
            mean_dnorm += std::fabs(dout.values[i] * w.values[k]) / C;
            mean_dnorm_norm += std::fabs(dout.values[i] * w.values[k] * norm) / C;
            adw[k] += std::fabs(dout.values[i] * norm);
            adb[k] += std::fabs(dout.values[i]);
        }
        for (int k = 0; k < C; ++k) {
            const std::size_t i = static_cast<std::size_t>(n) * C + k;
            const double norm = (x.values[i] - dmean[n]) * drstd[n];
            const double allowed = kUb * std::fabs(rdx[i]) +
                                   16 * acc * drstd[n] *
                                       (std::fabs(dout.values[i] * w.values[k]) + mean_dnorm + std::fabs(norm) * mean_dnorm_norm) +
                                   0x1p-133;
            jdx(i, value(dx[i]), rdx[i], allowed);
        }
    }
    for (int k = 0; k < C; ++k) {
        jdw(static_cast<std::size_t>(k), value(dw[k]), rdw[k], (N + 8) * kU * adw[k] + 1e-30);
        jdb(static_cast<std::size_t>(k), value(db[k]), rdb[k], (N + 8) * kU * adb[k] + 1e-30);
    }
    // dsum: the column sums of the bf16 dx the kernel wrote, in float64, on top of what it held.
    Judge jds(c, "dsum");
    for (int k = 0; k < C; ++k) {
        double ref = dsum0[k], abs_sum = std::fabs(dsum0[k]);
        for (int n = 0; n < N; ++n) {
            const double v = value(dx[static_cast<std::size_t>(n) * C + k]);
            ref += v;
            abs_sum += std::fabs(v);
        }
        jds(static_cast<std::size_t>(k), value(dsum[k]), ref, (N + 8) * kU * abs_sum + 1e-30);
    }
    // dsum null (the kernel without the sums): the same dx bits, and dw and db within the same bounds.
    const auto backward_again = [&](float* sums) {
        d_dx.upload(dx0.bits);
        d_dw.zero();
        d_db.zero();
        d_dsum.upload(dsum0);
        cuda::train::layernorm_backward(d_dx.get(), d_dw.get(), d_db.get(), d_dout.get(), d_x.get(), d_w.get(),
                                        d_mean.get(), d_rstd.get(), N, C, nullptr, work.get(), sums);
    };
    backward_again(nullptr);
    {
        const auto dx2 = d_dx.download();
        const auto dw2 = d_dw.download(), db2 = d_db.download();
        Judge jdx2(c, "dx (no dsum)"), jdw2(c, "dw (no dsum)"), jdb2(c, "db (no dsum)");
        for (std::size_t i = 0; i < dx.size(); ++i) jdx2(i, value(dx2[i]), value(dx[i]), 0.0);
        for (int k = 0; k < C; ++k) {
            jdw2(static_cast<std::size_t>(k), value(dw2[k]), rdw[k], (N + 8) * kU * adw[k] + 1e-30);
            jdb2(static_cast<std::size_t>(k), value(db2[k]), rdb[k], (N + 8) * kU * adb[k] + 1e-30);
        }
    }
    finish(c);
    expect_repeat(c, work, "dw, db and dsum", [&] {
        backward_again(d_dsum.get());
        auto out = d_dw.download();
        for (const auto& more : {d_db.download(), d_dsum.download()}) out.insert(out.end(), more.begin(), more.end());
        return out;
    });
    expect_repeat(c, work, "dx", [&] {
        backward_again(d_dsum.get());
        return d_dx.download();
    });
    return c;
}

// Three widths: 16-byte reads over many CTAs of 256 columns (2304), one CTA
// partly past C (200), and the one-column-per-lane path (C not a multiple of
// 8). db starts nonzero: the kernel adds.
LayerCheck check_bias_backward(Rng& rng, bool det) {
    const int N = 1000;
    LayerCheck c{.kernel = "bias_backward", .shape = "N 1000 x C 2304, 200, 100" + det_suffix(det)};
    const Workspace work(det, N, 2304);
    for (const int C : {2304, 200, 100}) {
        const Bf16Data dout = random_bf16(static_cast<std::size_t>(N) * C, rng, 0.1, 1);
        std::vector<float> db0(static_cast<std::size_t>(C));
        for (float& v : db0) v = static_cast<float>(rng.normal());
        DeviceArray<__nv_bfloat16> d_dout(dout.bits);
        DeviceArray<float> d_db(db0);
        cuda::train::bias_backward(d_db.get(), d_dout.get(), N, C, nullptr, work.get());
        const auto db = d_db.download();
        expect_repeat(c, work, "db (C " + std::to_string(C) + ")", [&] {
            d_db.upload(db0);
            cuda::train::bias_backward(d_db.get(), d_dout.get(), N, C, nullptr, work.get());
            return d_db.download();
        });
        Judge j(c, "db (C " + std::to_string(C) + ")");
        for (int k = 0; k < C; ++k) {
            double ref = db0[k], abs_sum = std::fabs(db0[k]);
            for (int n = 0; n < N; ++n) {
                const double v = dout.values[static_cast<std::size_t>(n) * C + k];
                ref += v;
                abs_sum += std::fabs(v);
            }
            j(static_cast<std::size_t>(k), value(db[k]), ref, (N + 8) * kU * abs_sum + 1e-30);
        }
    }
    finish(c);
    return c;
}

// The MLP's GELU backward with its bias gradient on N x 3072 (the width GPT-2
// small uses); dh's bits are the product's bf16 output, pre the saved
// pre-activation, db starts nonzero.
LayerCheck check_gelu_backward_bias(Rng& rng, bool det) {
    const int N = 1000, C = 3072;
    LayerCheck c{.kernel = "gelu_backward_bias", .shape = "N 1000 x C 3072" + det_suffix(det)};
    const Workspace work(det, N, C);
    const Bf16Data dh = random_bf16(static_cast<std::size_t>(N) * C, rng, 0, 1);
    const Bf16Data pre = random_bf16(static_cast<std::size_t>(N) * C, rng, 0, 2);
    std::vector<float> db0(C);
    for (float& v : db0) v = static_cast<float>(rng.normal());
    DeviceArray<__nv_bfloat16> d_dh(dh.bits), d_pre(pre.bits);
    DeviceArray<float> d_db(db0);
    cuda::train::gelu_backward_bias(d_dh.get(), d_pre.get(), d_db.get(), N, C, nullptr, work.get());
    const auto out = d_dh.download();
    const auto db = d_db.download();
    const double k = std::sqrt(2.0 / 3.141592653589793);
    std::vector<double> rdb(db0.begin(), db0.end()), adb(C, 0.0);
    Judge jdh(c, "dh"), jdb(c, "db");
    for (int n = 0; n < N; ++n)
        for (int col = 0; col < C; ++col) {
            const std::size_t i = static_cast<std::size_t>(n) * C + col;
            const double x = pre.values[i], arg = k * (x + 0.044715 * x * x * x), th = std::tanh(arg);
            // GELU' = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2). fp32 rounds t (and its
            // argument) to units of t's size, not of 1 + t's or 1 - t^2's: where x is far below
            // zero the two terms nearly cancel and the error is a few units of 1, not of GELU'.
            const double slope = 0.5 * std::fabs(x) * k * (1.0 + 3.0 * 0.044715 * x * x);
            const double ref = dh.values[i] * ref::gelu_derivative(x);
            const double fp32 = 16 * kU * std::fabs(dh.values[i]) *
                                (1.0 + slope + (1.0 - th * th) * std::fabs(arg) * (0.5 + 2.0 * slope));
            jdh(i, value(out[i]), ref, kUb * std::fabs(ref) + fp32 + 0x1p-133);
            rdb[col] += ref;
            adb[col] += std::fabs(ref) + fp32;
        }
    for (int col = 0; col < C; ++col)
        jdb(static_cast<std::size_t>(col), value(db[col]), rdb[col],
            (N + 8) * kU * (adb[col] + std::fabs(db0[col])) + adb[col] * 16 * kU + 1e-30);
    finish(c);
    expect_repeat(c, work, "db", [&] {
        d_dh.upload(dh.bits);
        d_db.upload(db0);
        cuda::train::gelu_backward_bias(d_dh.get(), d_pre.get(), d_db.get(), N, C, nullptr, work.get());
        return d_db.download();
    });
    return c;
}

// Rows of V logits padded to Vp: GPT-2's (by both kernels), a short row,
// rows that are no multiple of 8 (one logit per access) and rows longer than
// the staged kernel's shared memory holds; the kernel named in the shape.
LayerCheck check_crossentropy(Rng& rng, int N, int V, int Vp,
                              cuda::train::CeKernel wanted = cuda::train::CeKernel::automatic) {
    const float dloss = 1.0f / N;
    LayerCheck c{.kernel = "crossentropy_fused", .shape = "N " + std::to_string(N) + " x V " + std::to_string(V) +
                                                           (Vp != V ? " (padded " + std::to_string(Vp) + ")" : "")};
    Bf16Data logits = random_bf16(static_cast<std::size_t>(N) * Vp, rng, 0, 3.0);
    std::vector<std::uint16_t> targets(N);
    std::vector<int> targets_int(N);
    for (int n = 0; n < N; ++n) targets_int[n] = targets[n] = static_cast<std::uint16_t>(rng.next() % V);
    DeviceArray<__nv_bfloat16> d_logits(logits.bits);
    DeviceArray<std::uint16_t> d_t(targets);
    DeviceArray<float> d_loss(N);
    d_loss.poison();
    c.shape += std::string(", ") +
               cuda::train::crossentropy_kernel_name(cuda::train::crossentropy_kernel_for(Vp, d_logits.get(), wanted));
    cuda::train::crossentropy_fused(d_loss.get(), d_logits.get(), d_t.get(), dloss, N, V, Vp, nullptr, wanted);
    const auto loss = d_loss.download();
    const auto grad = d_logits.download();
    std::vector<double> rloss(N), probs(logits.values.size()), rgrad(logits.values.size(), 0.0);
    ref::crossentropy_forward(rloss, probs, logits.values, targets_int, N, V, Vp);
    ref::crossentropy_backward(rgrad, probs, targets_int, dloss, N, V, Vp);
    Judge jl(c, "loss"), jg(c, "dlogits");
    for (int n = 0; n < N; ++n) {
        const double xt = logits.values[static_cast<std::size_t>(n) * Vp + targets_int[n]];
        const double lse = rloss[n] + xt;
        const double allowed = 2 * (V + 16) * kU + 8 * kU * (std::fabs(lse) + std::fabs(xt));
        jl(static_cast<std::size_t>(n), value(loss[n]), rloss[n], allowed);
        for (int v = 0; v < Vp; ++v) {
            const std::size_t i = static_cast<std::size_t>(n) * Vp + v;
            jg(i, value(grad[i]), rgrad[i],
               kUb * std::fabs(rgrad[i]) + (allowed + 8 * kU) * probs[i] * dloss + 0x1p-133);
        }
    }
    finish(c);
    return c;
}

// The gradient norm's sum of squares over a length that fills neither its CTAs nor its grid-stride loop
// evenly, the sum starting from a nonzero value; and the same bits from a second run, in every mode:
// data-parallel ranks clip by it and must take the same step.
LayerCheck check_sum_squares(Rng& rng) {
    const std::int64_t n = 3'000'017;
    LayerCheck c{.kernel = "sum_squares", .shape = "n 3000017"};
    std::vector<float> g(static_cast<std::size_t>(n));
    for (float& v : g) v = static_cast<float>(0.01 * rng.normal());
    const float start = 0.5f;
    DeviceArray<float> d_g(g), d_sum(std::vector<float>{start}), work(cuda::train::sum_squares_workspace_floats());
    const auto run = [&] {
        d_sum.upload({start});
        work.poison();
        cuda::train::sum_squares(d_sum.get(), d_g.get(), n, nullptr, work.get());
        return d_sum.download();
    };
    const std::vector<float> first = run();
    double ref = start;
    for (const float v : g) ref += static_cast<double>(v) * v;
    Judge(c, "sum")(0, first[0], ref, (static_cast<double>(n) + 8) * kU * ref);
    finish(c);
    if (c.pass && std::memcmp(first.data(), run().data(), sizeof(float)) != 0) {
        c.pass = false;
        c.worst = "a second run's sum differs in its bits";
    }
    return c;
}

LayerCheck check_adamw(Rng& rng) {
    const std::int64_t n = 100003;
    LayerCheck c{.kernel = "adamw", .shape = "100003 parameters, step 7"};
    std::vector<float> p(n), g(n), m(n), v(n);
    std::vector<std::uint8_t> mask(n);
    for (std::int64_t i = 0; i < n; ++i) {
        p[i] = static_cast<float>(0.05 * rng.normal());
        g[i] = static_cast<float>(0.01 * rng.normal());
        m[i] = static_cast<float>(0.005 * rng.normal());
        v[i] = static_cast<float>(1e-4 * rng.uniform01());
        mask[i] = static_cast<std::uint8_t>(rng.next() & 1);
    }
    const AdamWSettings s{};
    const double lr = 3e-4, scale = 0.7;
    const std::int64_t t = 7;
    DeviceArray<float> d_p(p), d_g(g), d_m(m), d_v(v);
    DeviceArray<std::uint8_t> d_mask(mask);
    DeviceArray<__nv_bfloat16> d_pb(static_cast<std::size_t>(n));
    d_pb.poison();
    cuda::train::adamw(d_p.get(), d_pb.get(), d_g.get(), d_m.get(), d_v.get(), d_mask.get(), n, static_cast<float>(lr),
                       static_cast<float>(s.beta1), static_cast<float>(s.beta2), static_cast<float>(s.eps),
                       static_cast<float>(s.weight_decay), static_cast<float>(1 - std::pow(s.beta1, t)),
                       static_cast<float>(1 - std::pow(s.beta2, t)), static_cast<float>(scale), nullptr);
    const auto dp = d_p.download(), dm = d_m.download(), dv = d_v.download();
    const auto dpb = d_pb.download();
    std::vector<float> rp = p, rm = m, rv = v;
    adamw_step(rp, g, rm, rv, mask, s, lr, t, scale);
    Judge jp(c, "params"), jm(c, "m"), jv(c, "v"), jb(c, "params_bf16");
    const double c1 = 1 - std::pow(s.beta1, t), c2 = 1 - std::pow(s.beta2, t);
    for (std::int64_t i = 0; i < n; ++i) {
        const std::size_t k = static_cast<std::size_t>(i);
        const double gi = scale * g[k];
        // The step's two terms, each with its own rounding: the Adam ratio
        // (whose numerator m carries m's absolute error, large beside m when
        // beta1 m and (1 - beta1) g cancel) and the weight decay.
        const double denom = c1 * (std::sqrt(rv[k] / c2) + s.eps);
        const double adam = std::fabs(rm[k]) / denom, decay = mask[k] ? s.weight_decay * std::fabs(p[k]) : 0.0;
        const double m_err = 8 * kU * (std::fabs(m[k]) + std::fabs(gi)) / denom;
        jp(k, dp[k], rp[k], 32 * kU * (std::fabs(p[k]) + lr * (adam + decay)) + lr * m_err + 1e-30);
        jm(k, dm[k], rm[k], 8 * kU * (std::fabs(m[k]) + std::fabs(gi)) + 1e-30);
        jv(k, dv[k], rv[k], 8 * kU * (std::fabs(v[k]) + gi * gi) + 1e-30);
        // The bf16 copy: exactly the device's fp32 result, rounded.
        const double want = bf16_to_f32(f32_to_bf16(dp[k]));
        jb(k, value(dpb[k]), want, want == value(dpb[k]) ? 1.0 : 0x1p-200);
    }
    finish(c);
    return c;
}

// The whole step: the cuda backend against the float64 reference backend
// from the same initialization on the same batches of a learnable token
// stream. Their losses may differ by what bf16 weights and activations cost
// (the allowance: 2 % of the loss per step, over 5 steps); the loss must fall.
// The deterministic mode, or not: the cuda backend's losses beside the
// reference's, and with `det` a second deterministic backend from the same
// start whose weights and moments must equal the first's bit for bit after
// the same steps.
LayerCheck check_training_steps(Rng& rng, bool det) {
    const Gpt2Config c{.layers = 2, .heads = 2, .channels = 128, .max_seq_len = 64, .vocab_size = 500,
                       .padded_vocab_size = 512};
    const int B = 4, T = 64, steps = 5;
    LayerCheck check{.kernel = "training step (cuda backend vs reference)",
                     .shape = "2 layers, C 128, B 4 x T 64, 2 micro-batches" + det_suffix(det)};
    const std::vector<double> init = ref::init_params(c, rng.next());
    ModelState start;
    start.params.assign(init.begin(), init.end());
    start.m.assign(start.params.size(), 0.0f);
    start.v.assign(start.params.size(), 0.0f);
    auto reference = make_reference_backend(c);
    auto device = make_cuda_backend(c, B, T, {.deterministic = det});
    std::unique_ptr<TrainBackend> twin = det ? make_cuda_backend(c, B, T, {.deterministic = true}) : nullptr;
    reference->load(start);
    device->load(start);
    if (twin) twin->load(start);
    TrainOptions o;
    o.model = c;
    o.batch = B;
    o.seq = T;
    // Two micro-batches per step: the gradients accumulate across them.
    std::vector<std::int32_t> stream(static_cast<std::size_t>(2 * steps * B * T + 1));
    stream[0] = static_cast<std::int32_t>(rng.next() % 500);
    for (std::size_t i = 1; i < stream.size(); ++i) stream[i] = (stream[i - 1] * 7 + 3) % 500;
    double first = 0, last = 0;
    Judge judge(check, "loss at step");
    for (int s = 0; s < steps; ++s) {
        std::vector<Batch> micro(2);
        for (int m = 0; m < 2; ++m) {
            const std::size_t at = static_cast<std::size_t>((2 * s + m) * B * T);
            micro[static_cast<std::size_t>(m)].inputs.assign(stream.begin() + at, stream.begin() + at + B * T);
            micro[static_cast<std::size_t>(m)].targets.assign(stream.begin() + at + 1, stream.begin() + at + B * T + 1);
        }
        const double lr = 3e-3;
        const double want = reference->step(micro, lr, s + 1, o).loss;
        const double got = device->step(micro, lr, s + 1, o).loss;
        if (twin) (void)twin->step(micro, lr, s + 1, o);
        judge(static_cast<std::size_t>(s + 1), got, want, 0.02 * want);
        if (s == 0) first = got;
        last = got;
    }
    finish(check);
    if (check.pass && !(last < first)) {
        check.pass = false;
        check.worst = "the loss did not fall: " + std::to_string(first) + " at step 1, " + std::to_string(last) +
                      " at step " + std::to_string(steps);
    }
    if (check.pass && twin) {
        const ModelState a = device->save(), b = twin->save();
        for (const auto& [x, y, what] : {std::tuple{&a.params, &b.params, "weights"}, std::tuple{&a.m, &b.m, "m"},
                                         std::tuple{&a.v, &b.v, "v"}})
            if (std::memcmp(x->data(), y->data(), x->size() * sizeof(float)) != 0) {
                check.pass = false;
                check.worst = std::string("deterministic mode: two runs from the same start differ in AdamW's ") +
                              what + " after " + std::to_string(steps) + " steps";
                break;
            }
    }
    return check;
}

}  // namespace

std::vector<LayerCheck> check_layers(std::uint64_t seed) {
    Rng rng(seed);
    std::vector<LayerCheck> out;
    const std::vector<std::function<LayerCheck(Rng&)>> checks{
        [](Rng& r) { return check_encoder(r, false); },
        [](Rng& r) { return check_encoder(r, true); },
        [](Rng& r) { return check_layernorm(r, 3000, 768, false); },
        [](Rng& r) { return check_layernorm(r, 1500, 264, false); },
        [](Rng& r) { return check_layernorm(r, 1200, 1024, false); },
        [](Rng& r) { return check_layernorm(r, 3000, 768, true); },
        [](Rng& r) { return check_layernorm(r, 1200, 1024, true); },
        [](Rng& r) { return check_bias_backward(r, false); },
        [](Rng& r) { return check_bias_backward(r, true); },
        [](Rng& r) { return check_gelu_backward_bias(r, false); },
        [](Rng& r) { return check_gelu_backward_bias(r, true); },
        [](Rng& r) { return check_crossentropy(r, 64, 50257, 50304); },
        [](Rng& r) { return check_crossentropy(r, 64, 50257, 50304, cuda::train::CeKernel::streamed); },
        [](Rng& r) { return check_crossentropy(r, 16, 1000, 1000); },
        [](Rng& r) { return check_crossentropy(r, 8, 50257, 50257); },
        [](Rng& r) { return check_crossentropy(r, 4, 70001, 70008); },
        check_sum_squares,
        check_adamw,
        [](Rng& r) { return check_training_steps(r, false); },
        [](Rng& r) { return check_training_steps(r, true); }};
    for (const auto& check : checks) {
        try {
            out.push_back(check(rng));
        } catch (const std::exception& e) {
            out.push_back(LayerCheck{.kernel = "?", .shape = "", .pass = false, .err_max_scaled = INFINITY,
                                     .worst = std::string("error: ") + e.what()});
        }
    }
    return out;
}

}  // namespace rigel::train
