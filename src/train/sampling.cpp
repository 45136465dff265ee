// The decoder and the sampler (sampling.hpp).
#include "train/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <stdexcept>

#include "train/gpt2_reference.hpp"

namespace rigel::train {
namespace {

int base64_value(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

// Standard base64 with '=' padding; false on anything else.
bool base64_decode(const std::string& text, std::string& out) {
    if (text.empty() || text.size() % 4 != 0) return false;
    out.clear();
    for (std::size_t i = 0; i < text.size(); i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            const char ch = text[i + k];
            if (ch == '=' && i + 4 == text.size() && k >= 2) {
                v[k] = 0;
                ++pad;
            } else if (pad > 0 || (v[k] = base64_value(ch)) < 0) {
                return false;
            }
        }
        const std::uint32_t bits = (static_cast<std::uint32_t>(v[0]) << 18) | (static_cast<std::uint32_t>(v[1]) << 12) |
                                   (static_cast<std::uint32_t>(v[2]) << 6) | static_cast<std::uint32_t>(v[3]);
        out.push_back(static_cast<char>(bits >> 16));
        if (pad < 2) out.push_back(static_cast<char>((bits >> 8) & 0xFF));
        if (pad < 1) out.push_back(static_cast<char>(bits & 0xFF));
    }
    return true;
}

}  // namespace

Gpt2Decoder::Gpt2Decoder(const std::filesystem::path& ranks) {
    std::ifstream in(ranks);
    if (!in)
        throw std::invalid_argument("rank file '" + ranks.string() +
                                    "' cannot be read (make data writes it; --tokenizer names another)");
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        const std::size_t space = line.find(' ');
        std::string piece;
        const std::string rank = space == std::string::npos ? "" : line.substr(space + 1);
        if (space == std::string::npos || !base64_decode(line.substr(0, space), piece) ||
            rank != std::to_string(pieces_.size()))
            throw std::invalid_argument("rank file '" + ranks.string() + "' line " + std::to_string(n) +
                                        " is not \"base64 " + std::to_string(pieces_.size()) + "\"");
        pieces_.push_back(std::move(piece));
    }
    if (pieces_.empty()) throw std::invalid_argument("rank file '" + ranks.string() + "' holds no tokens");
}

std::string Gpt2Decoder::decode(std::span<const int> tokens) const {
    std::string out;
    for (int t : tokens) {
        if (t >= 0 && static_cast<std::size_t>(t) < pieces_.size())
            out += pieces_[static_cast<std::size_t>(t)];
        else
            out += t == kEndOfText ? "<|endoftext|>" : "<?" + std::to_string(t) + ">";
    }
    return out;
}

int sample_token(std::span<const double> logits, int vocab, double temperature, int top_k, Rng& rng) {
    if (vocab < 1 || static_cast<std::size_t>(vocab) > logits.size()) throw std::invalid_argument("vocab out of range");
    std::vector<int> order(static_cast<std::size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    const auto larger = [&](int a, int b) { return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)] ||
                                                   (logits[static_cast<std::size_t>(a)] == logits[static_cast<std::size_t>(b)] && a < b); };
    if (temperature <= 0) return *std::min_element(order.begin(), order.end(), larger);
    const std::size_t k = top_k > 0 ? std::min<std::size_t>(static_cast<std::size_t>(top_k), order.size()) : order.size();
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), larger);
    const double top = logits[static_cast<std::size_t>(order[0])];
    std::vector<double> weight(k);
    double sum = 0;
    for (std::size_t i = 0; i < k; ++i) sum += weight[i] = std::exp((logits[static_cast<std::size_t>(order[i])] - top) / temperature);
    double u = rng.uniform01() * sum;
    for (std::size_t i = 0; i < k; ++i) {
        if (u < weight[i]) return order[i];
        u -= weight[i];
    }
    return order[k - 1];
}

std::vector<int> generate(const NextLogits& next_logits, int max_context, int vocab, std::vector<int> prompt,
                          int count, double temperature, int top_k, Rng& rng) {
    if (prompt.empty()) throw std::invalid_argument("generation needs a prompt of at least one token");
    std::vector<int> out;
    for (int i = 0; i < count; ++i) {
        const std::size_t start = prompt.size() > static_cast<std::size_t>(max_context)
                                      ? prompt.size() - static_cast<std::size_t>(max_context)
                                      : 0;
        const std::vector<double> last = next_logits(std::span<const int>(prompt).subspan(start));
        const int next = sample_token(last, vocab, temperature, top_k, rng);
        prompt.push_back(next);
        out.push_back(next);
    }
    return out;
}

std::vector<int> generate(const Gpt2Config& c, std::span<const double> params, std::vector<int> prompt, int count,
                          double temperature, int top_k, Rng& rng) {
    const auto next_logits = [&](std::span<const int> context) {
        const int T = static_cast<int>(context.size());
        const std::vector<double> all = ref::logits(c, params, context, 1, T);
        const auto last = all.begin() + static_cast<std::ptrdiff_t>(T - 1) * c.padded_vocab_size;
        return std::vector<double>(last, last + c.padded_vocab_size);
    };
    return generate(next_logits, c.max_seq_len, c.vocab_size, std::move(prompt), count, temperature, top_k, rng);
}

}  // namespace rigel::train
