// Attention rung 1: the decomposed forward pass, the baseline of RIGEL's
// fused-against-decomposed finding. Per head (b, h), three launches:
//   S = Q K^T        rigel's GEMM library (NT), fp32 scores, S x S through memory
//   P = softmax(S)   a row kernel: scale, causal mask, the row's max and sum,
//                    P in bf16 and the logsumexp
//   O = P V          rigel's GEMM library (NN), bf16 out, straight into O's rows
// What it costs against the fused rungs is the S x S matrix written and read
// twice per head (fp32 scores, bf16 P) and 3 B H launches; what it shares with
// them is every flop. The scores and P live in one scratch buffer per plan,
// reused head after head.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <memory>

#include "cuda/attention/attention_kernels.cuh"
#include "cuda/check.cuh"
#include "rigel/gemm.hpp"

namespace rigel::cuda::attention {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float block_reduce(float v, float* scratch, bool is_max) {
    for (int o = 16; o > 0; o /= 2) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    __syncthreads();  // scratch is free (a previous reduction has been read)
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = is_max ? -INFINITY : 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) r = is_max ? fmaxf(r, scratch[w]) : r + scratch[w];
    return r;
}

// One CTA per row i of one head's scores: P[i, j] = exp(scale S[i, j] - lse_i)
// for j <= i when causal (0 after), lse_i = log sum_j exp(scale S[i, j]).
__global__ void __launch_bounds__(kThreads) softmax_rows_kernel(const float* scores, __nv_bfloat16* p, float* lse,
                                                                int seq, int ld, float scale, bool causal) {
    __shared__ float scratch[kThreads / 32];
    const int i = static_cast<int>(blockIdx.x);
    const float* row = scores + static_cast<std::int64_t>(i) * ld;
    __nv_bfloat16* prow = p + static_cast<std::int64_t>(i) * ld;
    const int valid = causal ? i + 1 : seq;
    float mx = -INFINITY;
    for (int j = static_cast<int>(threadIdx.x); j < valid; j += kThreads) mx = fmaxf(mx, scale * row[j]);
    mx = block_reduce(mx, scratch, true);
    float sum = 0.0f;
    for (int j = static_cast<int>(threadIdx.x); j < valid; j += kThreads) sum += expf(scale * row[j] - mx);
    sum = block_reduce(sum, scratch, false);
    const float l = mx + logf(sum);
    for (int j = static_cast<int>(threadIdx.x); j < seq; j += kThreads)
        prow[j] = __float2bfloat16_rn(j < valid ? expf(scale * row[j] - l) : 0.0f);
    if (threadIdx.x == 0 && lse != nullptr) lse[i] = l;
}

}  // namespace

// The scratch rows' stride: S rounded up to 8 elements, so that every row of
// the scores (fp32) and of P (bf16) starts on 16 bytes, as TMA requires.
std::int64_t scratch_ld(std::int64_t seq) { return (seq + 7) / 8 * 8; }

struct DecomposedState {
    rigel::gemm::Plan scores, output;
    std::int64_t ld;
    float* scratch = nullptr;  // S x ld fp32 scores, then S x ld bf16 P

    explicit DecomposedState(const rigel::attention::Desc& d)
        : scores(rigel::gemm::Desc{.m = d.seq, .n = d.seq, .k = d.head_dim, .a_op = rigel::gemm::Op::n,
                                   .b_op = rigel::gemm::Op::t, .d_type = rigel::gemm::Type::f32, .lda = d.ldq,
                                   .ldb = d.ldk, .ldd = scratch_ld(d.seq)}),
          output(rigel::gemm::Desc{.m = d.seq, .n = d.head_dim, .k = d.seq, .a_op = rigel::gemm::Op::n,
                                   .b_op = rigel::gemm::Op::n, .d_type = rigel::gemm::Type::bf16,
                                   .lda = scratch_ld(d.seq), .ldb = d.ldv, .ldd = d.ldo}),
          ld(scratch_ld(d.seq)) {
        const std::size_t elements = static_cast<std::size_t>(d.seq) * static_cast<std::size_t>(ld);
        scratch = static_cast<float*>(rigel::cuda::alloc_or_refuse(
            elements * (sizeof(float) + sizeof(__nv_bfloat16)),
            "the decomposed attention's S x S scores and P (S = " + std::to_string(d.seq) + ")"));
    }
    ~DecomposedState() {
        if (scratch) cudaFree(scratch);
    }
    DecomposedState(const DecomposedState&) = delete;
    DecomposedState& operator=(const DecomposedState&) = delete;
};

std::shared_ptr<DecomposedState> make_decomposed_state(const rigel::attention::Desc& d) {
    return std::make_shared<DecomposedState>(d);
}

void decomposed_forward(const rigel::attention::Desc& d, const rigel::attention::ForwardArgs& a, cudaStream_t stream,
                        DecomposedState& st) {
    const std::int64_t S = d.seq, D = d.head_dim;
    float* scores = st.scratch;
    auto* p = reinterpret_cast<__nv_bfloat16*>(scores + S * st.ld);  // S ld floats: a multiple of 32 bytes
    for (std::int64_t b = 0; b < d.batch; ++b)
        for (std::int64_t h = 0; h < d.heads; ++h) {
            const auto* q = static_cast<const __nv_bfloat16*>(a.q) + b * S * d.ldq + h * D;
            const auto* k = static_cast<const __nv_bfloat16*>(a.k) + b * S * d.ldk + h * D;
            const auto* v = static_cast<const __nv_bfloat16*>(a.v) + b * S * d.ldv + h * D;
            auto* o = static_cast<__nv_bfloat16*>(a.o) + b * S * d.ldo + h * D;
            float* lse = a.lse ? a.lse + (b * d.heads + h) * S : nullptr;
            st.scores.run({.a = q, .b = k, .d = scores}, stream);
            softmax_rows_kernel<<<static_cast<unsigned>(S), kThreads, 0, stream>>>(
                scores, p, lse, static_cast<int>(S), static_cast<int>(st.ld), d.scale, d.causal);
            RIGEL_CUDA_CHECK_LAUNCH();
            st.output.run({.a = p, .b = v, .d = o}, stream);
        }
}

}  // namespace rigel::cuda::attention
