// Attention's host half: the shape check, the flop count, and the float64
// verification gate held to two promises. An honest kernel passes: a host
// emulation of the FlashAttention-2 algorithm in fp32 with P and dS rounded
// to bf16 (what the device kernels do) verifies on odd shapes, causal or not,
// with padded rows. A wrong one fails: a shifted causal mask, a wrong scale,
// a dropped rescale, an unwritten or perturbed element, written padding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attention/reference.hpp"
#include "attention/suites.hpp"
#include "core/formats.hpp"
#include "rigel/attention.hpp"

using namespace rigel::attention;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

float bf16_round(float x) { return rigel::bf16_to_f32(rigel::f32_to_bf16(x)); }

// How the emulated kernel may go wrong.
struct Flaw {
    int mask_shift = 0;          // causal: keys j <= i + mask_shift
    float scale_factor = 1.0f;   // multiplies the scale
    bool skip_rescale = false;   // forget to rescale acc and l when the running max grows
};

struct Device {
    std::vector<std::uint16_t> o, dq, dk, dv;
    std::vector<float> lse;
    Outputs outputs() const { return {o.data(), lse.data(), dq.data(), dk.data(), dv.data()}; }
};

// FlashAttention-2 on the host: fp32 throughout, keys in blocks of 64 with an
// online softmax, P rounded to bf16 before P V; the backward pass recomputes P
// from lse, rounds P and dS to bf16 before their products. Outputs poisoned
// first, so padding stays poison.
Device emulate(const Desc& desc, const Inputs& in, const Flaw& flaw = {}) {
    const Desc d = with_defaults(desc);
    const std::int64_t S = d.seq, H = d.heads, D = d.head_dim;
    const Sizes n = sizes(d);
    Device dev;
    dev.o.assign(static_cast<std::size_t>(n.o), kPoisonBf16);
    dev.dq.assign(static_cast<std::size_t>(n.q), kPoisonBf16);
    dev.dk.assign(static_cast<std::size_t>(n.k), kPoisonBf16);
    dev.dv.assign(static_cast<std::size_t>(n.v), kPoisonBf16);
    dev.lse.assign(static_cast<std::size_t>(n.lse), 0.0f);
    const float scale = d.scale * flaw.scale_factor;
    const auto at = [&](std::int64_t ld, std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t x) {
        return static_cast<std::size_t>((b * S + s) * ld + h * D + x);
    };
    const auto val = [&](const std::vector<std::uint16_t>& t, std::int64_t ld, std::int64_t b, std::int64_t s,
                         std::int64_t h, std::int64_t x) { return rigel::bf16_to_f32(t[at(ld, b, s, h, x)]); };
    const auto last_key = [&](std::int64_t i) { return d.causal ? std::min(S - 1, i + flaw.mask_shift) : S - 1; };
    const auto score = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
        float dot = 0.0f;
        for (std::int64_t x = 0; x < D; ++x) dot += val(in.q, d.ldq, b, i, h, x) * val(in.k, d.ldk, b, j, h, x);
        return scale * dot;
    };
    for (std::int64_t b = 0; b < d.batch; ++b)
        for (std::int64_t h = 0; h < H; ++h) {
            std::vector<float> lse(static_cast<std::size_t>(S));
            for (std::int64_t i = 0; i < S; ++i) {
                float m = -INFINITY, l = 0.0f;
                std::vector<float> acc(static_cast<std::size_t>(D), 0.0f);
                for (std::int64_t j0 = 0; j0 <= last_key(i); j0 += 64) {
                    const std::int64_t j1 = std::min(j0 + 64, last_key(i) + 1);
                    std::vector<float> s;
                    float m_new = m;
                    for (std::int64_t j = j0; j < j1; ++j) {
                        s.push_back(score(b, h, i, j));
                        m_new = std::max(m_new, s.back());
                    }
                    const float r = std::isinf(m) ? 0.0f : std::exp(m - m_new);
                    if (!flaw.skip_rescale) {
                        l *= r;
                        for (float& a : acc) a *= r;
                    }
                    for (std::int64_t j = j0; j < j1; ++j) {
                        const float p = std::exp(s[static_cast<std::size_t>(j - j0)] - m_new);
                        l += p;
                        const float pb = bf16_round(p);
                        for (std::int64_t x = 0; x < D; ++x) acc[static_cast<std::size_t>(x)] += pb * val(in.v, d.ldv, b, j, h, x);
                    }
                    m = m_new;
                }
                for (std::int64_t x = 0; x < D; ++x)
                    dev.o[at(d.ldo, b, i, h, x)] = rigel::f32_to_bf16(acc[static_cast<std::size_t>(x)] / l);
                lse[static_cast<std::size_t>(i)] = m + std::log(l);
                dev.lse[static_cast<std::size_t>((b * H + h) * S + i)] = lse[static_cast<std::size_t>(i)];
            }
            // Backward.
            std::vector<float> dq(static_cast<std::size_t>(S * D), 0.0f), dk(dq.size(), 0.0f), dv(dq.size(), 0.0f);
            for (std::int64_t i = 0; i < S; ++i) {
                float dl = 0.0f;
                for (std::int64_t x = 0; x < D; ++x)
                    dl += val(in.dout, d.ldo, b, i, h, x) * rigel::bf16_to_f32(dev.o[at(d.ldo, b, i, h, x)]);
                for (std::int64_t j = 0; j <= last_key(i); ++j) {
                    const float p = std::exp(score(b, h, i, j) - lse[static_cast<std::size_t>(i)]);
                    float dp = 0.0f;
                    for (std::int64_t x = 0; x < D; ++x) dp += val(in.dout, d.ldo, b, i, h, x) * val(in.v, d.ldv, b, j, h, x);
                    const float ds = bf16_round(p * (dp - dl));
                    const float pb = bf16_round(p);
                    for (std::int64_t x = 0; x < D; ++x) {
                        dq[static_cast<std::size_t>(i * D + x)] += ds * val(in.k, d.ldk, b, j, h, x);
                        dk[static_cast<std::size_t>(j * D + x)] += ds * val(in.q, d.ldq, b, i, h, x);
                        dv[static_cast<std::size_t>(j * D + x)] += pb * val(in.dout, d.ldo, b, i, h, x);
                    }
                }
            }
            for (std::int64_t s = 0; s < S; ++s)
                for (std::int64_t x = 0; x < D; ++x) {
                    const auto k = static_cast<std::size_t>(s * D + x);
                    dev.dq[at(d.ldq, b, s, h, x)] = rigel::f32_to_bf16(scale * dq[k]);
                    dev.dk[at(d.ldk, b, s, h, x)] = rigel::f32_to_bf16(scale * dk[k]);
                    dev.dv[at(d.ldv, b, s, h, x)] = rigel::f32_to_bf16(dv[k]);
                }
        }
    return dev;
}

Desc small(std::int64_t seq, std::int64_t dim, bool causal, bool padded = true) {
    Desc d{.batch = 2, .heads = 2, .seq = seq, .head_dim = dim, .causal = causal};
    if (padded) d.ldq = d.ldk = d.ldv = d.ldo = 2 * dim + 8;
    return d;
}

Verdict check_emulated(const Desc& d, const Flaw& flaw = {}, std::uint64_t seed = 7) {
    const Inputs in = random_inputs(d, seed);
    const Device dev = emulate(d, in, flaw);
    return verify(d, in, dev.outputs(), seed, {.threads = 2});
}

}  // namespace

TEST(AttentionDesc, ChecksShapesHeadDimsAndLeadingDimensions) {
    EXPECT_EQ(check(Desc{.batch = 4, .heads = 12, .seq = 1024, .head_dim = 64}), "");
    EXPECT_EQ(check(Desc{.seq = 1, .head_dim = 128}), "");
    EXPECT_TRUE(contains(check(Desc{.head_dim = 96}), "head dimension 96 has no kernel (64 or 128)"));
    EXPECT_TRUE(contains(check(Desc{.seq = 0}), "at least 1"));
    EXPECT_TRUE(contains(check(Desc{.heads = 2, .ldq = 64}), "ldq 64 is smaller than the 128 elements"));
    EXPECT_TRUE(contains(check(Desc{.heads = 2, .ldk = 132}), "ldk 132 is not a multiple of 8"));
    EXPECT_TRUE(contains(check(Desc{.scale = -1.0f}), "scale must be finite and positive"));
    EXPECT_TRUE(contains(check(Desc{.scale = NAN}), "scale must be finite"));
    EXPECT_TRUE(contains(check(Desc{.batch = 1 << 16, .seq = 1 << 16}), "2^31 - 1 tokens"));
    EXPECT_TRUE(contains(check(Desc{.batch = 1 << 10, .heads = 1 << 10, .seq = 1 << 12}), "2^31 - 1 rows"));
    // GPT-2's fused QKV buffer read in place: ld = 3 H D.
    EXPECT_EQ(check(Desc{.batch = 16, .heads = 12, .seq = 1024, .head_dim = 64, .causal = true, .ldq = 2304,
                         .ldk = 2304, .ldv = 2304, .ldo = 768}),
              "");
}

TEST(AttentionDesc, DefaultsAndFlops) {
    const Desc d = with_defaults(Desc{.heads = 3, .head_dim = 64});
    EXPECT_EQ(d.ldq, 192);
    EXPECT_EQ(d.ldo, 192);
    EXPECT_FLOAT_EQ(d.scale, 0.125f);
    const Desc f{.batch = 2, .heads = 4, .seq = 1000, .head_dim = 128};
    EXPECT_DOUBLE_EQ(forward_flops(f), 4.0 * 2 * 4 * 1000.0 * 1000.0 * 128);
    Desc c = f;
    c.causal = true;
    EXPECT_DOUBLE_EQ(forward_flops(c), forward_flops(f) / 2);
    EXPECT_DOUBLE_EQ(backward_flops(f), 2.5 * forward_flops(f));
    EXPECT_EQ(shape_text(c), "B 2 x H 4 x S 1000 x D 128, causal");
}

TEST(AttentionReference, InputsArePoisonedInThePaddingAndRepeatable) {
    const Desc d = small(17, 64, false);
    const Inputs a = random_inputs(d, 3), b = random_inputs(d, 3), c = random_inputs(d, 4);
    EXPECT_EQ(a.q, b.q);
    EXPECT_NE(a.q, c.q);
    EXPECT_EQ(a.q.size(), static_cast<std::size_t>(2 * 17 * (2 * 64 + 8)));
    for (int x = 128; x < 136; ++x) EXPECT_EQ(a.v[static_cast<std::size_t>(x)], kPoisonBf16);
    EXPECT_NE(a.v[0], kPoisonBf16);
}

TEST(AttentionReference, AnHonestFlashAttentionPassesOnOddShapes) {
    for (std::int64_t seq : {1, 17, 130})
        for (std::int64_t dim : {64, 128})
            for (bool causal : {false, true}) {
                const Desc d = small(seq, dim, causal);
                const Verdict v = check_emulated(d);
                EXPECT_TRUE(v.pass) << shape_text(d) << ": " << v.reason;
                EXPECT_EQ(v.checked_heads, 4);
                EXPECT_EQ(v.checked_rows, seq);
                // The allowance is a bound, not a blanket: the honest kernel uses a visible part of it.
                if (seq > 1) {
                    EXPECT_GT(v.err_max_scaled, 1e-3) << shape_text(d);
                }
            }
}

TEST(AttentionReference, SamplesHeadsAndRowsOfLongProblems) {
    Desc d = small(300, 64, true, false);
    const Inputs in = random_inputs(d, 11);
    const Device dev = emulate(d, in);
    const Verdict v = verify(d, in, dev.outputs(), 11, {.head_limit = 1e3, .row_limit = 20, .threads = 2});
    EXPECT_TRUE(v.pass) << v.reason;
    EXPECT_EQ(v.checked_heads, 4);  // all 4 of B H = 4: first, last and two more
    EXPECT_EQ(v.checked_rows, 20);
}

TEST(AttentionReference, WrongKernelsFail) {
    const Desc causal = small(70, 64, true);
    EXPECT_FALSE(check_emulated(causal, {.mask_shift = 1}).pass);   // sees one key too many
    EXPECT_FALSE(check_emulated(causal, {.mask_shift = -1}).pass);  // one too few
    EXPECT_FALSE(check_emulated(small(70, 64, false), {.scale_factor = 1.01f}).pass);
    EXPECT_FALSE(check_emulated(small(130, 64, false), {.scale_factor = 1.001f}).pass);  // lse sees a 0.1 % scale
    // 130 keys: three blocks, the running max grows across them.
    EXPECT_FALSE(check_emulated(small(130, 64, false), {.skip_rescale = true}).pass);
}

TEST(AttentionReference, UnwrittenPerturbedAndPaddingWritesFail) {
    const Desc d = small(40, 64, false);
    const Inputs in = random_inputs(d, 5);
    const Device honest = emulate(d, in);
    ASSERT_TRUE(verify(d, in, honest.outputs(), 5, {.threads = 2}).pass);

    Device unwritten = honest;
    unwritten.dk[3] = kPoisonBf16;
    const Verdict u = verify(d, in, unwritten.outputs(), 5, {.threads = 2});
    EXPECT_FALSE(u.pass);
    EXPECT_TRUE(contains(u.reason, "of dK never written")) << u.reason;
    EXPECT_EQ(u.unwritten, 1);

    Device perturbed = honest;  // one element of O 1 % off
    perturbed.o[5] = rigel::f32_to_bf16(rigel::bf16_to_f32(perturbed.o[5]) * 1.01f + 0.01f);
    const Verdict p = verify(d, in, perturbed.outputs(), 5, {.threads = 2});
    EXPECT_FALSE(p.pass);
    EXPECT_TRUE(contains(p.reason, "O[b 0, h 0, s 0, d 5]")) << p.reason;

    Device lse = honest;
    lse.lse[7] += 1e-3f;
    EXPECT_FALSE(verify(d, in, lse.outputs(), 5, {.threads = 2}).pass);

    Device padding = honest;
    padding.dv[static_cast<std::size_t>(2 * 64 + 1)] = 0;  // token 0's padding column
    const Verdict w = verify(d, in, padding.outputs(), 5, {.threads = 2});
    EXPECT_FALSE(w.pass);
    EXPECT_TRUE(contains(w.reason, "dV's padding written in token row 0")) << w.reason;

    // Swapped gradients.
    Device swapped = honest;
    std::swap(swapped.dk, swapped.dv);
    EXPECT_FALSE(verify(d, in, swapped.outputs(), 5, {.threads = 2}).pass);
}

// A cache shared by a case's contenders gives each the same verdict as a fresh reference, and a wrong
// contender checked after an honest one still fails.
TEST(AttentionReference, CachedReferencesJudgeAsFreshOnes) {
    const Desc d = small(70, 64, true);
    const Inputs in = random_inputs(d, 5);
    const Device honest = emulate(d, in);
    ReferenceCache cache;
    const Verdict fresh = verify(d, in, honest.outputs(), 5, {.threads = 2});
    const Verdict first = verify(d, in, honest.outputs(), 5, {.threads = 2, .cache = &cache});
    const Verdict again = verify(d, in, honest.outputs(), 5, {.threads = 2, .cache = &cache});
    ASSERT_TRUE(fresh.pass) << fresh.reason;
    EXPECT_EQ(cache.heads.size(), 4u);  // the 4 heads, backward
    for (const Verdict& v : {first, again}) {
        EXPECT_TRUE(v.pass) << v.reason;
        EXPECT_EQ(v.err_max_scaled, fresh.err_max_scaled);
        EXPECT_EQ(v.worst, fresh.worst);
    }
    const Outputs forward{honest.o.data(), honest.lse.data()};
    EXPECT_TRUE(verify(d, in, forward, 5, {.backward = false, .threads = 2, .cache = &cache}).pass);
    EXPECT_EQ(cache.heads.size(), 8u);  // and forward
    Device perturbed = honest;
    perturbed.o[5] = rigel::f32_to_bf16(rigel::bf16_to_f32(perturbed.o[5]) * 1.01f + 0.01f);
    EXPECT_FALSE(verify(d, in, perturbed.outputs(), 5, {.threads = 2, .cache = &cache}).pass);
    EXPECT_FALSE(verify(d, in, Outputs{perturbed.o.data(), perturbed.lse.data()}, 5,
                        {.backward = false, .threads = 2, .cache = &cache})
                     .pass);
}

TEST(AttentionReference, ForwardOnlyNeedsNoGradients) {
    const Desc d = small(33, 128, true);
    const Inputs in = random_inputs(d, 9);
    const Device dev = emulate(d, in);
    const Outputs fwd{dev.o.data(), dev.lse.data()};
    EXPECT_TRUE(verify(d, in, fwd, 9, {.backward = false, .threads = 2}).pass);
    EXPECT_THROW(verify(d, in, fwd, 9, {.threads = 2}), std::invalid_argument);
}

TEST(AttentionSuites, EverySuiteHoldsAndNamesWhatTheIssueAsks) {
    for (const AttentionSuite& s : attention_suites()) {
        EXPECT_FALSE(s.purpose.empty()) << s.name;
        const auto problems = check_attention_suite(s);
        EXPECT_TRUE(problems.empty()) << s.name << ": " << problems.front();
    }
    EXPECT_EQ(find_attention_suite("nonsense"), nullptr);
    // sdpa: 2 head dims x 6 lengths x causal or not, 16384 tokens, a model width of 2048.
    const AttentionSuite* sdpa = find_attention_suite("sdpa");
    ASSERT_NE(sdpa, nullptr);
    EXPECT_EQ(sdpa->cases.size(), 24u);
    for (const AttentionCase& c : sdpa->cases) {
        EXPECT_EQ(c.desc.batch * c.desc.seq, 16384) << c.name;
        EXPECT_EQ(c.desc.heads * c.desc.head_dim, 2048) << c.name;
    }
    // verify: the lengths the issue names, both head dims, causal and not, and QKV in place.
    std::set<std::tuple<std::int64_t, std::int64_t, bool>> seen;
    bool in_place = false;
    for (const AttentionCase& c : find_attention_suite("verify")->cases) {
        seen.insert({c.desc.seq, c.desc.head_dim, c.desc.causal});
        in_place |= c.desc.ldq == 3 * c.desc.heads * c.desc.head_dim;
    }
    for (std::int64_t seq : {1, 17, 1000, 4097})
        for (std::int64_t dim : {64, 128})
            for (bool causal : {false, true}) EXPECT_TRUE(seen.count({seq, dim, causal})) << seq << " " << dim;
    EXPECT_TRUE(in_place);
    const AttentionCase& g = find_attention_suite("gpt2")->cases.at(0);
    EXPECT_EQ(g.desc.ldq, 2304);
    EXPECT_TRUE(g.desc.causal);
}

TEST(AttentionSuites, TheCheckFindsWhatIsWrong) {
    const AttentionSuite s{"t", "p", {{"a", Desc{}}, {"a", Desc{.head_dim = 80}}, {"", Desc{}}}};
    const auto p = check_attention_suite(s);
    EXPECT_EQ(p.size(), 3u);
    EXPECT_TRUE(contains(p[0], "case a: repeats a name"));
    EXPECT_TRUE(contains(p[1], "head dimension 80"));
    EXPECT_TRUE(contains(p[2], "has no name"));
    EXPECT_FALSE(check_attention_suite(AttentionSuite{"e", "p", {}}).empty());
}

// The forward call's arguments, checked on the host before any launch.
TEST(AttentionArgs, RefusesNullMisalignedAndOverlappingPointers) {
    const Desc d = with_defaults(Desc{.batch = 2, .heads = 3, .seq = 10, .head_dim = 64});
    const std::uintptr_t base = 0x10000000;  // never dereferenced
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(2 * 10 * 3 * 64 * 2);
    const auto at = [&](std::uintptr_t slot) { return reinterpret_cast<void*>(base + slot * bytes); };
    ForwardArgs a{.q = at(0), .k = at(1), .v = at(2), .o = at(3), .lse = static_cast<float*>(at(4))};
    EXPECT_EQ(check_forward_args(d, a), "");
    ForwardArgs no_lse = a;
    no_lse.lse = nullptr;
    EXPECT_EQ(check_forward_args(d, no_lse), "") << "lse is optional";

    ForwardArgs bad = a;
    bad.k = nullptr;
    EXPECT_EQ(check_forward_args(d, bad), "K is null");
    bad = a;
    bad.o = reinterpret_cast<void*>(base + 3 * bytes + 8);
    EXPECT_TRUE(contains(check_forward_args(d, bad), "O is not 16-byte aligned"));
    bad = a;
    bad.lse = reinterpret_cast<float*>(base + 4 * bytes + 2);
    EXPECT_EQ(check_forward_args(d, bad), "lse is not 4-byte aligned");
    bad = a;
    bad.o = reinterpret_cast<void*>(base + 2 * bytes + bytes - 16);  // O's first row is V's last
    EXPECT_EQ(check_forward_args(d, bad), "O overlaps V (no in-place attention)");
    bad = a;
    bad.lse = reinterpret_cast<float*>(base + 3 * bytes + bytes - 4);
    EXPECT_EQ(check_forward_args(d, bad), "O overlaps lse");

    // Q, K and V may share one buffer (the QKV projection's output); O may not.
    const Desc qkv = with_defaults(Desc{.batch = 2, .heads = 3, .seq = 10, .head_dim = 64, .ldq = 576, .ldk = 576,
                                        .ldv = 576});
    const auto p = [&](std::uintptr_t offset) { return reinterpret_cast<void*>(base + offset); };
    ForwardArgs in_place{.q = p(0), .k = p(384), .v = p(768), .o = p(4 * bytes)};
    EXPECT_EQ(check_forward_args(qkv, in_place), "");
    in_place.o = p(1152);  // inside the QKV rows' span
    EXPECT_TRUE(contains(check_forward_args(qkv, in_place), "O overlaps Q"));
}

// lse is written while other CTAs still read Q, K and V: it may touch none of them.
TEST(AttentionArgs, RefusesAnLseOverlappingQKOrV) {
    const Desc d = with_defaults(Desc{.batch = 2, .heads = 3, .seq = 10, .head_dim = 64});
    const std::uintptr_t base = 0x10000000;  // never dereferenced
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(2 * 10 * 3 * 64 * 2);
    const std::uintptr_t lse_bytes = 2 * 3 * 10 * sizeof(float);
    const auto at = [&](std::uintptr_t offset) { return reinterpret_cast<void*>(base + offset); };
    const auto lse_at = [&](std::uintptr_t offset) { return reinterpret_cast<float*>(base + offset); };
    const ForwardArgs a{.q = at(0), .k = at(bytes), .v = at(2 * bytes), .o = at(3 * bytes), .lse = lse_at(4 * bytes)};
    ASSERT_EQ(check_forward_args(d, a), "");

    ForwardArgs bad = a;
    bad.lse = lse_at(0);
    EXPECT_EQ(check_forward_args(d, bad), "lse overlaps Q (the forward pass writes lse while it reads Q)");
    bad.lse = lse_at(2 * bytes - 4);  // lse's first float is K's last two elements
    EXPECT_TRUE(contains(check_forward_args(d, bad), "lse overlaps K"));
    bad.lse = lse_at(3 * bytes - lse_bytes + 4);  // the last float in O, the rest in V
    EXPECT_TRUE(contains(check_forward_args(d, bad), "lse overlaps V"));
    bad.o = at(5 * bytes);
    bad.lse = lse_at(3 * bytes);  // right after V, O moved away: no byte shared
    EXPECT_EQ(check_forward_args(d, bad), "");
    bad.lse = lse_at(5 * bytes - lse_bytes);  // right before O
    EXPECT_EQ(check_forward_args(d, bad), "");
    bad.lse = lse_at(5 * bytes - lse_bytes + 4);
    EXPECT_EQ(check_forward_args(d, bad), "O overlaps lse");

    // One QKV buffer: lse anywhere in the rows' span overlaps it.
    const Desc qkv = with_defaults(Desc{.batch = 2, .heads = 3, .seq = 10, .head_dim = 64, .ldq = 576, .ldk = 576,
                                        .ldv = 576});
    ForwardArgs fused{.q = at(0), .k = at(384), .v = at(768), .o = at(4 * bytes), .lse = lse_at(5 * bytes)};
    EXPECT_EQ(check_forward_args(qkv, fused), "");
    fused.lse = lse_at(1152);  // Q's second row
    EXPECT_TRUE(contains(check_forward_args(qkv, fused), "lse overlaps Q"));
}

TEST(AttentionPlan, RefusesWhatTheKernelsCannotTake) {
    EXPECT_NO_THROW(Plan(Desc{.seq = 17, .head_dim = 128, .causal = true}));
    try {
        Plan bad(Desc{.seq = 17, .head_dim = 96});
        ADD_FAILURE() << "a head dimension of 96 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_TRUE(contains(e.what(), "head dimension 96 has no kernel"));
    }
    EXPECT_TRUE(contains(check(Desc{.seq = 65535LL * 128 + 1}), "exceeds 8388480"));
    EXPECT_EQ(check(Desc{.seq = 65535LL * 128}), "");
    Kernel k{};
    EXPECT_TRUE(parse_kernel("fa2", k));
    EXPECT_EQ(k, Kernel::fa2);
    EXPECT_TRUE(parse_kernel("fa3", k));
    EXPECT_EQ(k, Kernel::fa3);
    EXPECT_FALSE(parse_kernel("fa4", k));
}

TEST(AttentionArgs, BackwardRefusesGradientsOverInputsButTakesOneDqkvBuffer) {
    const Desc d = with_defaults(Desc{.batch = 2, .heads = 3, .seq = 10, .head_dim = 64});
    const std::uintptr_t base = 0x20000000;
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(2 * 10 * 3 * 64 * 2);
    const auto at = [&](std::uintptr_t slot) { return reinterpret_cast<void*>(base + slot * bytes); };
    BackwardArgs a{.q = at(0), .k = at(1), .v = at(2), .o = at(3), .dout = at(4),
                   .lse = static_cast<const float*>(at(5)), .dq = at(6), .dk = at(7), .dv = at(8)};
    EXPECT_EQ(check_backward_args(d, a), "");
    BackwardArgs bad = a;
    bad.lse = nullptr;
    EXPECT_TRUE(contains(check_backward_args(d, bad), "lse is null"));
    bad = a;
    bad.dout = nullptr;
    EXPECT_EQ(check_backward_args(d, bad), "dO is null");
    bad = a;
    bad.dk = at(1);  // dK over K
    EXPECT_EQ(check_backward_args(d, bad), "dK overlaps K (gradients may not overwrite inputs)");
    bad = a;
    bad.dv = at(7);  // dV on dK
    EXPECT_TRUE(contains(check_backward_args(d, bad), "dK overlaps dV other than as column blocks"));

    // dQ, dK, dV as the column blocks of one [B S, 3 H D] buffer, as Q, K, V of a QKV buffer.
    const Desc packed = with_defaults(Desc{.batch = 2, .heads = 3, .seq = 10, .head_dim = 64, .ldq = 576, .ldk = 576,
                                           .ldv = 576});
    const auto p = [&](std::uintptr_t offset) { return reinterpret_cast<void*>(base + offset); };
    const std::uintptr_t grads = 16 * bytes;
    BackwardArgs qkv{.q = p(0), .k = p(384), .v = p(768), .o = at(10), .dout = at(11),
                     .lse = static_cast<const float*>(at(12)), .dq = p(grads), .dk = p(grads + 384),
                     .dv = p(grads + 768)};
    EXPECT_EQ(check_backward_args(packed, qkv), "");
    qkv.dv = p(grads + 192);  // overlapping dQ's columns
    EXPECT_TRUE(contains(check_backward_args(packed, qkv), "other than as column blocks"));
}
