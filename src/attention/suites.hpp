// Attention's named suites, as tables: the problems `rigel attention verify`
// will check and `rigel attention bench` will time, the same on every visit
// and recorded by name. Pure host code (tests/host/test_attention.cpp).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rigel/attention.hpp"

namespace rigel::attention {

struct AttentionCase {
    std::string name;  // unique within its suite
    Desc desc{};
};

struct AttentionSuite {
    std::string_view name;
    std::string_view purpose;
    std::vector<AttentionCase> cases;
};

// verify: sequence lengths 1, 17, 1000 and 4097 (multiples of no tile), head
// dimensions 64 and 128, causal and not, padded rows, and GPT-2's fused QKV
// buffer read in place. sdpa: the field's benchmark grid, D = 64 and 128,
// S = 512 ... 16384 at 16,384 tokens (B = 16384 / S), H = 2048 / D, causal
// and not. gpt2: GPT-2 124M's attention at 16,384 tokens, B 16 x S 1024, Q, K
// and V read from the QKV projection's output. targets: the sdpa cases at
// S = 4096, where the targets are set (a short timed run).
std::span<const AttentionSuite> attention_suites();
// nullptr when no suite has that name.
const AttentionSuite* find_attention_suite(std::string_view name);

// What is wrong with a suite, one sentence each: no case, an unnamed or
// repeated name, a desc check() refuses.
std::vector<std::string> check_attention_suite(const AttentionSuite& s);

}  // namespace rigel::attention
