// rigel's own kernels for GPT-2 training, besides the GEMM library and the
// fused attention: token + position embedding, LayerNorm, the softmax
// cross-entropy fused with the LM head's backward, and AdamW.
//
// The deterministic mode (rigel train run --deterministic): the kernels that
// add gradients across threads and CTAs with atomics (LayerNorm's, the biases'
// and the embeddings' backward passes, the gradient norm) take a `workspace`
// of deterministic_workspace_floats() floats and add their partial sums in a
// fixed order instead, so that a step's bits do not depend on scheduling.
// A null workspace: the atomics (the default, faster). Activations are
// bf16 rows of C channels; LayerNorm's statistics, the losses, the weight
// gradients of these layers and the optimizer state are fp32. Each kernel is
// checked against the float64 reference (src/train/gpt2_reference.hpp) by
// `rigel train check` (src/cuda/train/layer_check.cu).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace rigel::cuda::train {

// out[n, :] = wte[tokens[n], :] + wpe[n % T, :], n < N = B T. C % 8 == 0.
void encoder_forward(__nv_bfloat16* out, const std::uint16_t* tokens, const __nv_bfloat16* wte,
                     const __nv_bfloat16* wpe, int N, int T, int C, cudaStream_t s);
// dwte[tokens[n], :] += dout[n, :], dwpe[n % T, :] += dout[n, :] (fp32 atomic adds).
void encoder_backward(float* dwte, float* dwpe, const __nv_bfloat16* dout, const std::uint16_t* tokens, int N, int T,
                      int C, cudaStream_t s);
// The batch's rows grouped by token (device arrays): the rows n of token
// token_of[u] are rows[starts[u] .. starts[u + 1]), in increasing n.
struct TokenRows {
    const int* rows = nullptr;
    const int* starts = nullptr;    // distinct + 1 entries
    const int* token_of = nullptr;  // distinct entries
    int distinct = 0;
};
// The three arrays of train::TokenRows::packed() (n rows, `distinct` tokens) in device memory at `packed`.
inline TokenRows token_rows_in(const int* packed, int n, int distinct) {
    return {.rows = packed, .starts = packed + n, .token_of = packed + n + distinct + 1, .distinct = distinct};
}
// The same sums without atomics: each token's rows, and each position's, added in increasing n.
void encoder_backward_ordered(float* dwte, float* dwpe, const __nv_bfloat16* dout, const TokenRows& rows, int N,
                              int T, int C, cudaStream_t s);
// The floats the deterministic mode's workspace needs for N rows and rows of up to `widest` columns.
std::size_t deterministic_workspace_floats(int N, int widest);

// One warp per row: out = (x - mean) rstd w + b, mean and rstd (fp32) kept.
// C a multiple of 8 up to 1024 (else std::invalid_argument).
void layernorm_forward(__nv_bfloat16* out, float* mean, float* rstd, const __nv_bfloat16* x, const __nv_bfloat16* w,
                       const __nv_bfloat16* b, int N, int C, cudaStream_t s);
// dx += rstd (dnorm - mean(dnorm) - norm mean(dnorm norm)), dnorm = dout w (dx bf16, added to
// what it holds: the residual stream's gradient); dw += sum_n dout norm, db += sum_n dout (fp32).
// dsum (if not null) += sum_n dx as written (its bf16 values, summed in fp32): the bias gradient of
// the linear layer whose output is this residual stream, without a pass of its own.
// C a multiple of 8 up to 1024 (else std::invalid_argument).
void layernorm_backward(__nv_bfloat16* dx, float* dw, float* db, const __nv_bfloat16* dout, const __nv_bfloat16* x,
                        const __nv_bfloat16* w, const float* mean, const float* rstd, int N, int C, cudaStream_t s,
                        float* workspace = nullptr, float* dsum = nullptr);

// One CTA per row of the LM head's logits (N x Vp, the first V real): losses[n] =
// lse - logit[target] (fp32), and the logits overwritten by their gradient
// (softmax - onehot) dloss in bf16, 0 in the padding. Two kernels: streamed
// (any row: two passes over it in memory) and staged (the row copied into
// shared memory once; rows of a multiple of 8 logits, 16-byte aligned, up to
// 56,320 logits). automatic takes the streamed one (the faster on GPT-2's rows:
// docs/training.md); asking for staged where it does not apply is refused
// (std::invalid_argument).
enum class CeKernel { automatic, streamed, staged };
CeKernel crossentropy_kernel_for(int Vp, const __nv_bfloat16* logits, CeKernel wanted = CeKernel::automatic);
const char* crossentropy_kernel_name(CeKernel k);
void crossentropy_fused(float* losses, __nv_bfloat16* logits, const std::uint16_t* targets, float dloss, int N, int V,
                        int Vp, cudaStream_t s, CeKernel wanted = CeKernel::automatic);

// AdamW on fp32 master weights (optimizer.hpp's formula), writing the bf16
// copy the model computes with; decay where mask[i] is 1; grads scaled by
// grad_scale first (the clipping factor).
void adamw(float* params, __nv_bfloat16* params_bf16, const float* grads, float* m, float* v, const std::uint8_t* mask,
           std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay, float bias1, float bias2,
           float grad_scale, cudaStream_t s);

// db[c] += sum over n of dout[n, c] (fp32), dout N x C bf16: a linear layer's bias gradient.
void bias_backward(float* db, const __nv_bfloat16* dout, int N, int C, cudaStream_t s, float* workspace = nullptr);
// The MLP's GELU backward with its bias gradient, after the product that gives
// dh = dY W (bf16, N x C): dh[n, c] *= GELU'(pre[n, c]) in place (rounded to
// bf16), and db[c] += the column sums of those products (fp32, before the
// rounding). C a multiple of 8, rows 16-byte aligned (else std::invalid_argument).
void gelu_backward_bias(__nv_bfloat16* dh, const __nv_bfloat16* pre, float* db, int N, int C, cudaStream_t s,
                        float* workspace = nullptr);
// out[i] = bf16(in[i]), n values (the model's copy of the fp32 master weights).
void to_bf16(__nv_bfloat16* out, const float* in, std::int64_t n, cudaStream_t s);
// y[i] += x[i], n floats.
void add_into(float* y, const float* x, std::int64_t n, cudaStream_t s);
// *sum_sq += sum of g[i]^2: per-CTA partial sums into `workspace` (sum_squares_workspace_floats() floats),
// added in CTA order, so that the same g gives the same bits on every run and every rank (data-parallel
// ranks each clip by the norm of the same summed gradients and must take the same step; atomic adds of
// the partials differed in their last bits between ranks). *sum_sq zeroed by the caller.
std::size_t sum_squares_workspace_floats();
void sum_squares(float* sum_sq, const float* g, std::int64_t n, cudaStream_t s, float* workspace);

}  // namespace rigel::cuda::train
