// The attention problem's host half: defaults, the shape check and the flop
// count (include/rigel/attention.hpp). Pure C++, host-tested.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "rigel/attention.hpp"

namespace rigel::attention {
namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxSeq = 65535 * 128;

// Elements between tokens must keep every row on a 16-byte boundary (bf16: 8
// elements): the kernels move rows with TMA and 16-byte vector accesses.
constexpr std::int64_t kRowAlignElements = 8;

std::string check_ld(const char* name, std::int64_t ld, std::int64_t width) {
    const std::string n(name);
    if (ld < width)
        return n + " " + std::to_string(ld) + " is smaller than the " + std::to_string(width) +
               " elements of a token's heads (H x D)";
    if (ld % kRowAlignElements != 0)
        return n + " " + std::to_string(ld) + " is not a multiple of 8 elements (rows must start on 16 bytes)";
    return {};
}

// Bytes from a tensor's first element to one past its last.
std::uint64_t extent_bytes(const Desc& d, std::int64_t ld) {
    return static_cast<std::uint64_t>((d.batch * d.seq - 1) * ld + d.heads * d.head_dim) * 2;
}

bool overlaps(const void* a, std::uint64_t a_bytes, const void* b, std::uint64_t b_bytes) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

const char* name(Kernel k) {
    switch (k) {
        case Kernel::decomposed: return "decomposed";
        case Kernel::fa2: return "fa2";
        case Kernel::fa3: return "fa3";
    }
    return "?";
}

bool parse_kernel(const std::string& s, Kernel& out) {
    for (Kernel k : {Kernel::decomposed, Kernel::fa2, Kernel::fa3})
        if (s == name(k)) {
            out = k;
            return true;
        }
    return false;
}

std::string check_forward_args(const Desc& desc, const ForwardArgs& a) {
    const Desc d = with_defaults(desc);
    for (const auto& [what, p] : {std::pair<const char*, const void*>{"Q", a.q}, {"K", a.k}, {"V", a.v}, {"O", a.o}}) {
        if (p == nullptr) return std::string(what) + " is null";
        if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
            return std::string(what) + " is not 16-byte aligned (rows move in 16-byte pieces)";
    }
    if (a.lse != nullptr && reinterpret_cast<std::uintptr_t>(a.lse) % 4 != 0) return "lse is not 4-byte aligned";
    const std::uint64_t o_bytes = extent_bytes(d, d.ldo);
    const std::uint64_t lse_bytes = static_cast<std::uint64_t>(d.batch * d.heads * d.seq) * sizeof(float);
    // The outputs are written while other CTAs still read Q, K and V, so
    // neither may share a byte with them (Q, K and V may share theirs).
    for (const auto& [what, p, bytes] :
         {std::tuple<const char*, const void*, std::uint64_t>{"Q", a.q, extent_bytes(d, d.ldq)},
          {"K", a.k, extent_bytes(d, d.ldk)},
          {"V", a.v, extent_bytes(d, d.ldv)}}) {
        if (overlaps(a.o, o_bytes, p, bytes)) return std::string("O overlaps ") + what + " (no in-place attention)";
        if (a.lse != nullptr && overlaps(a.lse, lse_bytes, p, bytes))
            return std::string("lse overlaps ") + what + " (the forward pass writes lse while it reads " + what + ")";
    }
    if (a.lse != nullptr && overlaps(a.o, o_bytes, a.lse, lse_bytes)) return "O overlaps lse";
    return {};
}

std::string check_backward_args(const Desc& desc, const BackwardArgs& a) {
    const Desc d = with_defaults(desc);
    struct Tensor {
        const char* name;
        const void* p;
        std::int64_t ld;
    };
    const Tensor inputs[] = {{"Q", a.q, d.ldq}, {"K", a.k, d.ldk}, {"V", a.v, d.ldv}, {"O", a.o, d.ldo},
                             {"dO", a.dout, d.ldo}};
    const Tensor grads[] = {{"dQ", a.dq, d.ldq}, {"dK", a.dk, d.ldk}, {"dV", a.dv, d.ldv}};
    for (const Tensor* set : {inputs, grads})
        for (int i = 0; i < (set == inputs ? 5 : 3); ++i) {
            if (set[i].p == nullptr) return std::string(set[i].name) + " is null";
            if (reinterpret_cast<std::uintptr_t>(set[i].p) % 16 != 0)
                return std::string(set[i].name) + " is not 16-byte aligned (rows move in 16-byte pieces)";
        }
    if (a.lse == nullptr) return "lse is null (the backward pass reads the forward's)";
    if (reinterpret_cast<std::uintptr_t>(a.lse) % 4 != 0) return "lse is not 4-byte aligned";
    const std::uint64_t lse_bytes = static_cast<std::uint64_t>(d.batch * d.heads * d.seq) * sizeof(float);
    const std::uint64_t row_bytes = static_cast<std::uint64_t>(d.heads * d.head_dim) * 2;
    for (const Tensor& g : grads) {
        const std::uint64_t gb = extent_bytes(d, g.ld);
        for (const Tensor& in : inputs)
            if (overlaps(g.p, gb, in.p, extent_bytes(d, in.ld)))
                return std::string(g.name) + " overlaps " + in.name + " (gradients may not overwrite inputs)";
        if (overlaps(g.p, gb, a.lse, lse_bytes)) return std::string(g.name) + " overlaps lse";
        for (const Tensor& h : grads) {
            if (&h <= &g || !overlaps(g.p, gb, h.p, extent_bytes(d, h.ld))) continue;
            // Column blocks of the same rows: one leading dimension, H D columns each, side by side.
            const auto x = reinterpret_cast<std::uintptr_t>(g.p), y = reinterpret_cast<std::uintptr_t>(h.p);
            const std::uint64_t gap = x > y ? x - y : y - x;
            if (g.ld != h.ld || gap < row_bytes || gap + row_bytes > static_cast<std::uint64_t>(g.ld) * 2)
                return std::string(g.name) + " overlaps " + h.name + " other than as column blocks of one buffer";
        }
    }
    return {};
}

Plan::Plan(const Desc& d, Kernel k) : desc_(with_defaults(d)), kernel_(k) {
    if (const std::string why = check(d); !why.empty()) throw std::invalid_argument(why);
}

const char* Plan::backward_kernel() const {
    if (desc_.deterministic) return "fa2 backward, deterministic";
    return kernel_ == Kernel::fa3 ? "fa3 backward" : "fa2 backward";
}

Desc with_defaults(Desc d) {
    const std::int64_t width = d.heads * d.head_dim;
    for (std::int64_t* ld : {&d.ldq, &d.ldk, &d.ldv, &d.ldo})
        if (*ld == 0) *ld = width;
    if (d.scale == 0.0f && d.head_dim > 0) d.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
    return d;
}

std::string check(const Desc& desc) {
    if (desc.batch < 1 || desc.heads < 1 || desc.seq < 1)
        return "batch, heads and sequence length must be at least 1";
    if (std::none_of(std::begin(kHeadDims), std::end(kHeadDims), [&](std::int64_t h) { return h == desc.head_dim; }))
        return "head dimension " + std::to_string(desc.head_dim) + " has no kernel (64 or 128)";
    if (!std::isfinite(desc.scale) || desc.scale < 0.0f) return "scale must be finite and positive (0: 1/sqrt(D))";
    const Desc d = with_defaults(desc);
    if (d.heads > kMaxInt / d.head_dim) return "heads x head dimension exceeds 2^31 - 1";
    for (const auto& [name, ld] : {std::pair{"ldq", d.ldq}, std::pair{"ldk", d.ldk}, std::pair{"ldv", d.ldv},
                                   std::pair{"ldo", d.ldo}})
        if (std::string why = check_ld(name, ld, d.heads * d.head_dim); !why.empty()) return why;
    // The kernels' grids hold one row of CTAs per 128 query rows, at most 65535 of them.
    if (d.seq > kMaxSeq)
        return "sequence length " + std::to_string(d.seq) + " exceeds " + std::to_string(kMaxSeq) +
               " (65535 tiles of 128 query rows)";
    // Token rows and logsumexp entries are counted in 32-bit integers by the kernels.
    if (d.batch > kMaxInt / d.seq) return "batch x sequence length exceeds 2^31 - 1 tokens";
    if (d.batch * d.seq > kMaxInt / d.heads) return "batch x heads x sequence length exceeds 2^31 - 1 rows";
    const std::int64_t widest = std::max({d.ldq, d.ldk, d.ldv, d.ldo});
    if (d.batch * d.seq > std::numeric_limits<std::int64_t>::max() / 2 / widest)
        return "the tensors exceed 2^63 bytes";
    return {};
}

double forward_flops(const Desc& d) {
    const double s = static_cast<double>(d.seq);
    const double f = 4.0 * static_cast<double>(d.batch) * static_cast<double>(d.heads) * s * s *
                     static_cast<double>(d.head_dim);
    return d.causal ? f / 2 : f;
}

double backward_flops(const Desc& d) { return 2.5 * forward_flops(d); }

std::string shape_text(const Desc& d) {
    return "B " + std::to_string(d.batch) + " x H " + std::to_string(d.heads) + " x S " + std::to_string(d.seq) +
           " x D " + std::to_string(d.head_dim) + (d.causal ? ", causal" : "") +
           (d.deterministic ? ", deterministic" : "");
}

}  // namespace rigel::attention
