// rigel's scaled-dot-product attention: the problem description and its
// checks, shared by the float64 reference (src/attention/reference.hpp), the
// named suites and the kernels that compute it.
//
// Per batch b and head h, with S the sequence length and D the head dimension:
//     s_ij  = scale * q_i . k_j              (j <= i only when causal)
//     P_ij  = exp(s_ij - lse_i),  lse_i = log sum_j exp(s_ij)
//     o_i   = sum_j P_ij v_j
// and the backward pass, from dO:
//     dV_j  = sum_i P_ij dO_i
//     dS_ij = P_ij (dO_i . v_j - dO_i . o_i)
//     dQ_i  = scale * sum_j dS_ij k_j,   dK_j = scale * sum_i dS_ij q_i
//
// Storage. Q, K, V, O and their gradients are bf16, one row per token with all
// heads side by side: element (b, s, h, d) of Q sits at
//     q + (b * S + s) * ldq + h * D + d
// with ldq >= H * D (and likewise ldk, ldv, ldo; dQ, dK, dV share the leading
// dimension of Q, K, V, dO that of O). A transformer's fused QKV projection, a
// [B * S, 3 * H * D] matrix, is thus read in place: Q, K and V are its three
// column blocks, each with ld = 3 H D. The logsumexp is fp32, [B, H, S],
// packed; the backward pass reads it instead of recomputing the row maxima and
// sums.
//
// Computing it. A Plan checks the desc once and launches rigel's kernel:
//
//     #include <rigel/attention.hpp>
//     rigel::attention::Desc desc{.batch = 16, .heads = 12, .seq = 1024, .head_dim = 64, .causal = true,
//                                 .ldq = 3 * 768, .ldk = 3 * 768, .ldv = 3 * 768};  // read from the QKV buffer
//     rigel::attention::Plan plan(desc);    // throws std::invalid_argument with check()'s sentence
//     plan.forward({.q = qkv, .k = qkv + 768, .v = qkv + 2 * 768, .o = out, .lse = lse}, stream);
#pragma once
#include <cstdint>
#include <memory>
#include <string>

struct CUstream_st;

namespace rigel::attention {

using Stream = CUstream_st*;  // a cudaStream_t; nullptr is the legacy default stream

struct Desc {
    std::int64_t batch = 1, heads = 1, seq = 1, head_dim = 64;
    bool causal = false;
    float scale = 0.0f;  // 0: 1 / sqrt(head_dim)
    // Elements between consecutive tokens of Q, K, V and O (and of dQ, dK, dV, dO); 0: packed (H * D).
    std::int64_t ldq = 0, ldk = 0, ldv = 0, ldo = 0;
    // The backward pass's dQ in a pass of its own, each row summed by one CTA in
    // key order: bit-identical from run to run, at about 40 % more tensor work
    // (fa2_backward.cu). Off: fp32 atomic adds, whose order varies.
    bool deterministic = false;
};

// The head dimensions the kernels take.
constexpr std::int64_t kHeadDims[] = {64, 128};

// The desc with leading dimensions of 0 replaced by H * D and a scale of 0 by 1 / sqrt(D).
Desc with_defaults(Desc d);
// Empty when the kernels can take `d`, else one sentence saying why not.
std::string check(const Desc& d);
// Floating-point operations, as the field counts them: 4 B H S^2 D for the
// forward pass (two products of 2 S^2 D each per head), half that when causal;
// the backward pass is 2.5 times the forward.
double forward_flops(const Desc& d);
double backward_flops(const Desc& d);
// "B 4 x H 12 x S 1024 x D 64, causal": the shape in one line.
std::string shape_text(const Desc& d);

// The kernels, one per rung (docs/attention.md):
//   decomposed  rigel's GEMM for Q K^T (fp32 scores), a row softmax writing P in bf16, rigel's GEMM for
//         P V: the S x S matrix goes through memory, head after head (src/cuda/attention/decomposed.cu).
//         Forward only; it holds an S x S scratch buffer (6 S^2 bytes).
//   fa2   FlashAttention-2 on mma.sync: 128 query rows per CTA, K and V in tiles of 64 keys through
//         a two-stage cp.async ring, the online softmax in registers, P fed from the score
//         accumulators straight into the P V product (src/cuda/attention/fa2_forward.cu).
//   fa3   the same on wgmma and TMA, warp-specialized, on a persistent grid (a CTA per SM): a
//         producer warp streams K and V tiles of 128 keys into a ring, consumer warpgroups of 64 rows
//         each (three at D = 64, two at D = 128) multiply with wgmma, P V with P from registers
//         (src/cuda/attention/fa3_forward.cu). The default.
enum class Kernel : std::uint8_t { decomposed, fa2, fa3 };
const char* name(Kernel k);
// false on an unknown name.
bool parse_kernel(const std::string& s, Kernel& out);

// The device pointers of one forward call. Q, K and V may overlap (one QKV buffer); O may not
// overlap any of them. lse may be null (not written: inference needs no backward pass).
struct ForwardArgs {
    const void* q = nullptr;
    const void* k = nullptr;
    const void* v = nullptr;
    void* o = nullptr;
    float* lse = nullptr;
};
// Empty when `a` suits `d` (d passed check()): Q, K, V and O present and 16-byte aligned (the
// kernels move rows in 16-byte pieces), lse 4-byte aligned, O disjoint from Q, K, V and lse, and lse from Q, K and V;
// else one sentence saying why not.
std::string check_forward_args(const Desc& d, const ForwardArgs& a);

// The device pointers of one backward call: the forward's inputs, its O and lse, and dO; the
// gradients dQ, dK, dV written with the leading dimensions of Q, K, V. The inputs may overlap each
// other; no gradient may overlap an input, and the gradients may share one buffer only as column
// blocks of the same rows (a dQKV buffer, like the QKV buffer the forward reads).
struct BackwardArgs {
    const void* q = nullptr;
    const void* k = nullptr;
    const void* v = nullptr;
    const void* o = nullptr;
    const void* dout = nullptr;
    const float* lse = nullptr;
    void* dq = nullptr;
    void* dk = nullptr;
    void* dv = nullptr;
};
// Empty when `a` suits `d`, else one sentence saying why not (as check_forward_args).
std::string check_backward_args(const Desc& d, const BackwardArgs& a);

// A plan: the checked desc and its kernel. Building one does no device work; the first call encodes
// the kernel's tensor maps, and later calls with the same Q, K and V reuse them, so a repeated call
// does no host work beyond the launch. A plan is used by one thread at a time.
class Plan {
public:
    explicit Plan(const Desc& d, Kernel k = Kernel::fa3);  // throws std::invalid_argument with check()'s sentence
    const Desc& desc() const { return desc_; }  // with defaults filled in
    Kernel kernel() const { return kernel_; }
    // Enqueues the forward pass on `stream` (asynchronous). Throws std::invalid_argument for bad
    // args (check_forward_args) before anything is launched, std::runtime_error if built without
    // CUDA or a CUDA call fails.
    void forward(const ForwardArgs& a, Stream stream = nullptr) const;
    // Enqueues the backward pass: Dl = rowsum(dO O), then dK and dV per key tile in registers and
    // dQ accumulated in fp32 with atomic adds (its last bits may vary from run to run; dK and dV
    // do not), then dQ rounded. The fa3 plan runs it on wgmma (fa3_backward.cu), the others on
    // mma.sync (fa2_backward.cu); with desc.deterministic every plan takes mma.sync, with dQ in a
    // query-stationary pass of its own instead, no atomics. backward_kernel() names the choice.
    // Holds a workspace of 4 (B S H D + B H S) bytes, allocated on the first call.
    void backward(const BackwardArgs& a, Stream stream = nullptr) const;
    const char* backward_kernel() const;  // "fa3 backward", "fa2 backward" or "fa2 backward, deterministic"

    struct State;  // what the kernel keeps between calls (src/cuda/attention/plan.cu)

private:
    Desc desc_;
    Kernel kernel_;
    mutable std::shared_ptr<State> state_;
};

}  // namespace rigel::attention
