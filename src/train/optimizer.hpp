// The optimizer side of `rigel train`, as host reference code: AdamW with
// decoupled weight decay on the matrices only (the embeddings and the linear
// weights; not the biases or LayerNorm's gains and shifts, as GPT-2's
// training does), the learning rate's linear warm-up then cosine decay, and
// clipping by the global gradient norm. The device kernels are verified
// against these functions.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "train/gpt2.hpp"

namespace rigel::train {

struct AdamWSettings {
    double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

// Whether weight decay applies to a tensor: the 2-D ones.
bool decayed(Param p);
// One 0/1 per parameter of the flat buffer: decayed(tensor of that parameter).
std::vector<std::uint8_t> decay_mask(const Gpt2Config& c);

// One AdamW step t (t >= 1) at learning rate lr, in float64 on fp32 state:
//   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
//   p -= lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p)   (wd only where mask is 1)
// `grad_scale` multiplies every gradient first (the clipping factor).
void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                std::span<const std::uint8_t> mask, const AdamWSettings& s, double lr, std::int64_t t,
                double grad_scale = 1.0);

// The learning rate at step `step` (0-based): linear warm-up to `max_lr` over
// `warmup` steps (step + 1) / warmup, then a cosine from max_lr down to
// max_lr x final_fraction at `total` steps, and that floor after.
double learning_rate(std::int64_t step, double max_lr, std::int64_t warmup, std::int64_t total, double final_fraction);

// The global L2 norm of the gradients, and the factor that clips it to
// max_norm (1 when it is within, or max_norm <= 0: no clipping).
double global_norm(std::span<const float> grads);
double clip_factor(double norm, double max_norm);

}  // namespace rigel::train
