// Text from a trained model: GPT-2's byte-pair ranks read back as a decoder
// (the rank file prepare_data.py writes beside the tokens, one "base64 rank"
// line per token), and sampling the next token from the model's logits with a
// temperature and top-k, one token at a time.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "train/gpt2.hpp"

namespace rigel::train {

constexpr int kEndOfText = 50256;  // GPT-2's <|endoftext|>

class Gpt2Decoder {
public:
    // Throws std::invalid_argument, one sentence naming the file, when it is
    // missing or a line is not "base64 rank" with ranks 0, 1, 2, ... in order.
    explicit Gpt2Decoder(const std::filesystem::path& ranks);
    // The bytes of the tokens (end-of-text as "<|endoftext|>"; ids past the table as "<?id>").
    std::string decode(std::span<const int> tokens) const;
    std::size_t size() const { return pieces_.size(); }
private:
    std::vector<std::string> pieces_;
};

// The next token from one row of logits (the first `vocab` of them):
// temperature 0 takes the largest; otherwise softmax(logits / temperature)
// over the top_k largest (top_k 0: all), drawn with `rng`.
int sample_token(std::span<const double> logits, int vocab, double temperature, int top_k, Rng& rng);

// The logits (padded vocabulary) of the last token of `context`.
using NextLogits = std::function<std::vector<double>(std::span<const int> context)>;

// `count` tokens after `prompt`, the context cut to the last `max_context`
// tokens, each drawn from next_logits(context).
std::vector<int> generate(const NextLogits& next_logits, int max_context, int vocab, std::vector<int> prompt,
                          int count, double temperature, int top_k, Rng& rng);

// `count` tokens after `prompt` from the float64 model (its whole context
// recomputed per token; the last max_seq_len tokens when it is longer).
std::vector<int> generate(const Gpt2Config& c, std::span<const double> params, std::vector<int> prompt, int count,
                          double temperature, int top_k, Rng& rng);

}  // namespace rigel::train
