// GPT-2 as rigel trains it: the configuration, and where each parameter
// tensor sits in the one flat parameter buffer (the same order on the host
// reference, on the device, in checkpoints). GPT-2 small is 12 layers of 12
// heads at 768 channels, a 1024-token context, a vocabulary of 50,257 padded
// to 50,304 (a multiple of 128, for the LM head's GEMM), the token embedding
// tied to the LM head, LayerNorm before attention and before the MLP.
//
// Linear weights are stored out x in (as torch.nn.Linear's), so a layer's
// forward is Y = X W^T + b: the GEMM library's layout NT.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rigel::train {

struct Gpt2Config {
    int layers = 12;
    int heads = 12;
    int channels = 768;
    int max_seq_len = 1024;
    int vocab_size = 50257;
    int padded_vocab_size = 50304;
    bool operator==(const Gpt2Config&) const = default;
};

// GPT-2 small (124M parameters).
constexpr Gpt2Config kGpt2Small{};

// Empty when `c` describes a model rigel can build, else one sentence.
std::string check(const Gpt2Config& c);

// The parameter tensors, in buffer order.
enum class Param : std::uint8_t {
    wte,       // token embedding, padded_vocab x C (rows past vocab_size stay zero)
    wpe,       // position embedding, max_seq_len x C
    ln1w, ln1b,          // L x C
    qkvw, qkvb,          // L x 3C x C, L x 3C
    attprojw, attprojb,  // L x C x C, L x C
    ln2w, ln2b,          // L x C
    fcw, fcb,            // L x 4C x C, L x 4C
    fcprojw, fcprojb,    // L x C x 4C, L x C
    lnfw, lnfb,          // C
};
constexpr int kParamTensors = 16;
std::string_view name(Param p);

// Element counts of each tensor and offsets into the flat buffer.
struct ParamLayout {
    std::array<std::int64_t, kParamTensors> size{}, offset{};
    std::int64_t total = 0;
    std::int64_t count(Param p) const { return size[static_cast<int>(p)]; }
    std::int64_t at(Param p) const { return offset[static_cast<int>(p)]; }
};
ParamLayout param_layout(const Gpt2Config& c);

// Floating-point operations of one training step per token at sequence length
// T (forward and backward), as the field counts them for MFU (PaLM's appendix,
// llm.c): 6 per parameter per token, plus attention's 12 L T C (its score and
// value products, forward and backward, causal masking not discounted).
double training_flops_per_token(const Gpt2Config& c, int T);

// The device memory the cuda backend (src/cuda/train/cuda_backend.cu) allocates
// for micro-batches of B x T tokens, in bytes: the fp32 master weights,
// gradients and AdamW moments, the bf16 weights and the decay mask (19 bytes
// a parameter); each layer's saved activations (16 bf16 values of C per token,
// LayerNorm's statistics, attention's logsumexp); the logits; the backward
// pass's buffers; attention's fp32 dQ workspace. The GEMM plans' split-K
// workspaces come on top (tens of MB for GPT-2 small).
std::int64_t cuda_backend_bytes(const Gpt2Config& c, int B, int T);

}  // namespace rigel::train
