// AdamW, the learning-rate schedule and clipping (src/train/optimizer.hpp):
// one step worked by hand, the bias correction, decay only where the mask
// says, the schedule's corners, the clipping factor.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "train/optimizer.hpp"

using namespace rigel::train;

TEST(TrainOptimizer, FirstAdamWStepMovesEachParameterByAboutLrTimesSignOfGradient) {
    std::vector<float> p{1.0f, -2.0f, 0.5f}, g{0.1f, -3.0f, 0.0f}, m(3, 0.0f), v(3, 0.0f);
    const std::vector<std::uint8_t> mask{1, 0, 1};
    const AdamWSettings s{.weight_decay = 0.1};
    adamw_step(p, g, m, v, mask, s, 0.01, 1);
    // Step 1: m_hat = g, v_hat = g^2, so the Adam part is g / (|g| + eps) = sign(g).
    EXPECT_NEAR(p[0], 1.0 - 0.01 * (0.1 / (0.1 + 1e-8) + 0.1 * 1.0), 1e-7);
    EXPECT_NEAR(p[1], -2.0 - 0.01 * (-3.0 / (3.0 + 1e-8)), 1e-7);  // no decay: mask 0
    EXPECT_NEAR(p[2], 0.5 - 0.01 * 0.1 * 0.5, 1e-8);               // zero gradient: decay only
    EXPECT_FLOAT_EQ(m[1], 0.1f * -3.0f);
    EXPECT_FLOAT_EQ(v[1], 0.05f * 9.0f);
}

TEST(TrainOptimizer, BiasCorrectionAndGradScaleFollowTheFormula) {
    std::vector<float> p{0.0f}, g{2.0f}, m{0.3f}, v{0.5f};
    const std::vector<std::uint8_t> mask{0};
    const AdamWSettings s{};
    adamw_step(p, g, m, v, mask, s, 0.1, 3, 0.5);  // the gradient is clipped to 1.0
    const double mi = 0.9 * 0.3 + 0.1 * 1.0, vi = 0.95 * 0.5 + 0.05 * 1.0;
    const double expect = -0.1 * (mi / (1 - std::pow(0.9, 3))) / (std::sqrt(vi / (1 - std::pow(0.95, 3))) + 1e-8);
    EXPECT_NEAR(p[0], expect, 1e-7);
    EXPECT_THROW(adamw_step(p, g, m, v, mask, s, 0.1, 0), std::invalid_argument);
}

TEST(TrainOptimizer, DecayMaskCoversTheMatricesOnly) {
    const Gpt2Config c{.layers = 2, .heads = 2, .channels = 8, .max_seq_len = 4, .vocab_size = 10,
                       .padded_vocab_size = 16};
    const ParamLayout l = param_layout(c);
    const std::vector<std::uint8_t> mask = decay_mask(c);
    ASSERT_EQ(static_cast<std::int64_t>(mask.size()), l.total);
    for (int i = 0; i < kParamTensors; ++i) {
        const Param p = static_cast<Param>(i);
        for (std::int64_t j = 0; j < l.size[i]; ++j)
            ASSERT_EQ(mask[static_cast<std::size_t>(l.offset[i] + j)], decayed(p) ? 1 : 0) << name(p);
    }
    EXPECT_TRUE(decayed(Param::fcprojw));
    EXPECT_FALSE(decayed(Param::ln1w));
    EXPECT_FALSE(decayed(Param::qkvb));
}

TEST(TrainOptimizer, ScheduleWarmsUpLinearlyThenFollowsTheCosineToItsFloor) {
    const double lr = 6e-4;
    EXPECT_DOUBLE_EQ(learning_rate(0, lr, 10, 110, 0.1), lr / 10);
    EXPECT_DOUBLE_EQ(learning_rate(9, lr, 10, 110, 0.1), lr);
    EXPECT_DOUBLE_EQ(learning_rate(10, lr, 10, 110, 0.1), lr);
    EXPECT_NEAR(learning_rate(60, lr, 10, 110, 0.1), 0.5 * (lr + 0.1 * lr), 1e-15);  // halfway down the cosine
    EXPECT_DOUBLE_EQ(learning_rate(110, lr, 10, 110, 0.1), 0.1 * lr);
    EXPECT_DOUBLE_EQ(learning_rate(500, lr, 10, 110, 0.1), 0.1 * lr);
}

TEST(TrainOptimizer, ClippingScalesOnlyNormsAboveTheLimit) {
    const std::vector<float> g{3.0f, 4.0f};
    EXPECT_DOUBLE_EQ(global_norm(g), 5.0);
    EXPECT_DOUBLE_EQ(clip_factor(5.0, 1.0), 0.2);
    EXPECT_DOUBLE_EQ(clip_factor(0.5, 1.0), 1.0);
    EXPECT_DOUBLE_EQ(clip_factor(5.0, 0.0), 1.0);
}
