// GPT-2 in float64: the layers, forward and backward, and the whole model
// (gpt2_reference.hpp). Plain loops, written for clarity, not speed: the
// model it is used on in tests is tiny, and a device layer's check calls one
// layer on one problem.
#include "train/gpt2_reference.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/recipe.hpp"

namespace rigel::train::ref {
namespace {

constexpr double kLayerNormEps = 1e-5;

std::span<const double> tensor(std::span<const double> params, const ParamLayout& l, Param p, int layer = 0) {
    const std::int64_t per_layer = p == Param::wte || p == Param::wpe || p == Param::lnfw || p == Param::lnfb
                                       ? l.count(p)
                                       : l.count(p) / (l.count(Param::ln1w) / l.count(Param::lnfw));
    return params.subspan(static_cast<std::size_t>(l.at(p) + layer * per_layer), static_cast<std::size_t>(per_layer));
}

std::span<double> tensor(std::span<double> params, const ParamLayout& l, Param p, int layer = 0) {
    const auto c = tensor(std::span<const double>(params), l, p, layer);
    return params.subspan(static_cast<std::size_t>(c.data() - params.data()), c.size());
}

}  // namespace

void encoder_forward(std::span<double> out, std::span<const int> tokens, std::span<const double> wte,
                     std::span<const double> wpe, int B, int T, int C) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const std::size_t row = static_cast<std::size_t>(b * T + t);
            const int tok = tokens[row];
            for (int c = 0; c < C; ++c)
                out[row * C + c] = wte[static_cast<std::size_t>(tok) * C + c] + wpe[static_cast<std::size_t>(t) * C + c];
        }
}

void encoder_backward(std::span<double> dwte, std::span<double> dwpe, std::span<const double> dout,
                      std::span<const int> tokens, int B, int T, int C) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const std::size_t row = static_cast<std::size_t>(b * T + t);
            const int tok = tokens[row];
            for (int c = 0; c < C; ++c) {
                dwte[static_cast<std::size_t>(tok) * C + c] += dout[row * C + c];
                dwpe[static_cast<std::size_t>(t) * C + c] += dout[row * C + c];
            }
        }
}

void layernorm_forward(std::span<double> out, std::span<double> mean, std::span<double> rstd,
                       std::span<const double> inp, std::span<const double> w, std::span<const double> b, int N,
                       int C) {
    for (int n = 0; n < N; ++n) {
        const double* x = inp.data() + static_cast<std::size_t>(n) * C;
        double m = 0;
        for (int c = 0; c < C; ++c) m += x[c];
        m /= C;
        double v = 0;
        for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
        v /= C;
        const double s = 1.0 / std::sqrt(v + kLayerNormEps);
        for (int c = 0; c < C; ++c) out[static_cast<std::size_t>(n) * C + c] = (x[c] - m) * s * w[c] + b[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

void layernorm_backward(std::span<double> dinp, std::span<double> dw, std::span<double> db,
                        std::span<const double> dout, std::span<const double> inp, std::span<const double> w,
                        std::span<const double> mean, std::span<const double> rstd, int N, int C) {
    for (int n = 0; n < N; ++n) {
        const std::size_t row = static_cast<std::size_t>(n) * C;
        double dnorm_mean = 0, dnorm_norm_mean = 0;
        for (int c = 0; c < C; ++c) {
            const double norm = (inp[row + c] - mean[n]) * rstd[n];
            const double dnorm = w[c] * dout[row + c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int c = 0; c < C; ++c) {
            const double norm = (inp[row + c] - mean[n]) * rstd[n];
            const double dnorm = w[c] * dout[row + c];
            db[c] += dout[row + c];
            dw[c] += norm * dout[row + c];
            dinp[row + c] += rstd[n] * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
        }
    }
}

void matmul_forward(std::span<double> out, std::span<const double> inp, std::span<const double> w,
                    std::span<const double> bias, int N, int C, int OC) {
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < OC; ++o) {
            double s = bias.empty() ? 0.0 : bias[o];
            for (int c = 0; c < C; ++c) s += inp[static_cast<std::size_t>(n) * C + c] * w[static_cast<std::size_t>(o) * C + c];
            out[static_cast<std::size_t>(n) * OC + o] = s;
        }
}

void matmul_backward(std::span<double> dinp, std::span<double> dw, std::span<double> dbias,
                     std::span<const double> dout, std::span<const double> inp, std::span<const double> w, int N,
                     int C, int OC) {
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < OC; ++o) {
            const double d = dout[static_cast<std::size_t>(n) * OC + o];
            if (!dbias.empty()) dbias[o] += d;
            for (int c = 0; c < C; ++c) {
                dinp[static_cast<std::size_t>(n) * C + c] += d * w[static_cast<std::size_t>(o) * C + c];
                dw[static_cast<std::size_t>(o) * C + c] += d * inp[static_cast<std::size_t>(n) * C + c];
            }
        }
}

void attention_forward(std::span<double> out, std::span<double> att, std::span<const double> qkv, int B, int T, int C,
                       int NH) {
    const int hs = C / NH;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
    const auto q = [&](int b, int t, int h) { return qkv.data() + static_cast<std::size_t>(b * T + t) * 3 * C + h * hs; };
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int t = 0; t < T; ++t) {
                double* a = att.data() + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                double mx = -INFINITY;
                for (int t2 = 0; t2 <= t; ++t2) {
                    double s = 0;
                    for (int i = 0; i < hs; ++i) s += q(b, t, h)[i] * q(b, t2, h)[C + i];
                    a[t2] = s * scale;
                    mx = std::max(mx, a[t2]);
                }
                double sum = 0;
                for (int t2 = 0; t2 <= t; ++t2) sum += (a[t2] = std::exp(a[t2] - mx));
                for (int t2 = 0; t2 < T; ++t2) a[t2] = t2 <= t ? a[t2] / sum : 0.0;
                double* o = out.data() + static_cast<std::size_t>(b * T + t) * C + h * hs;
                for (int i = 0; i < hs; ++i) {
                    double s = 0;
                    for (int t2 = 0; t2 <= t; ++t2) s += a[t2] * q(b, t2, h)[2 * C + i];
                    o[i] = s;
                }
            }
}

void attention_backward(std::span<double> dqkv, std::span<const double> dout, std::span<const double> qkv,
                        std::span<const double> att, int B, int T, int C, int NH) {
    const int hs = C / NH;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
    const auto at = [&](int b, int t, int h) { return static_cast<std::size_t>(b * T + t) * 3 * C + h * hs; };
    std::vector<double> datt(static_cast<std::size_t>(T));
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int t = 0; t < T; ++t) {
                const double* a = att.data() + ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
                const double* d = dout.data() + static_cast<std::size_t>(b * T + t) * C + h * hs;
                // out = sum a v: datt = dout . v, dv += a dout
                double dot = 0;
                for (int t2 = 0; t2 <= t; ++t2) {
                    double s = 0;
                    for (int i = 0; i < hs; ++i) {
                        s += d[i] * qkv[at(b, t2, h) + 2 * C + i];
                        dqkv[at(b, t2, h) + 2 * C + i] += a[t2] * d[i];
                    }
                    datt[static_cast<std::size_t>(t2)] = s;
                    dot += a[t2] * s;
                }
                // softmax: dpre = a (datt - sum a datt); pre = scale q . k
                for (int t2 = 0; t2 <= t; ++t2) {
                    const double dpre = a[t2] * (datt[static_cast<std::size_t>(t2)] - dot) * scale;
                    for (int i = 0; i < hs; ++i) {
                        dqkv[at(b, t, h) + i] += dpre * qkv[at(b, t2, h) + C + i];
                        dqkv[at(b, t2, h) + C + i] += dpre * qkv[at(b, t, h) + i];
                    }
                }
            }
}

double gelu(double x) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_derivative(double x) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    const double u = k * (x + 0.044715 * x * x * x);
    const double th = std::tanh(u);
    const double sech2 = 1.0 - th * th;
    return 0.5 * (1.0 + th) + 0.5 * x * sech2 * k * (1.0 + 3.0 * 0.044715 * x * x);
}

void gelu_forward(std::span<double> out, std::span<const double> inp) {
    for (std::size_t i = 0; i < inp.size(); ++i) out[i] = gelu(inp[i]);
}

void gelu_backward(std::span<double> dinp, std::span<const double> inp, std::span<const double> dout) {
    for (std::size_t i = 0; i < inp.size(); ++i) dinp[i] += gelu_derivative(inp[i]) * dout[i];
}

void crossentropy_forward(std::span<double> losses, std::span<double> probs, std::span<const double> logits,
                          std::span<const int> targets, int N, int V, int Vp) {
    for (int n = 0; n < N; ++n) {
        const double* x = logits.data() + static_cast<std::size_t>(n) * Vp;
        double* p = probs.data() + static_cast<std::size_t>(n) * Vp;
        const double mx = *std::max_element(x, x + V);
        double sum = 0;
        for (int v = 0; v < V; ++v) sum += (p[v] = std::exp(x[v] - mx));
        for (int v = 0; v < Vp; ++v) p[v] = v < V ? p[v] / sum : 0.0;
        losses[n] = -std::log(p[targets[n]]);
    }
}

void crossentropy_backward(std::span<double> dlogits, std::span<const double> probs, std::span<const int> targets,
                           double dloss, int N, int V, int Vp) {
    for (int n = 0; n < N; ++n)
        for (int v = 0; v < Vp; ++v) {
            const std::size_t i = static_cast<std::size_t>(n) * Vp + v;
            dlogits[i] += v < V ? (probs[i] - (v == targets[n] ? 1.0 : 0.0)) * dloss : 0.0;
        }
}

Vec init_params(const Gpt2Config& c, std::uint64_t seed) {
    const ParamLayout l = param_layout(c);
    Vec p(static_cast<std::size_t>(l.total), 0.0);
    Rng rng(seed);
    const double residual_scale = 1.0 / std::sqrt(2.0 * c.layers);
    for (int i = 0; i < kParamTensors; ++i) {
        const Param which = static_cast<Param>(i);
        auto t = std::span<double>(p).subspan(static_cast<std::size_t>(l.offset[i]), static_cast<std::size_t>(l.size[i]));
        switch (which) {
            case Param::ln1w: case Param::ln2w: case Param::lnfw:
                std::fill(t.begin(), t.end(), 1.0);
                break;
            case Param::ln1b: case Param::ln2b: case Param::lnfb: case Param::qkvb: case Param::attprojb:
            case Param::fcb: case Param::fcprojb:
                break;  // zeros
            default: {
                const double sd = 0.02 * (which == Param::attprojw || which == Param::fcprojw ? residual_scale : 1.0);
                for (double& x : t) x = sd * rng.normal();
            }
        }
    }
    // The padded vocabulary rows are never a target and never a token: zero, and kept zero by their zero gradient.
    std::fill(p.begin() + l.at(Param::wte) + static_cast<std::int64_t>(c.vocab_size) * c.channels,
              p.begin() + l.at(Param::wte) + l.count(Param::wte), 0.0);
    return p;
}

namespace {

// The activations the backward pass reads, per layer, and the head's.
struct LayerActs {
    Vec in, ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu;
};
struct Forward {
    std::vector<LayerActs> layers;
    Vec x, lnf, lnf_mean, lnf_rstd, logits;
};

Forward forward_pass(const Gpt2Config& c, std::span<const double> params, std::span<const int> inputs, int B, int T) {
    if (const std::string why = check(c); !why.empty()) throw std::invalid_argument(why);
    const ParamLayout l = param_layout(c);
    if (static_cast<std::int64_t>(params.size()) != l.total) throw std::invalid_argument("parameter count mismatch");
    if (B < 1 || T < 1 || T > c.max_seq_len || inputs.size() != static_cast<std::size_t>(B * T))
        throw std::invalid_argument("inputs must hold B x T tokens, T at most the context");
    const int L = c.layers, C = c.channels, NH = c.heads, Vp = c.padded_vocab_size, N = B * T;
    const auto sz = [](std::int64_t n) { return static_cast<std::size_t>(n); };
    const auto P = [&](Param p, int layer = 0) { return tensor(params, l, p, layer); };
    Forward f;
    f.layers.resize(sz(L));
    Vec& x = f.x;
    x.resize(sz(N) * C);
    encoder_forward(x, inputs, P(Param::wte), P(Param::wpe), B, T, C);
    for (int i = 0; i < L; ++i) {
        LayerActs& a = f.layers[sz(i)];
        a.in = x;
        a.ln1.resize(sz(N) * C), a.ln1_mean.resize(sz(N)), a.ln1_rstd.resize(sz(N));
        layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.in, P(Param::ln1w, i), P(Param::ln1b, i), N, C);
        a.qkv.resize(sz(N) * 3 * C);
        matmul_forward(a.qkv, a.ln1, P(Param::qkvw, i), P(Param::qkvb, i), N, C, 3 * C);
        a.att.resize(sz(B) * NH * T * T), a.atty.resize(sz(N) * C);
        attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
        Vec proj(sz(N) * C);
        matmul_forward(proj, a.atty, P(Param::attprojw, i), P(Param::attprojb, i), N, C, C);
        a.res2.resize(sz(N) * C);
        for (std::size_t j = 0; j < a.res2.size(); ++j) a.res2[j] = a.in[j] + proj[j];
        a.ln2.resize(sz(N) * C), a.ln2_mean.resize(sz(N)), a.ln2_rstd.resize(sz(N));
        layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, P(Param::ln2w, i), P(Param::ln2b, i), N, C);
        a.fch.resize(sz(N) * 4 * C), a.fch_gelu.resize(sz(N) * 4 * C);
        matmul_forward(a.fch, a.ln2, P(Param::fcw, i), P(Param::fcb, i), N, C, 4 * C);
        gelu_forward(a.fch_gelu, a.fch);
        Vec fcproj(sz(N) * C);
        matmul_forward(fcproj, a.fch_gelu, P(Param::fcprojw, i), P(Param::fcprojb, i), N, 4 * C, C);
        for (std::size_t j = 0; j < x.size(); ++j) x[j] = a.res2[j] + fcproj[j];
    }
    f.lnf.resize(sz(N) * C), f.lnf_mean.resize(sz(N)), f.lnf_rstd.resize(sz(N));
    layernorm_forward(f.lnf, f.lnf_mean, f.lnf_rstd, x, P(Param::lnfw), P(Param::lnfb), N, C);
    f.logits.resize(sz(N) * Vp);
    matmul_forward(f.logits, f.lnf, P(Param::wte), {}, N, C, Vp);  // tied LM head, no bias
    return f;
}

}  // namespace

Vec logits(const Gpt2Config& c, std::span<const double> params, std::span<const int> inputs, int B, int T) {
    return forward_pass(c, params, inputs, B, T).logits;
}

double loss(const Gpt2Config& c, std::span<const double> params, std::span<const int> inputs,
            std::span<const int> targets, int B, int T, Vec* grads) {
    if (targets.size() != inputs.size()) throw std::invalid_argument("inputs and targets must hold B x T tokens");
    Forward f = forward_pass(c, params, inputs, B, T);
    const ParamLayout l = param_layout(c);
    const int L = c.layers, C = c.channels, NH = c.heads, V = c.vocab_size, Vp = c.padded_vocab_size, N = B * T;
    const auto sz = [](std::int64_t n) { return static_cast<std::size_t>(n); };
    const auto P = [&](Param p, int layer = 0) { return tensor(params, l, p, layer); };
    const std::vector<LayerActs>& acts = f.layers;
    const Vec &x = f.x, &lnf = f.lnf, &lnf_mean = f.lnf_mean, &lnf_rstd = f.lnf_rstd;
    Vec probs(sz(N) * Vp), losses(sz(N));
    crossentropy_forward(losses, probs, f.logits, targets, N, V, Vp);
    double mean_loss = 0;
    for (double v : losses) mean_loss += v;
    mean_loss /= N;
    if (!grads) return mean_loss;

    grads->assign(sz(l.total), 0.0);
    std::span<double> g(*grads);
    const auto G = [&](Param p, int layer = 0) { return tensor(g, l, p, layer); };
    Vec dlogits(sz(N) * Vp, 0.0);
    crossentropy_backward(dlogits, probs, targets, 1.0 / N, N, V, Vp);
    Vec dlnf(sz(N) * C, 0.0), dx(sz(N) * C, 0.0);
    matmul_backward(dlnf, G(Param::wte), {}, dlogits, lnf, P(Param::wte), N, C, Vp);
    layernorm_backward(dx, G(Param::lnfw), G(Param::lnfb), dlnf, x, P(Param::lnfw), lnf_mean, lnf_rstd, N, C);
    for (int i = L - 1; i >= 0; --i) {
        const LayerActs& a = acts[sz(i)];
        // x = res2 + fcproj: dres2 = dx (residual), dfcproj = dx
        Vec dres2 = dx, dfch_gelu(sz(N) * 4 * C, 0.0), dfch(sz(N) * 4 * C, 0.0), dln2(sz(N) * C, 0.0);
        matmul_backward(dfch_gelu, G(Param::fcprojw, i), G(Param::fcprojb, i), dx, a.fch_gelu, P(Param::fcprojw, i), N,
                        4 * C, C);
        gelu_backward(dfch, a.fch, dfch_gelu);
        matmul_backward(dln2, G(Param::fcw, i), G(Param::fcb, i), dfch, a.ln2, P(Param::fcw, i), N, C, 4 * C);
        layernorm_backward(dres2, G(Param::ln2w, i), G(Param::ln2b, i), dln2, a.res2, P(Param::ln2w, i), a.ln2_mean,
                           a.ln2_rstd, N, C);
        // res2 = in + proj
        Vec din = dres2, datty(sz(N) * C, 0.0), dqkv(sz(N) * 3 * C, 0.0), dln1(sz(N) * C, 0.0);
        matmul_backward(datty, G(Param::attprojw, i), G(Param::attprojb, i), dres2, a.atty, P(Param::attprojw, i), N,
                        C, C);
        attention_backward(dqkv, datty, a.qkv, a.att, B, T, C, NH);
        matmul_backward(dln1, G(Param::qkvw, i), G(Param::qkvb, i), dqkv, a.ln1, P(Param::qkvw, i), N, C, 3 * C);
        layernorm_backward(din, G(Param::ln1w, i), G(Param::ln1b, i), dln1, a.in, P(Param::ln1w, i), a.ln1_mean,
                           a.ln1_rstd, N, C);
        dx = std::move(din);
    }
    encoder_backward(G(Param::wte), G(Param::wpe), dx, inputs, B, T, C);
    return mean_loss;
}

}  // namespace rigel::train::ref
