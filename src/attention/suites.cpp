// Attention's named suites (suites.hpp).
#include "attention/suites.hpp"

#include <algorithm>
#include <cstdint>

namespace rigel::attention {
namespace {

constexpr std::int64_t kTokens = 16384;  // tokens per batch of the benchmark grid and of GPT-2's step
constexpr std::int64_t kModelWidth = 2048;

std::string case_name(const Desc& d) {
    return "s" + std::to_string(d.seq) + "_d" + std::to_string(d.head_dim) + (d.causal ? "_causal" : "");
}

std::vector<AttentionCase> verify_cases() {
    std::vector<AttentionCase> out;
    for (std::int64_t seq : {1, 17, 1000, 4097})
        for (std::int64_t dim : {64, 128})
            for (bool causal : {false, true}) {
                Desc d{.batch = seq > 1000 ? 1 : 2, .heads = 2, .seq = seq, .head_dim = dim, .causal = causal};
                std::string name = case_name(d);
                if (seq == 17 || seq == 1000) {  // rows padded past H D
                    d.ldq = d.ldk = d.ldv = d.ldo = 2 * dim + 24;
                    name += "_padded";
                }
                out.push_back({name, d});
            }
    // Q, K and V as the column blocks of one [B S, 3 H D] buffer.
    out.push_back({"s300_d64_causal_qkv", Desc{.batch = 2, .heads = 3, .seq = 300, .head_dim = 64, .causal = true,
                                               .ldq = 576, .ldk = 576, .ldv = 576, .ldo = 192}});
    return out;
}

std::vector<AttentionCase> sdpa_cases() {
    std::vector<AttentionCase> out;
    for (std::int64_t dim : {64, 128})
        for (std::int64_t seq = 512; seq <= kTokens; seq *= 2)
            for (bool causal : {false, true}) {
                const Desc d{.batch = kTokens / seq, .heads = kModelWidth / dim, .seq = seq, .head_dim = dim,
                             .causal = causal};
                out.push_back({case_name(d), d});
            }
    return out;
}

// The sdpa grid's cases at S = 4096, where the targets are set.
std::vector<AttentionCase> target_cases() {
    std::vector<AttentionCase> out;
    for (const AttentionCase& c : sdpa_cases())
        if (c.desc.seq == 4096) out.push_back(c);
    return out;
}

std::vector<AttentionCase> gpt2_cases() {
    constexpr std::int64_t heads = 12, dim = 64, seq = 1024;
    const Desc d{.batch = kTokens / seq, .heads = heads, .seq = seq, .head_dim = dim, .causal = true,
                 .ldq = 3 * heads * dim, .ldk = 3 * heads * dim, .ldv = 3 * heads * dim, .ldo = heads * dim};
    return {{"gpt2_124m", d}};
}

const std::vector<AttentionSuite>& table() {
    static const std::vector<AttentionSuite> suites{
        {"verify", "odd sequence lengths, both head dimensions, causal and not, padded rows, QKV in place: "
                   "checked against float64",
         verify_cases()},
        {"sdpa", "D 64 and 128, S 512 to 16384 at 16384 tokens, H = 2048 / D, causal and not", sdpa_cases()},
        {"gpt2", "GPT-2 124M's causal attention at 16384 tokens, read from the QKV projection in place", gpt2_cases()},
        {"targets", "the sdpa cases at S = 4096 (D 64 and 128, causal and not), where the targets are set",
         target_cases()},
    };
    return suites;
}

}  // namespace

std::span<const AttentionSuite> attention_suites() { return table(); }

const AttentionSuite* find_attention_suite(std::string_view name) {
    for (const AttentionSuite& s : table())
        if (s.name == name) return &s;
    return nullptr;
}

std::vector<std::string> check_attention_suite(const AttentionSuite& s) {
    std::vector<std::string> problems;
    if (s.cases.empty()) problems.push_back("has no case");
    std::vector<std::string> seen;
    for (const AttentionCase& c : s.cases) {
        const std::string what = "case " + (c.name.empty() ? std::string("(unnamed)") : c.name) + ": ";
        if (c.name.empty()) problems.push_back(what + "has no name");
        if (std::find(seen.begin(), seen.end(), c.name) != seen.end()) problems.push_back(what + "repeats a name");
        seen.push_back(c.name);
        if (const std::string why = check(c.desc); !why.empty()) problems.push_back(what + why);
    }
    return problems;
}

}  // namespace rigel::attention
