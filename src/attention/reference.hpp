// Attention's verification gate: the float64 reference of the forward and
// backward pass (include/rigel/attention.hpp) from exactly the bf16 bytes the
// device reads, and the comparison that decides whether what it wrote is
// right, each element held to its own allowance.
//
// The allowance of an element is a worst-case bound on what an honest kernel
// of the FlashAttention design can be off by (reference.cpp derives it): fp32
// accumulation of the scores and of every product, the fp32 exponential and
// logarithm, the bf16 rounding of P (and of dS) before they enter a tensor-core
// product, the forward's own errors carried into the backward pass (which
// reads O and the logsumexp), and the output's bf16 rounding. Also failed: an
// element still holding the poison (never written), a NaN where the reference
// is finite, a padding element (columns H D .. ld of a checked row) that was
// written.
//
// Cost. Every checked head costs about 4 S^2 D multiply-adds (its scores, P,
// dP and products, row by row; no S x S matrix is kept). Heads are sampled
// when there are many, rows when S is long: see VerifyOptions.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "rigel/attention.hpp"

namespace rigel::attention {

// The poison byte: 0xFFFF is a bf16 NaN and 0xFFFFFFFF an fp32 one that no
// kernel computes (CUDA's NaNs are positive).
constexpr std::uint8_t kPoisonByte = 0xFF;
constexpr std::uint16_t kPoisonBf16 = 0xFFFF;

// Elements of each tensor as stored: B S rows of ld elements (the last row's
// padding included); the logsumexp B H S floats.
struct Sizes {
    std::int64_t q = 0, k = 0, v = 0, o = 0, lse = 0;
};
Sizes sizes(const Desc& d);

// bf16 bits of Q, K, V and dO as stored, padding poisoned. Q and K normal with
// standard deviation `spread` (scores of standard deviation about spread^2:
// 1 gives softmax rows neither flat nor one-hot), V and dO uniform in [-1, 1];
// each rounded to bf16. The same seed gives the same bytes.
struct Inputs {
    std::vector<std::uint16_t> q, k, v, dout;
};
Inputs random_inputs(const Desc& d, std::uint64_t seed, double spread = 1.0);

// What the device wrote, copied back, as stored (null: not checked).
struct Outputs {
    const std::uint16_t* o = nullptr;
    const float* lse = nullptr;
    const std::uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

struct HeadReference;

// The float64 references verify() computed, kept for the next call on the same desc, inputs, seed and
// options (the contenders of one case, each checked against the same heads and rows): a head's
// reference is computed once per direction instead of once per contender. The caller keeps it with the
// inputs it belongs to.
struct ReferenceCache {
    std::map<std::tuple<std::int64_t, std::int64_t, bool>, std::shared_ptr<const HeadReference>> heads;
};

struct VerifyOptions {
    // Heads (b, h) checked: all when B H S^2 D <= head_limit, else the first,
    // the last and two drawn from the seed.
    double head_limit = 0x1p33;
    // Rows checked in a checked head (query rows of O, lse and dQ; key rows of
    // dK and dV): all when S <= row_limit, else the first, the last and
    // row_limit - 2 drawn from the seed.
    std::int64_t row_limit = 256;
    bool backward = true;  // check dQ, dK, dV too (Outputs must hold them)
    int threads = 0;       // 0: the machine's
    ReferenceCache* cache = nullptr;  // where given, references are taken from and kept in it
};

struct Verdict {
    bool pass = false;
    std::string reason;           // empty when pass, else the first failure in one sentence
    double err_max_scaled = 0;    // max over the checked elements of |out - ref| / allowance
    std::string worst;            // where: "dK[b 0, h 3, s 17, d 5]"
    std::int64_t checked_heads = 0, checked_rows = 0;
    std::int64_t unwritten = 0;        // O or lse elements (all of them) still holding the poison
    std::int64_t padding_written = 0;  // padding elements of checked rows no longer poison
};

Verdict verify(const Desc& d, const Inputs& in, const Outputs& out, std::uint64_t seed,
               const VerifyOptions& opt = {});

// The float64 reference of one head's rows, for tests and diagnostics:
// O, lse, dQ of query rows `rows` and dK, dV of key rows `rows`, each with its
// allowance ([row][d], rows in the order given).
struct HeadReference {
    std::vector<double> o, o_allowed, lse, lse_allowed, dq, dq_allowed, dk, dk_allowed, dv, dv_allowed;
};
HeadReference reference_head(const Desc& d, const Inputs& in, std::int64_t b, std::int64_t h,
                             const std::vector<std::int64_t>& rows, bool backward, int threads);

}  // namespace rigel::attention
