// What every Hopper rung uses: the sm_90a guard, thin wrappers over the PTX of
// mbarrier, TMA (cp.async.bulk.tensor) and setmaxnreg, the 128B-swizzled
// shared-memory matrix descriptor, the accumulator epilogue, and on the host
// the tensor maps. wgmma itself and its fences: wgmma.cuh; the descriptor's
// fields and the (stage, phase) state of the mbarrier rings: sm90_types.cuh.
//
// Sources, PTX ISA 9.0 (CUDA 13.0), cited by section title (and number where
// it is stable across recent versions):
//   9.7.15.5.1.1  wgmma "Register Fragments" (the accumulator layout, below)
//   9.7.15.5.1.2  wgmma "Shared Memory Matrix Layout" and its matrix descriptor
//   "mbarrier" (init, arrive, expect_tx, try_wait.parity; phase completion)
//   "cp.async.bulk.tensor" and "Tensor Maps" / "Tensor Swizzling Modes" (TMA)
//   "setmaxnreg"; "fence.mbarrier_init" (the membar/fence section)
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/dtype.hpp"
#include "cuda/check.cuh"
#include "cuda/hopper/sm90_types.cuh"
#include "cuda/hopper/wgmma.cuh"
#include "ladder/rung.hpp"

// wgmma and setmaxnreg exist only in the architecture-specific target sm_90a;
// nvcc defines __CUDA_ARCH_FEAT_SM90_ALL when it compiles for compute_90a. Every
// Hopper kernel body is inside `#if RIGEL_SM90A_DEVICE`; built for anything
// else, the kernel traps with a message instead of computing nothing.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define RIGEL_SM90A_DEVICE 1
#else
#define RIGEL_SM90A_DEVICE 0
#endif

namespace rigel::cuda::sm90 {

// ---------------------------------------------------------------------------
// Tile geometry shared by all rungs.
//
// Every shared-memory tile is a stack of 128-byte rows: one row per row of A
// (or of B, which is N x K), holding 128 bytes of K (64 f16/bf16 or 128 fp8).
// TMA writes it with CU_TENSOR_MAP_SWIZZLE_128B, and wgmma reads it with the
// 128B swizzle mode of its descriptor: the same swizzle on both sides, so the
// data never passes through registers.
constexpr int kRowBytes = 128;       // the 128B swizzle span: one tile row
constexpr int kSwizzleAtom = 1024;   // 8 rows x 128 B: the swizzle pattern repeats here
constexpr int kWgmmaM = 64;          // rows of C per wgmma
constexpr int kWgmmaKBytes = 32;     // K bytes per wgmma: k16 x 2 B or k32 x 1 B
constexpr int kKStepsPerTile = kRowBytes / kWgmmaKBytes;  // 4 wgmma k-steps per 128-byte tile row
constexpr int kWarpgroup = 128;

constexpr int elem_bytes(DType t) {
    if (t == DType::f32) return 4;  // k38's block scales (make_map_128b's row strides are ld x this)
    return (t == DType::e4m3 || t == DType::e5m2) ? 1 : 2;
}
static_assert(elem_bytes(DType::f32) == 4 && elem_bytes(DType::bf16) == 2 && elem_bytes(DType::f16) == 2 &&
              elem_bytes(DType::e4m3) == 1 && elem_bytes(DType::e5m2) == 1);

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a - 1) / b + 1; }  // a >= 1

// ---------------------------------------------------------------------------
// Device side.

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// threadIdx.x read where it is used: the asm is volatile, so ptxas cannot hoist what is computed from it
// out of a kernel's tile loop and keep it live (or spilled) across the main loop, as it does with
// threadIdx.x. For the addresses of an epilogue that a kernel with few free registers runs once a tile.
__device__ __forceinline__ int tid_x_here() {
    std::uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    return static_cast<int>(t);
}

// The 128B swizzle is a function of shared-memory address bits (16-byte chunk
// bits [4,7) XOR row bits [7,10)), so every tile must start on a 1024-byte
// boundary for TMA's and wgmma's views to agree with descriptor base offset 0
// (9.7.15.5.1.2, "matrix base offset"). Dynamic shared memory is only
// guaranteed 16-byte alignment; the kernels ask for 1 KB extra and align here.
__device__ __forceinline__ unsigned char* align_to_atom(unsigned char* p) {
    const std::uint32_t a = smem_u32(p);
    return p + ((kSwizzleAtom - (a % kSwizzleAtom)) % kSwizzleAtom);
}

// -- mbarrier (PTX ISA "mbarrier") -------------------------------------------
// A 64-bit shared-memory object with a phase bit. A phase completes when the
// expected number of arrivals has happened AND the transaction count (bytes
// announced with expect_tx, paid off by TMA's complete_tx) is back to zero;
// then the phase bit flips. Waiting on parity P returns once the phase with
// parity P has completed. A freshly initialized barrier is in phase 0, and
// "the phase before it" (parity 1) counts as completed: a producer waiting on
// an empty slot with parity 1 passes at once the first time round.

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}

// Makes the initialized barriers visible to the async proxy (TMA's
// complete_tx) before any copy is issued; a __syncthreads follows it.
// No fence.proxy.async is needed elsewhere in these kernels: shared memory is
// written only by TMA and read only by wgmma, both in the async proxy, and
// ordered by the mbarriers (full: complete_tx, then try_wait's acquire; empty:
// wgmma.wait_group, then arrive, then the producer's try_wait). A kernel that
// wrote shared memory with ordinary stores for TMA or wgmma to read (an
// smem-staged epilogue with a TMA store) would need fence.proxy.async.shared::cta
// in each writing thread before its barrier.
__device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// try_wait has acquire semantics at CTA scope: what TMA wrote before the phase
// completed is visible to this thread (and to its wgmma) afterwards.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
    std::uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

// Whether the phase of `parity` has completed, without waiting (test_wait): the probe
// "pingpong_timeline" times only the waits that do wait.
__device__ __forceinline__ bool mbar_ready(std::uint64_t* bar, std::uint32_t parity) {
    std::uint32_t done = 0;
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
    return done != 0;
}

// Special registers: the SM's cycle counter, the global timer (ns) and the SM's index.
__device__ __forceinline__ std::uint64_t sm_clock() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}
__device__ __forceinline__ std::uint64_t global_timer_ns() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ std::uint32_t sm_id() {
    std::uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// -- TMA (PTX ISA "cp.async.bulk.tensor") ------------------------------------
// One thread copies a box of the tensor map (box_rows x 128 bytes here) into
// shared memory, swizzled, and the copy engine signals `bar` with the bytes it
// wrote. Coordinates are in elements, innermost (K) first. Elements outside the
// tensor (M, N or K tails) are written as zeros and still count as bytes, so
// expect_tx always announces the full box.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int k_elem,
                                            int row) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
        "l"(reinterpret_cast<std::uint64_t>(map)), "r"(k_elem), "r"(row), "r"(smem_u32(bar))
        : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// -- wgmma shared-memory matrix descriptor (9.7.15.5.1.2) --------------------
// The fields and their bits: sm90_types.cuh, SmemDescriptor.
// For a K-major operand in the 128B swizzle, one "swizzle atom" is 8 rows of
// 128 bytes. The stride byte offset (SBO) is the distance between consecutive
// 8-row groups along M (or N): 1024 bytes, as our rows are packed. The leading
// byte offset (LBO) is the distance between atoms along K; it is unused when
// the K extent of one wgmma (32 bytes) lies inside the 128-byte row, and the
// ISA says to set it to 1 (16 bytes). Base offset 0: tiles are 1024-aligned.
__device__ __forceinline__ std::uint64_t sw128_kmajor_desc(const void* tile) {
    return SmemDescriptor{.start_address = smem_u32(tile),
                          .leading_byte_offset = 16,
                          .stride_byte_offset = kSwizzleAtom,
                          .swizzle = Swizzle::b128}
        .encode();
}

// Advancing along K inside a swizzled tile: wgmma k-step j reads bytes
// [32j, 32j + 32) of every row, so its descriptor is the tile's with the start
// address moved by 32j bytes. The hardware applies the swizzle XOR to the
// resulting address, which is exactly where TMA put logical chunk 2j (and
// 2j + 1) of each row.
__device__ __forceinline__ std::uint64_t desc_k_step(std::uint64_t desc, int j) {
    return desc_advance(desc, kWgmmaKBytes * j);
}

// wgmma_fence, wgmma_commit and wgmma_wait<N>: wgmma.cuh.

// Keeps the compiler from moving reads or writes of accumulator registers
// across the asynchronous region (between the fence and the wait): each
// register passes through an empty asm that "may change it".
template <int R>
__device__ __forceinline__ void fence_registers(float (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// -- setmaxnreg (PTX ISA "setmaxnreg") ---------------------------------------
// Moves registers between warpgroups of a running CTA: every thread of the
// warpgroup executes it together. It takes effect only when the kernel has a
// register cap at entry (__launch_bounds__(threads, 1)).
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(R % 8 == 0 && R >= 24 && R <= 256);
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(R % 8 == 0 && R >= 24 && R <= 256);
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}

// -- epilogue ----------------------------------------------------------------
// The fp32 accumulator of wgmma m64nNk16 / m64nNk32 (9.7.15.5.1.1, figure
// "register fragment layout for accumulator matrix D"): thread t of the
// warpgroup, warp w = t / 32, lane l = t % 32, holds N/2 floats d[i] with
//     row = 16 w + l / 4 + 8 * ((i / 2) % 2)
//     col = 8 * (i / 4) + 2 * (l % 4) + i % 2
// so d[4j], d[4j+1] are (r, 8j + 2(l%4) + {0,1}) and d[4j+2], d[4j+3] the same
// columns 8 rows down. Stores are guarded: rows >= m and columns >= n (the
// zero-filled tails) are not written. Pairs go out as one 8-byte store when n
// is even (then every pair is 8-byte aligned, as C comes from cudaMalloc).
template <int N>
__device__ __forceinline__ void store_accumulators(const float (&d)[N / 2], float* __restrict__ c, int m, int n,
                                                   int row0, int col0) {
    // Bounds are compared as offsets inside the tile against what is left of
    // the matrix, so no index passes 2^31 even when M or N is near it.
    const int rows_left = m - row0;  // <= 0: this warpgroup's rows are all past M
    const int cols_left = n - col0;  // >= 1
    if (rows_left <= 0) return;
    const int t = static_cast<int>(threadIdx.x) % kWarpgroup;
    const int warp = t / 32;
    const int lane = t % 32;
    const bool pairs = (n % 2) == 0;
    float* const c_tile = c + static_cast<std::int64_t>(row0) * n + col0;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int r = 16 * warp + lane / 4 + 8 * half;
        if (r >= rows_left) continue;
        float* const c_row = c_tile + static_cast<std::int64_t>(r) * n;
#pragma unroll
        for (int j = 0; j < N / 8; ++j) {
            const int col = 8 * j + 2 * (lane % 4);
            const float v0 = d[4 * j + 2 * half];
            const float v1 = d[4 * j + 2 * half + 1];
            if (pairs && col + 1 < cols_left) {
                *reinterpret_cast<float2*>(c_row + col) = make_float2(v0, v1);
            } else {
                if (col < cols_left) c_row[col] = v0;
                if (col + 1 < cols_left) c_row[col + 1] = v1;
            }
        }
    }
}

__device__ __forceinline__ void trap_without_sm90a(const char* rung) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        printf("%s: built without sm_90a (wgmma, setmaxnreg); compile with "
               "-gencode=arch=compute_90a,code=sm_90a\n",
               rung);
    __trap();
}

// ---------------------------------------------------------------------------
// Host side.

inline cudaStream_t stream_of(const GemmProblem& p) { return static_cast<cudaStream_t>(p.stream); }

// The runner's CheckFn sees no pointers; the launcher checks them.
inline void require_alignment(const GemmProblem& p, const char* rung) {
    auto misaligned = [](const void* ptr, std::uintptr_t to) { return reinterpret_cast<std::uintptr_t>(ptr) % to; };
    if (misaligned(p.a, 16) || misaligned(p.b, 16))
        throw std::invalid_argument(std::string(rung) + ": A and B must start on 16-byte boundaries (TMA)");
    if (misaligned(p.c, 8))
        throw std::invalid_argument(std::string(rung) + ": C must start on an 8-byte boundary (paired stores)");
}

inline int sm_count() {
    int dev = 0;
    RIGEL_CUDA_CHECK(cudaGetDevice(&dev));
    int sms = 0;
    RIGEL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
}

// The current device's DRAM peak in bytes per second, from its memory clock and bus width (two
// transfers a clock): an H100 SXM's HBM3 3.35e12, an H200's HBM3e 4.8e12. The dispatcher's rule 5a
// reads it (gemm::choose).
inline double dram_bytes_per_second() {
    int dev = 0;
    RIGEL_CUDA_CHECK(cudaGetDevice(&dev));
    int khz = 0, bits = 0;
    RIGEL_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev));
    RIGEL_CUDA_CHECK(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    return 2.0 * 1e3 * static_cast<double>(khz) * static_cast<double>(bits) / 8.0;
}

// cuTensorMapEncodeTiled is a driver API function; it is reached through the
// runtime's entry-point query so that rigel needs no link against libcuda.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void* sym = nullptr;
        cudaDriverEntryPointQueryResult found{};
        RIGEL_CUDA_CHECK(
            cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &sym, 12000, cudaEnableDefault, &found));
        if (found != cudaDriverEntryPointSuccess || sym == nullptr)
            throw std::runtime_error("the CUDA driver has no cuTensorMapEncodeTiled (TMA needs driver >= 12.0)");
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(sym);
    }();
    return fn;
}

inline CUtensorMapDataType tensor_map_type(DType t) {
    switch (t) {
        case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
        case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        case DType::e4m3:
        case DType::e5m2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;  // TMA only moves the bytes
        case DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;  // k38's block scales (box_cols boxes)
        default: throw std::invalid_argument("no Hopper rung takes type " + std::string(name(t)));
    }
}

// The tensor map of a row-major matrix of `rows` rows of `cols` elements,
// row stride `ld` elements (ld * element bytes a multiple of 16: TMA's rule),
// in boxes of box_rows rows x 128 bytes, 128B swizzle, zero fill outside. A
// K-major operand has cols = K and box_rows = the tile's rows; an MN-major one
// (the library's transposed operands) is stored K x M and has box_rows = the
// k-tile. The map is a 128-byte struct passed to the kernel by value as a
// __grid_constant__ parameter.
// box_cols > 0: boxes of box_rows rows x box_cols elements instead, unswizzled
// (box_cols x element bytes a multiple of 16: the 128 x 168 tiles' last 40
// columns of D, k38's fp32 block scales).
// l2: how much L2 fetches around each request (256 bytes for the operands;
// k38's scale arrays keep the none they had before they came here: with none,
// 64, 128 or 256 bytes k38 ran at the same rate, results/h200/experiments).
inline CUtensorMap make_map_128b(const void* base, DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                 int box_rows, int box_cols = 0,
                                 CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
    const int eb = elem_bytes(t);
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * static_cast<cuuint64_t>(eb)};
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols > 0 ? box_cols : kRowBytes / eb),
                               static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUresult r = tensor_map_encoder()(
        &map, tensor_map_type(t), 2, const_cast<void*>(base), dims, strides, box, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, box_cols > 0 ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B, l2,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                 ") for a " + std::to_string(rows) + " x " + std::to_string(cols) + " " +
                                 std::string(name(t)) + " operand with row stride " + std::to_string(ld));
    return map;
}

// A K-major operand packed: `rows` rows of `k` elements.
inline CUtensorMap make_kmajor_map(const void* base, DType t, std::int64_t rows, std::int64_t k, int box_rows) {
    return make_map_128b(base, t, rows, k, k, box_rows);
}

// Encoding a map is host work of a microsecond or so, inside the timed region
// when it precedes the launch; the last map per operand is kept, keyed on
// everything it encodes.
class TensorMapCache {
public:
    // A packed K-major operand (the ladder's).
    const CUtensorMap& get(const void* base, DType t, std::int64_t rows, std::int64_t k, int box_rows) {
        return get(base, t, rows, k, k, box_rows);
    }
    // box_cols > 0: make_map_128b's unswizzled boxes of box_cols elements; l2: its L2 promotion.
    const CUtensorMap& get(const void* base, DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                           int box_rows, int box_cols = 0,
                           CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
        const Key key{base, t, rows, cols, ld, box_rows, box_cols, l2};
        if (!valid_ || !(key == key_)) {
            map_ = make_map_128b(base, t, rows, cols, ld, box_rows, box_cols, l2);
            key_ = key;
            valid_ = true;
        }
        return map_;
    }

private:
    struct Key {
        const void* base;
        DType t;
        std::int64_t rows, cols, ld;
        int box_rows, box_cols;
        CUtensorMapL2promotion l2;
        bool operator==(const Key&) const = default;
    };
    Key key_{};
    CUtensorMap map_{};
    bool valid_ = false;
};

}  // namespace rigel::cuda::sm90
