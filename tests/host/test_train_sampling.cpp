// Decoding GPT-2's ranks and sampling (src/train/sampling.hpp): a rank file
// read back, malformed ones refused; temperature 0 and top-k 1 take the
// largest logit; a seed gives the same draw; the draw follows the softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "train/gpt2_reference.hpp"
#include "train/sampling.hpp"

using namespace rigel::train;
namespace fs = std::filesystem;

namespace {

fs::path write_ranks(const std::string& name, const std::string& text) {
    const fs::path p = fs::temp_directory_path() / name;
    std::ofstream(p) << text;
    return p;
}

}  // namespace

TEST(TrainSampling, DecodesARankFileAndRefusesMalformedOnes) {
    // "IQ==" is "!", "SGk=" is "Hi", "IHRoZXJl" is " there".
    const fs::path p = write_ranks("rigel_ranks_ok.tiktoken", "IQ== 0\nSGk= 1\nIHRoZXJl 2\n");
    const Gpt2Decoder d(p);
    EXPECT_EQ(d.size(), 3u);
    const std::vector<int> tokens{1, 2, 0, kEndOfText, 7};
    EXPECT_EQ(d.decode(tokens), "Hi there!<|endoftext|><?7>");
    const auto refused = [](const std::string& text, const std::string& part) {
        const fs::path bad = write_ranks("rigel_ranks_bad.tiktoken", text);
        try {
            Gpt2Decoder x(bad);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
        fs::remove(bad);
    };
    refused("IQ== 1\n", "line 1");        // ranks must start at 0
    refused("IQ== 0\nSGk 1\n", "line 2");  // not base64
    refused("IQ==0\n", "line 1");         // no space
    refused("", "holds no tokens");
    EXPECT_THROW(Gpt2Decoder(fs::temp_directory_path() / "rigel_no_such_ranks"), std::invalid_argument);
    fs::remove(p);
}

TEST(TrainSampling, TemperatureZeroAndTopOneTakeTheLargestAndASeedRepeats) {
    const std::vector<double> logits{0.1, 2.0, -1.0, 1.9, 5.0 /* padding column, never drawn */};
    rigel::Rng rng(3);
    EXPECT_EQ(sample_token(logits, 4, 0.0, 0, rng), 1);
    EXPECT_EQ(sample_token(logits, 4, 1.0, 1, rng), 1);
    std::vector<int> a, b;
    rigel::Rng r1(9), r2(9);
    for (int i = 0; i < 50; ++i) a.push_back(sample_token(logits, 4, 1.0, 0, r1));
    for (int i = 0; i < 50; ++i) b.push_back(sample_token(logits, 4, 1.0, 0, r2));
    EXPECT_EQ(a, b);
    for (int t : a) EXPECT_LT(t, 4);
}

TEST(TrainSampling, DrawsFollowTheSoftmaxOfTheTopK) {
    const std::vector<double> logits{std::log(1.0), std::log(2.0), std::log(7.0), -50.0};
    rigel::Rng rng(11);
    std::vector<int> count(4, 0);
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) ++count[static_cast<std::size_t>(sample_token(logits, 4, 1.0, 3, rng))];
    EXPECT_EQ(count[3], 0);  // outside the top 3
    EXPECT_NEAR(count[2] / double(draws), 0.7, 0.02);
    EXPECT_NEAR(count[1] / double(draws), 0.2, 0.02);
    EXPECT_NEAR(count[0] / double(draws), 0.1, 0.02);
}

TEST(TrainSampling, GenerateExtendsThePromptFromTheModelsLastLogits) {
    const Gpt2Config c{.layers = 1, .heads = 2, .channels = 8, .max_seq_len = 6, .vocab_size = 10,
                       .padded_vocab_size = 16};
    const std::vector<double> p = ref::init_params(c, 5);
    rigel::Rng rng(1);
    const std::vector<int> out = generate(c, p, {3, 1}, 8, 0.0, 0, rng);  // longer than the context
    ASSERT_EQ(out.size(), 8u);
    // Greedy: the first token is the argmax of the logits after the prompt.
    const std::vector<double> l = ref::logits(c, p, std::vector<int>{3, 1}, 1, 2);
    const auto last = std::span<const double>(l).subspan(16, 16);
    rigel::Rng unused(0);
    EXPECT_EQ(out[0], sample_token(last, 10, 0.0, 0, unused));
    for (int t : out) EXPECT_LT(t, 10);
}
