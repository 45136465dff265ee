// The float64 GPT-2 (src/train/gpt2_reference.hpp): GPT-2 small's parameter
// count; each layer's hand-derived backward pass against central finite
// differences of its forward pass; the whole model's gradient against finite
// differences on a tiny configuration, every parameter; the initialization.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "core/recipe.hpp"
#include "train/gpt2.hpp"
#include "train/gpt2_reference.hpp"

using namespace rigel::train;
using rigel::Rng;

namespace {

std::vector<double> random_vector(std::size_t n, std::uint64_t seed, double sd = 1.0) {
    Rng rng(seed);
    std::vector<double> v(n);
    for (double& x : v) x = sd * rng.normal();
    return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// Checks d f / d x[i] == analytic[i] for every i by central differences, f
// being a scalar function of x (x is perturbed in place and restored).
void expect_gradient(std::vector<double>& x, const std::vector<double>& analytic,
                     const std::function<double()>& f, double h = 1e-6, double tol = 1e-6) {
    ASSERT_EQ(x.size(), analytic.size());
    double worst = 0;
    std::size_t worst_i = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = f();
        x[i] = keep - h;
        const double down = f();
        x[i] = keep;
        const double fd = (up - down) / (2 * h);
        const double err = std::fabs(fd - analytic[i]) / std::max(1.0, std::fabs(fd));
        if (err > worst) worst = err, worst_i = i;
    }
    EXPECT_LT(worst, tol) << "worst at element " << worst_i << ": analytic " << analytic[worst_i];
}

}  // namespace

TEST(Gpt2Model, Gpt2SmallHas124MParametersWithThePaddedVocabulary) {
    EXPECT_EQ(check(kGpt2Small), "");
    const ParamLayout l = param_layout(kGpt2Small);
    EXPECT_EQ(l.total, 124475904);  // 124,439,808 without the 47 padding rows of the token embedding
    EXPECT_EQ(l.count(Param::wte), 50304LL * 768);
    EXPECT_EQ(l.at(Param::wpe), 50304LL * 768);
    EXPECT_EQ(l.at(Param::lnfb) + l.count(Param::lnfb), l.total);
    EXPECT_EQ(name(Param::fcprojw), "fcprojw");
    // 6 per parameter per token, plus attention's 12 L T C: 746,855,424 + 113,246,208 at T = 1024.
    EXPECT_DOUBLE_EQ(training_flops_per_token(kGpt2Small, 1024), 860101632.0);
    // The cuda backend's memory at 16 x 1024 tokens: 19 bytes a parameter (2,365,042,176), 12 layers of saved
    // activations (403,701,760 each), the head with its bf16 logits (1,698,955,264), the backward buffers
    // (251,658,244) and attention's dQ workspace (51,118,080): 9.21 GB, under the 9.86 GB in use that the
    // H200 machine reported at the end of a step (the CUDA context and the GEMM workspaces besides).
    EXPECT_EQ(cuda_backend_bytes(kGpt2Small, 16, 1024), 9211194884LL);
    EXPECT_GT(cuda_backend_bytes(kGpt2Small, 32, 1024), cuda_backend_bytes(kGpt2Small, 16, 1024));
    EXPECT_NE(check(Gpt2Config{.heads = 5}), "");
    EXPECT_NE(check(Gpt2Config{.vocab_size = 50257, .padded_vocab_size = 50000}), "");
}

TEST(Gpt2Reference, LayerNormBackwardMatchesFiniteDifferences) {
    const int N = 3, C = 7;
    std::vector<double> x = random_vector(N * C, 1), w = random_vector(C, 2), b = random_vector(C, 3),
                        r = random_vector(N * C, 4);
    std::vector<double> out(N * C), mean(N), rstd(N);
    const auto f = [&] {
        ref::layernorm_forward(out, mean, rstd, x, w, b, N, C);
        return dot(out, r);
    };
    f();
    std::vector<double> dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
    ref::layernorm_backward(dx, dw, db, r, x, w, mean, rstd, N, C);
    expect_gradient(x, dx, f);
    expect_gradient(w, dw, f);
    expect_gradient(b, db, f);
}

TEST(Gpt2Reference, MatmulBackwardMatchesFiniteDifferences) {
    const int N = 4, C = 5, OC = 6;
    std::vector<double> x = random_vector(N * C, 5), w = random_vector(OC * C, 6), bias = random_vector(OC, 7),
                        r = random_vector(N * OC, 8), out(N * OC);
    const auto f = [&] {
        ref::matmul_forward(out, x, w, bias, N, C, OC);
        return dot(out, r);
    };
    std::vector<double> dx(N * C, 0.0), dw(OC * C, 0.0), db(OC, 0.0);
    ref::matmul_backward(dx, dw, db, r, x, w, N, C, OC);
    expect_gradient(x, dx, f);
    expect_gradient(w, dw, f);
    expect_gradient(bias, db, f);
}

TEST(Gpt2Reference, CausalAttentionBackwardMatchesFiniteDifferences) {
    const int B = 2, T = 5, C = 8, NH = 2;
    std::vector<double> qkv = random_vector(B * T * 3 * C, 9), r = random_vector(B * T * C, 10);
    std::vector<double> out(B * T * C), att(B * NH * T * T);
    const auto f = [&] {
        ref::attention_forward(out, att, qkv, B, T, C, NH);
        return dot(out, r);
    };
    f();
    // Causal: the first query sees only itself, so its output is v_0 exactly.
    for (int i = 0; i < C / NH; ++i) EXPECT_DOUBLE_EQ(out[i], qkv[2 * C + i]);
    std::vector<double> dqkv(qkv.size(), 0.0);
    ref::attention_backward(dqkv, r, qkv, att, B, T, C, NH);
    expect_gradient(qkv, dqkv, f);
}

TEST(Gpt2Reference, GeluAndCrossEntropyBackwardMatchFiniteDifferences) {
    std::vector<double> x = random_vector(50, 11, 2.0), r = random_vector(50, 12), out(50);
    const auto g = [&] {
        ref::gelu_forward(out, x);
        return dot(out, r);
    };
    std::vector<double> dx(50, 0.0);
    ref::gelu_backward(dx, x, r);
    expect_gradient(x, dx, g);
    EXPECT_NEAR(ref::gelu(1.0), 0.8411919906082768, 1e-15);  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715))

    const int N = 3, V = 5, Vp = 8;
    std::vector<double> logits = random_vector(N * Vp, 13), probs(N * Vp), losses(N);
    const std::vector<int> targets{4, 0, 2};
    const auto f = [&] {
        ref::crossentropy_forward(losses, probs, logits, targets, N, V, Vp);
        return std::accumulate(losses.begin(), losses.end(), 0.0);
    };
    f();
    std::vector<double> dlogits(N * Vp, 0.0);
    ref::crossentropy_backward(dlogits, probs, targets, 1.0, N, V, Vp);
    expect_gradient(logits, dlogits, f);
    for (int n = 0; n < N; ++n)
        for (int v = V; v < Vp; ++v) EXPECT_EQ(dlogits[static_cast<std::size_t>(n * Vp + v)], 0.0) << "padding";
}

// The whole model: every parameter's gradient against central differences.
TEST(Gpt2Reference, WholeModelGradientMatchesFiniteDifferences) {
    const Gpt2Config c{.layers = 2, .heads = 2, .channels = 8, .max_seq_len = 6, .vocab_size = 11,
                       .padded_vocab_size = 16};
    const int B = 2, T = 5;
    // Larger weights than GPT-2's 0.02, so every path carries a gradient well above rounding.
    std::vector<double> params = ref::init_params(c, 21);
    Rng rng(22);
    for (double& p : params) p += 0.3 * rng.normal();
    const ParamLayout l = param_layout(c);
    for (std::int64_t i = static_cast<std::int64_t>(c.vocab_size) * c.channels; i < l.count(Param::wte); ++i)
        params[static_cast<std::size_t>(i)] = 0.0;  // padding rows stay zero, as init leaves them
    const std::vector<int> inputs{1, 5, 3, 10, 0, 7, 7, 2, 9, 4}, targets{5, 3, 10, 0, 6, 7, 2, 9, 4, 1};
    std::vector<double> grads;
    const double loss = ref::loss(c, params, inputs, targets, B, T, &grads);
    EXPECT_TRUE(std::isfinite(loss));
    ASSERT_EQ(static_cast<std::int64_t>(grads.size()), l.total);
    expect_gradient(params, grads, [&] { return ref::loss(c, params, inputs, targets, B, T); }, 1e-5, 1e-7);
    // Rows of the padded vocabulary get no gradient; unused positions neither.
    for (std::int64_t i = static_cast<std::int64_t>(c.vocab_size) * c.channels; i < l.count(Param::wte); ++i)
        EXPECT_EQ(grads[static_cast<std::size_t>(i)], 0.0);
    for (std::int64_t i = l.at(Param::wpe) + static_cast<std::int64_t>(T) * c.channels;
         i < l.at(Param::wpe) + l.count(Param::wpe); ++i)
        EXPECT_EQ(grads[static_cast<std::size_t>(i)], 0.0);
}

TEST(Gpt2Reference, InitializationIsGpt2sAndTheFirstLossIsNearLogV) {
    const Gpt2Config c{.layers = 4, .heads = 4, .channels = 64, .max_seq_len = 32, .vocab_size = 300,
                       .padded_vocab_size = 384};
    const std::vector<double> p = ref::init_params(c, 7), again = ref::init_params(c, 7);
    EXPECT_EQ(p, again);
    const ParamLayout l = param_layout(c);
    const auto stddev = [&](Param which) {
        double s = 0;
        for (std::int64_t i = 0; i < l.count(which); ++i) s += p[static_cast<std::size_t>(l.at(which) + i)] *
                                                              p[static_cast<std::size_t>(l.at(which) + i)];
        return std::sqrt(s / static_cast<double>(l.count(which)));
    };
    EXPECT_NEAR(stddev(Param::qkvw), 0.02, 0.002);
    EXPECT_NEAR(stddev(Param::fcprojw), 0.02 / std::sqrt(8.0), 0.001);
    EXPECT_EQ(p[static_cast<std::size_t>(l.at(Param::ln2w))], 1.0);
    EXPECT_EQ(p[static_cast<std::size_t>(l.at(Param::fcb))], 0.0);
    for (std::int64_t i = static_cast<std::int64_t>(c.vocab_size) * c.channels; i < l.count(Param::wte); ++i)
        ASSERT_EQ(p[static_cast<std::size_t>(i)], 0.0);
    std::vector<int> tokens(2 * 16);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>((i * 37) % 300);
    const std::vector<int> inputs(tokens.begin(), tokens.end()), targets(tokens.rbegin(), tokens.rend());
    EXPECT_NEAR(ref::loss(c, p, inputs, targets, 2, 16), std::log(300.0), 0.05);
}
