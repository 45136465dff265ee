// GPT-2's forward and backward pass in float64 on the host: the reference
// every device layer of `rigel train` is verified against, and, whole, the
// model whose gradients a finite-difference check confirms
// (tests/host/test_gpt2_reference.cpp).
//
// The backward pass is derived by hand, layer by layer (as llm.c does), not
// by an autodiff engine. Each layer is a free function on row-major buffers,
// so a device layer's test can call exactly the one it implements:
//
//   encoder     x[b,t,:] = wte[tok[b,t],:] + wpe[t,:]
//   layernorm   y = (x - mean) * rstd * w + b, rstd = 1 / sqrt(var + 1e-5) (biased variance)
//   matmul      y = x W^T + bias, W stored out x in
//   attention   causal softmax(q k^T / sqrt(hs)) v per head, q, k, v the column blocks of qkv
//   gelu        GPT-2's tanh form
//   residual    y = a + b
//   crossentropy  over the first vocab_size logits of each padded row
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "train/gpt2.hpp"

namespace rigel::train::ref {

using Vec = std::vector<double>;

void encoder_forward(std::span<double> out, std::span<const int> tokens, std::span<const double> wte,
                     std::span<const double> wpe, int B, int T, int C);
void encoder_backward(std::span<double> dwte, std::span<double> dwpe, std::span<const double> dout,
                      std::span<const int> tokens, int B, int T, int C);

// mean and rstd: N entries (N = rows).
void layernorm_forward(std::span<double> out, std::span<double> mean, std::span<double> rstd,
                       std::span<const double> inp, std::span<const double> w, std::span<const double> b, int N, int C);
void layernorm_backward(std::span<double> dinp, std::span<double> dw, std::span<double> db,
                        std::span<const double> dout, std::span<const double> inp, std::span<const double> w,
                        std::span<const double> mean, std::span<const double> rstd, int N, int C);

// out (N x OC) = inp (N x C) W^T (W: OC x C) + bias (null span: none).
void matmul_forward(std::span<double> out, std::span<const double> inp, std::span<const double> w,
                    std::span<const double> bias, int N, int C, int OC);
// dinp += dout W, dw += dout^T inp, dbias += column sums of dout (dbias may be empty).
void matmul_backward(std::span<double> dinp, std::span<double> dw, std::span<double> dbias,
                     std::span<const double> dout, std::span<const double> inp, std::span<const double> w, int N,
                     int C, int OC);

// qkv: B T x 3C (q, k, v the three column blocks, head h at columns h hs ...);
// out: B T x C; att (B x NH x T x T) keeps the softmax for the backward pass.
void attention_forward(std::span<double> out, std::span<double> att, std::span<const double> qkv, int B, int T, int C,
                       int NH);
void attention_backward(std::span<double> dqkv, std::span<const double> dout, std::span<const double> qkv,
                        std::span<const double> att, int B, int T, int C, int NH);

double gelu(double x);
double gelu_derivative(double x);
void gelu_forward(std::span<double> out, std::span<const double> inp);
void gelu_backward(std::span<double> dinp, std::span<const double> inp, std::span<const double> dout);

// losses[i] = -log softmax(logits[i, :V])[target[i]]; probs keeps the softmax
// (padded columns 0). backward: dlogits = (probs - onehot) * dloss, 0 in the padding.
void crossentropy_forward(std::span<double> losses, std::span<double> probs, std::span<const double> logits,
                          std::span<const int> targets, int N, int V, int Vp);
void crossentropy_backward(std::span<double> dlogits, std::span<const double> probs, std::span<const int> targets,
                           double dloss, int N, int V, int Vp);

// GPT-2's initialization: weights normal(0, 0.02), the two residual
// projections (attprojw, fcprojw) scaled by 1 / sqrt(2 L), LayerNorm weights 1,
// biases 0, the padded rows of wte 0. The same seed gives the same values.
Vec init_params(const Gpt2Config& c, std::uint64_t seed);

// The logits (B T x padded vocabulary) of the whole model on B x T tokens.
Vec logits(const Gpt2Config& c, std::span<const double> params, std::span<const int> inputs, int B, int T);

// The whole model on B x T tokens: the mean cross-entropy of the next-token
// targets; with `grads` (resized to the parameter count), d loss / d params.
double loss(const Gpt2Config& c, std::span<const double> params, std::span<const int> inputs,
            std::span<const int> targets, int B, int T, Vec* grads = nullptr);

}  // namespace rigel::train::ref
