// AdamW, the learning-rate schedule and gradient clipping (optimizer.hpp).
#include "train/optimizer.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace rigel::train {

bool decayed(Param p) {
    switch (p) {
        case Param::wte: case Param::wpe: case Param::qkvw: case Param::attprojw: case Param::fcw: case Param::fcprojw:
            return true;
        default:
            return false;
    }
}

std::vector<std::uint8_t> decay_mask(const Gpt2Config& c) {
    const ParamLayout l = param_layout(c);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(l.total), 0);
    for (int i = 0; i < kParamTensors; ++i)
        if (decayed(static_cast<Param>(i)))
            std::fill_n(mask.begin() + l.offset[i], l.size[i], std::uint8_t{1});
    return mask;
}

void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                std::span<const std::uint8_t> mask, const AdamWSettings& s, double lr, std::int64_t t,
                double grad_scale) {
    if (t < 1) throw std::invalid_argument("AdamW steps count from 1");
    if (grads.size() != params.size() || m.size() != params.size() || v.size() != params.size() ||
        mask.size() != params.size())
        throw std::invalid_argument("AdamW: parameters, gradients, moments and mask differ in length");
    const double c1 = 1.0 - std::pow(s.beta1, static_cast<double>(t));
    const double c2 = 1.0 - std::pow(s.beta2, static_cast<double>(t));
    for (std::size_t i = 0; i < params.size(); ++i) {
        const double g = grad_scale * grads[i];
        const double mi = s.beta1 * m[i] + (1.0 - s.beta1) * g;
        const double vi = s.beta2 * v[i] + (1.0 - s.beta2) * g * g;
        m[i] = static_cast<float>(mi);
        v[i] = static_cast<float>(vi);
        const double update = (mi / c1) / (std::sqrt(vi / c2) + s.eps) + (mask[i] ? s.weight_decay * params[i] : 0.0);
        params[i] = static_cast<float>(params[i] - lr * update);
    }
}

double learning_rate(std::int64_t step, double max_lr, std::int64_t warmup, std::int64_t total, double final_fraction) {
    if (step < warmup) return max_lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
    const double min_lr = max_lr * final_fraction;
    if (step >= total || total <= warmup) return min_lr;
    const double ratio = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
    return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * ratio)) * (max_lr - min_lr);
}

double global_norm(std::span<const float> grads) {
    double s = 0;
    for (float g : grads) s += static_cast<double>(g) * g;
    return std::sqrt(s);
}

double clip_factor(double norm, double max_norm) {
    return max_norm > 0 && norm > max_norm ? max_norm / norm : 1.0;
}

}  // namespace rigel::train
