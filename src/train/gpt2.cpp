// GPT-2's configuration check and parameter layout (gpt2.hpp).
#include "train/gpt2.hpp"

namespace rigel::train {

std::string check(const Gpt2Config& c) {
    if (c.layers < 1 || c.heads < 1 || c.channels < 1 || c.max_seq_len < 1 || c.vocab_size < 2)
        return "layers, heads, channels and context must be at least 1 and the vocabulary at least 2";
    if (c.channels % c.heads != 0)
        return std::to_string(c.channels) + " channels do not split into " + std::to_string(c.heads) + " heads";
    if (c.padded_vocab_size < c.vocab_size)
        return "the padded vocabulary (" + std::to_string(c.padded_vocab_size) + ") is smaller than the vocabulary (" +
               std::to_string(c.vocab_size) + ")";
    if (c.vocab_size > 65536) return "token ids are stored in 16 bits: the vocabulary may hold at most 65536";
    return {};
}

std::string_view name(Param p) {
    constexpr std::string_view names[kParamTensors] = {"wte",  "wpe",      "ln1w",     "ln1b", "qkvw", "qkvb",
                                                       "attprojw", "attprojb", "ln2w", "ln2b", "fcw",  "fcb",
                                                       "fcprojw",  "fcprojb",  "lnfw", "lnfb"};
    return names[static_cast<int>(p)];
}

ParamLayout param_layout(const Gpt2Config& c) {
    const std::int64_t L = c.layers, C = c.channels;
    const std::int64_t sizes[kParamTensors] = {
        static_cast<std::int64_t>(c.padded_vocab_size) * C, static_cast<std::int64_t>(c.max_seq_len) * C,
        L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C, L * C, L * C, L * 4 * C * C, L * 4 * C,
        L * C * 4 * C, L * C, C, C};
    ParamLayout out;
    for (int i = 0; i < kParamTensors; ++i) {
        out.size[i] = sizes[i];
        out.offset[i] = out.total;
        out.total += sizes[i];
    }
    return out;
}

double training_flops_per_token(const Gpt2Config& c, int T) {
    return 6.0 * static_cast<double>(param_layout(c).total) +
           12.0 * c.layers * static_cast<double>(T) * c.channels;
}

std::int64_t cuda_backend_bytes(const Gpt2Config& c, int B, int T) {
    const std::int64_t P = param_layout(c).total, N = static_cast<std::int64_t>(B) * T, C = c.channels;
    const std::int64_t NC = N * C, H = c.heads;
    const std::int64_t weights = P * (4 + 2 + 4 + 4 + 4 + 1);             // params, bf16 copy, grads, m, v, mask
    const std::int64_t layer = 16 * NC * 2 + 4 * N * 4 + N * H * 4;        // activations, LN stats, lse
    const std::int64_t head = 2 * NC * 2 + 2 * N * 4 + N * c.padded_vocab_size * 2 + N * 4 + 2 * N * 2;
    const std::int64_t backward = (NC + NC + NC + 3 * NC + 4 * NC) * 2 + 4;  // dres dln datty dqkv dfch, the norm
    const std::int64_t attention = 4 * (NC + N * H);                       // fp32 dQ and Dl
    return weights + c.layers * layer + head + backward + attention;
}

}  // namespace rigel::train
