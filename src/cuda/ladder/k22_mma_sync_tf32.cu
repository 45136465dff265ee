// k22_mma_sync_tf32: k21's pipeline on tf32 (fp32 words already rounded to
// tf32; fp32 accumulation, fp32 C). B is N x K (BLayout::n_by_k).
// Run alone: rigel ladder --backend cuda --rungs k22_mma_sync_tf32 --dtype tf32 --sizes 4096
//
// Adds over k21: nothing but the instruction, mma.sync.m16n8k8.tf32: the same
// 128 x 256 block tile, the same 128 bytes of K per stage (32 tf32 values, four
// k8 steps), the same swizzle, cp.async stages and ldmatrix.x4. ldmatrix moves
// 16-bit pairs, but read as 32-bit words its 8x8 b16 matrix is an 8 x 4 tf32
// matrix in which lane l holds word (l & 3) of row (l >> 2): exactly the tf32
// A and B fragments of PTX ISA 9.7.14.5.7 (a0 = (g, q), a1 = (g+8, q),
// a2 = (g, q+4), a3 = (g+8, q+4); b0 = (k q, n g), b1 = (k q+4, n g)), the
// same byte map as 16-bit types (mma_layout.cuh). With B stored K x N the
// words would need transposing, which ldmatrix.trans cannot do for 32-bit
// elements: that is why B is N x K here.
// The operands carry tf32 values in fp32 words and go in as they are (no
// cvt.rna.tf32): the tensor core reads the top 19 bits, and the low 13 are
// already zero.
// Tails: any M, N; K % 4 == 0 on cp.async, other K element by element.
// Bottleneck: the tf32 mma rate, half the 16-bit rate on the same tensor
// cores; each flop also needs twice the bytes of bf16, so L2 and shared-memory
// bandwidth weigh twice as much.
// Prediction: about half of k21's bf16 Tflop/s, 55-65 % of cuBLAS tf32.
// Measured: README.md, "4096 x 4096 x 4096" (k22_mma_sync_tf32).
#include <cuda_runtime.h>

#include "cuda/ladder/tensor_rungs.cuh"

namespace rigel::cuda {
namespace {

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: a = four .b32 (one tf32
// each), b = two, c/d = four f32.
struct MmaTf32 {
    static constexpr int kElemBytes = 4;
    __device__ __forceinline__ static void mma(float (&d)[4], const std::uint32_t (&a)[4],
                                               const std::uint32_t (&b)[2]) {
        asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

using Cfg = mma::MmaSyncTileConfig;

}  // namespace

std::string k22_mma_sync_tf32_check(const GemmProblem& p) {
    return tensor::check_tile_grid(p, Cfg::kBM, Cfg::kBN);
}

void k22_mma_sync_tf32(const GemmProblem& p) {
    if (p.type != DType::tf32)
        throw std::invalid_argument("k22_mma_sync_tf32 takes tf32, not " + std::string(name(p.type)));
    tensor::launch_mma_sync<Cfg, MmaTf32>(p);
}

}  // namespace rigel::cuda
