// Probe alignment: which base offsets, strides, box sizes, leading dimensions
// and shapes the paths of rigel's Hopper rungs accept, and what a violation
// does: refused up front with an error, or accepted and silently wrong.
//   (a) TMA tensor maps (cuTensorMapEncodeTiled, reached through the helper in
//       sm90.cuh): for bf16 and 1-byte tensors, the base offset, row stride,
//       inner box bytes against each swizzle span, box dims, interleave,
//       element strides and box start coordinates are swept. Each map the
//       driver accepts is used for one real cp.async.bulk.tensor load into
//       poisoned shared memory, and the whole region (box, zero fill at the
//       tensor's edge, and a guard after the box) is compared byte for byte
//       with the host copy of the same bytes.
//   (b) cuBLASLt's fp8 e4m3 GEMM: pointer offsets, leading dimensions, M, N,
//       K and the transpose combination; the heuristic's answer, the matmul
//       status, and for each run the whole D allocation against the float64
//       GEMM of the same bytes (small-integer inputs: exact).
//   (c) rigel's own Hopper rungs: each rung's check on K that breaks the
//       16-byte row rule and on legal odd shapes, and the launchers' pointer
//       check; every refusal must name the rule.
// One finding per rule (src/probes/alignment/alignment_rules.cpp derives the minimal rule
// from the table of cases and sets it beside the documented one); the raw
// sweep is in each finding's detail. A case that faults the device stops the
// device work (the rest is reported as not run), so the cases most likely to
// fault (misaligned pointers passed to cuBLASLt against its preference) run
// last.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/probes/cublaslt_objects.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "cuda/registry_parts.hpp"
#include "probes/alignment/alignment_rules.hpp"

namespace rigel::probes {
namespace {

constexpr char kProbe[] = "alignment";
constexpr std::uint8_t kSmemPoison = 0xC3;  // shared memory before each load
constexpr std::uint8_t kDumpPoison = 0x5A;  // the global copy of it, before the kernel
constexpr std::uint8_t kGemmPoison = 0xA5;  // D before each GEMM: finite in fp32 and bf16, never an integer
constexpr int kLoadThreads = 128;
constexpr unsigned long long kLoadTimeoutNs = 50'000'000ull;  // a box lands in microseconds
constexpr std::size_t kMaxDumpBytes = 64 * 1024;
constexpr std::size_t kAtomSlack = 1024;  // the kernel aligns its tile to 1024 bytes
constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr int kHeuristicResults = 8;  // how many algorithms the heuristic may offer (the first one runs)

constexpr char kDriverDoc[] = "CUDA Driver API 13.0, cuTensorMapEncodeTiled (cuda.h)";
constexpr char kTmaPath2d[] = "cuTensorMapEncodeTiled + cp.async.bulk.tensor.2d.tile (mbarrier complete_tx)";
constexpr char kTmaPath3d[] = "cuTensorMapEncodeTiled + cp.async.bulk.tensor.3d.tile (mbarrier complete_tx)";
constexpr char kTmaPath2d3d[] = "cuTensorMapEncodeTiled + cp.async.bulk.tensor.2d/.3d.tile (mbarrier complete_tx)";
constexpr char kTmaTypes[] = "bf16, u8 (fp8)";
constexpr char kCublasDoc[] =
    "cuBLAS 13 documentation, cublasLtMatmul() (FP8 requirements) and section 2.1.11 Tensor Core Usage";
constexpr char kFp8Requirement[] =
    "FP8: 'All matrix dimensions must meet the optimal requirements listed in Tensor Core Usage (i.e. pointers and "
    "matrix dimension must support 16-byte alignment)'; Tensor Core Usage: ";

// ---- kernel ----------------------------------------------------------------------------------

enum LoadStatus : int { kLoadNotRun = 0, kLoadDone = 1, kLoadTimedOut = 2, kLoadNoCode = 3 };

struct LoadArgs {
    int rank;
    int c0, c1, c2;
    unsigned expect_bytes;  // announced with expect_tx: the bytes the box delivers
    unsigned dump_bytes;    // shared memory poisoned before and copied out after
    unsigned long long timeout_ns;
};

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// sm90::mbar_wait without end: a map the driver accepted but whose box does not
// deliver the bytes announced would hang the probe; this gives up instead.
__device__ bool mbar_wait_bounded(std::uint64_t* bar, std::uint32_t parity, unsigned long long timeout_ns) {
    const unsigned long long start = global_ns();
    for (;;) {
        std::uint32_t done = 0;
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(cuda::sm90::smem_u32(bar)), "r"(parity)
            : "memory");
        if (done) return true;
        if (global_ns() - start > timeout_ns) return false;
    }
}

// The 3-D form of sm90::tma_load_2d (coordinates innermost first).
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1,
                                            int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(cuda::sm90::smem_u32(dst)),
        "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(cuda::sm90::smem_u32(bar))
        : "memory");
}

// One CTA: poison dump_bytes of shared memory, load one box with TMA, wait for
// its bytes on an mbarrier (bounded), and copy the whole region out.
__global__ void __launch_bounds__(kLoadThreads)
    tma_box_kernel(const __grid_constant__ CUtensorMap map, const LoadArgs a, std::uint8_t* __restrict__ out,
                   int* __restrict__ status) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char smem_raw[];
    __shared__ alignas(8) std::uint64_t bar;
    __shared__ int timed_out;
    unsigned char* tile = cuda::sm90::align_to_atom(smem_raw);
    for (unsigned i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) tile[i] = kSmemPoison;
    // The poison is written through the generic proxy and the box through the
    // async proxy: order the first before the second.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    if (threadIdx.x == 0) {
        timed_out = 0;
        cuda::sm90::mbar_init(&bar, 1);
        cuda::sm90::fence_mbarrier_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        cuda::sm90::mbar_arrive_expect_tx(&bar, a.expect_bytes);
        if (a.rank == 2)
            cuda::sm90::tma_load_2d(tile, &map, &bar, a.c0, a.c1);
        else
            tma_load_3d(tile, &map, &bar, a.c0, a.c1, a.c2);
    }
    if (!mbar_wait_bounded(&bar, 0, a.timeout_ns)) atomicExch(&timed_out, 1);
    __syncthreads();
    if (timed_out) {
        if (threadIdx.x == 0) *status = kLoadTimedOut;
        return;
    }
    for (unsigned i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) out[i] = tile[i];
    if (threadIdx.x == 0) *status = kLoadDone;
#else
    if (threadIdx.x == 0) *status = kLoadNoCode;
#endif
}

// ---- shared host pieces ----------------------------------------------------------------------

// Whether the context survived a failed call: a sticky error (a fault) keeps
// coming back after cudaGetLastError.
bool context_lost() {
    (void)cudaGetLastError();
    return cudaDeviceSynchronize() != cudaSuccess;
}

struct DeviceState {
    bool lost = false;
    std::string why;  // the case that lost it
};

std::string cuda_text(cudaError_t e) { return cudaGetErrorName(e); }

std::string cu_result_text(CUresult r) {
    static const PFN_cuGetErrorName_v6000 get_name = [] {
        void* sym = nullptr;
        cudaDriverEntryPointQueryResult found{};
        if (cudaGetDriverEntryPointByVersion("cuGetErrorName", &sym, 12000, cudaEnableDefault, &found) != cudaSuccess ||
            found != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return static_cast<PFN_cuGetErrorName_v6000>(nullptr);
        }
        return reinterpret_cast<PFN_cuGetErrorName_v6000>(sym);
    }();
    const char* text = nullptr;
    if (get_name && get_name(r, &text) == CUDA_SUCCESS && text)
        return std::string(text) + " (" + std::to_string(static_cast<int>(r)) + ")";
    return "CUresult " + std::to_string(static_cast<int>(r));
}

std::string lt_status_text(cublasStatus_t s) { return cublasLtGetStatusName(s); }

// ---- (a) TMA ---------------------------------------------------------------------------------

enum class TmaRule : std::uint8_t {
    base,
    stride_multiple,
    stride_covers_row,
    stride_limit,
    inner_multiple,
    box_dim,
    swizzle_none,
    swizzle_32,
    swizzle_64,
    swizzle_128,
    interleave_rank,
    interleave32_base,
    interleave32_stride,
    interleave_swizzle,
    elem_strides,
    start_coords,
};

struct TmaCase {
    TmaRule rule;
    SweptCase sc;
    TmaGeometry g;
    bool load = true;  // false: encode only (the tensor it describes cannot exist)
    std::optional<TmaLoadVerdict> verdict;
    bool faults = false;  // its load faulted the device on the H200 machine (left out under --avoid-faults)
};

TmaGeometry tile_2d(int eb, std::uint64_t cols, std::uint64_t rows, std::uint64_t stride, std::uint32_t box0,
                    std::uint32_t box1, int swizzle, std::int32_t c0, std::int32_t c1) {
    TmaGeometry g;
    g.elem_bytes = eb;
    g.rank = 2;
    g.dims = {cols, rows, 1};
    g.strides = {stride, 0};
    g.box = {box0, box1, 1};
    g.swizzle_bytes = swizzle;
    g.coords = {c0, c1, 0};
    return g;
}

// A 3-D interleaved tensor: dim 0 is one interleave chunk (16 or 32 bytes).
TmaGeometry interleaved_3d(int chunk_bytes, std::uint64_t row_stride, int swizzle) {
    TmaGeometry g;
    g.elem_bytes = 2;
    g.rank = 3;
    const std::uint32_t chunk = static_cast<std::uint32_t>(chunk_bytes / 2);
    g.dims = {chunk, 32, 2};
    g.strides = {row_stride, row_stride * 32};
    g.box = {chunk, 8, 1};
    g.interleave_bytes = chunk_bytes;
    g.swizzle_bytes = swizzle;
    g.coords = {0, 28, 1};  // rows 28..35 of 32: the last four are zero fill
    return g;
}

std::string type_name(int eb) { return eb == 2 ? "bf16" : "u8"; }

void add(std::vector<TmaCase>& v, TmaRule rule, std::string label, std::int64_t value, bool legal, TmaGeometry g,
         bool load = true) {
    TmaCase c{rule, {}, g, load, std::nullopt, false};
    c.sc.label = std::move(label);
    c.sc.value = value;
    c.sc.doc_legal = legal;
    v.push_back(std::move(c));
}

std::vector<TmaCase> make_tma_cases() {
    std::vector<TmaCase> v;
    for (int eb : {2, 1}) {
        const std::string t = type_name(eb);
        const std::uint32_t row_elems = 128 / static_cast<std::uint32_t>(eb);
        // Base offset: rigel's own map (128-byte rows, 128B swizzle), a box of
        // 32 rows from row 16 of 40 (the last 8 are zero fill).
        for (int off : {0, 1, 2, 4, 8, 16, 32, 64}) {
            TmaGeometry g = tile_2d(eb, row_elems, 40, 128, row_elems, 32, 128, 0, 16);
            g.base_offset = off;
            add(v, TmaRule::base, t + " +" + std::to_string(off) + " B", off, off % 16 == 0, g);
        }
        // Row stride = the row's bytes (tight rows of K elements), boxes of
        // 64 bytes x 16 rows from row 12 of 24: zero fill past K and past the
        // last row.
        const std::vector<int> ks = eb == 2 ? std::vector<int>{8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64}
                                            : std::vector<int>{8, 16, 24, 40, 48, 72, 80, 112, 136, 144};
        for (int k : ks) {
            const std::uint64_t stride = static_cast<std::uint64_t>(k) * static_cast<std::uint64_t>(eb);
            add(v, TmaRule::stride_multiple, t + " K=" + std::to_string(k) + " (" + std::to_string(stride) + " B)",
                static_cast<std::int64_t>(stride), stride % 16 == 0,
                tile_2d(eb, static_cast<std::uint64_t>(k), 24, stride, 64 / static_cast<std::uint32_t>(eb), 16, 0, 0,
                        12));
        }
        // Inner box bytes not a multiple of 16 (no swizzle, no interleave).
        for (int bytes : {8, 16, 24, 32, 40, 48}) {
            const auto box0 = static_cast<std::uint32_t>(bytes / eb);
            add(v, TmaRule::inner_multiple, t + " box " + std::to_string(box0) + " (" + std::to_string(bytes) + " B)",
                bytes, bytes % 16 == 0, tile_2d(eb, row_elems, 24, 128, box0, 8, 0, 0, 20));
        }
        // Inner box bytes against each swizzle span: 8 rows from row 4 of 10.
        const std::uint64_t wide = 384 / static_cast<std::uint64_t>(eb);
        for (int swizzle : {0, 32, 64, 128}) {
            const TmaRule rule = swizzle == 0    ? TmaRule::swizzle_none
                                 : swizzle == 32 ? TmaRule::swizzle_32
                                 : swizzle == 64 ? TmaRule::swizzle_64
                                                 : TmaRule::swizzle_128;
            for (int bytes : {16, 32, 64, 128, 256}) {
                const auto box0 = static_cast<std::uint32_t>(bytes / eb);
                add(v, rule, t + " " + std::to_string(bytes) + " B", bytes, swizzle == 0 || bytes <= swizzle,
                    tile_2d(eb, wide, 10, 384, box0, 8, swizzle, 0, 4));
            }
        }
    }
    // A row stride that is a multiple of 16 bytes but of nothing larger, of 32
    // but not 64, ...; and a few that are not multiples of 16. bf16 rows of 20
    // elements (40 bytes) padded to the stride.
    for (int stride : {44, 48, 56, 72, 80, 96, 144, 160, 192, 208, 320, 384}) {
        add(v, TmaRule::stride_multiple, "bf16 K=20 stride " + std::to_string(stride) + " B", stride, stride % 16 == 0,
            tile_2d(2, 20, 24, static_cast<std::uint64_t>(stride), 32, 16, 0, 0, 12));
    }
    // A stride shorter than the row (rows overlap): bf16 rows of 24 (48 bytes).
    for (int stride : {16, 32, 48, 64}) {
        add(v, TmaRule::stride_covers_row, "bf16 48 B rows, stride " + std::to_string(stride) + " B", stride - 48,
            stride >= 48, tile_2d(2, 24, 24, static_cast<std::uint64_t>(stride), 32, 16, 0, 0, 12));
    }
    // The stride limit (2^40): encode only, the tensor cannot exist.
    for (std::uint64_t stride : {(1ull << 40) - 16, 1ull << 40, 1ull << 41}) {
        add(v, TmaRule::stride_limit, "bf16 stride " + std::to_string(stride) + " B", static_cast<std::int64_t>(stride),
            stride < (1ull << 40), tile_2d(2, 64, 2, stride, 64, 2, 0, 0, 0), false);
    }
    // Box dims: rows of a bf16 box (64 bytes wide) from row 100 of 300, and
    // the inner dim of a u8 box without swizzle.
    for (std::uint32_t rows : {1u, 64u, 255u, 256u, 257u, 512u}) {
        add(v, TmaRule::box_dim, "bf16 boxDim[1]=" + std::to_string(rows), rows, rows <= 256,
            tile_2d(2, 64, 300, 128, 32, rows, 0, 0, 100));
    }
    for (std::uint32_t cols : {128u, 256u, 272u, 512u}) {
        add(v, TmaRule::box_dim, "u8 boxDim[0]=" + std::to_string(cols), cols, cols <= 256,
            tile_2d(1, 320, 8, 320, cols, 4, 0, 0, 6));
    }
    // Interleave: rank 2 (refused by the documentation) and rank 3.
    {
        TmaGeometry g2 = tile_2d(2, 8, 32, 16, 8, 8, 0, 0, 28);
        g2.interleave_bytes = 16;
        add(v, TmaRule::interleave_rank, "interleave 16B, rank 2", 2, false, g2);
        add(v, TmaRule::interleave_rank, "interleave 16B, rank 3", 3, true, interleaved_3d(16, 16, 0));
    }
    for (int off : {0, 16, 32, 48, 64}) {
        TmaGeometry g = interleaved_3d(32, 32, 32);
        g.base_offset = off;
        add(v, TmaRule::interleave32_base, "interleave 32B +" + std::to_string(off) + " B", off, off % 32 == 0, g);
    }
    for (int stride : {32, 48, 64, 80, 96}) {
        add(v, TmaRule::interleave32_stride, "interleave 32B stride " + std::to_string(stride) + " B", stride,
            stride % 32 == 0, interleaved_3d(32, static_cast<std::uint64_t>(stride), 32));
    }
    for (int swizzle : {0, 32, 64, 128}) {
        add(v, TmaRule::interleave_swizzle, "interleave 32B, swizzle " + std::to_string(swizzle) + "B", swizzle,
            swizzle == 32, interleaved_3d(32, 32, swizzle));
    }
    for (int swizzle : {0, 32, 64, 128}) {
        add(v, TmaRule::interleave_swizzle, "interleave 16B, swizzle " + std::to_string(swizzle) + "B", swizzle, true,
            interleaved_3d(16, 16, swizzle));
    }
    // Element strides of dimension 1: rows 50, 50+s, ... of 64.
    for (std::uint32_t s : {0u, 1u, 2u, 8u, 9u}) {
        TmaGeometry g = tile_2d(2, 64, 64, 128, 32, 16, 0, 0, 50);
        g.elem_strides = {1, s, 1};
        add(v, TmaRule::elem_strides, "bf16 elementStrides[1]=" + std::to_string(s), s, s >= 1 && s <= 8, g, s > 0);
    }
    // Box start coordinates: 16-byte multiples first (zero, positive,
    // negative, straddling the K edge), then starts that are not, which have
    // faulted the device (cudaErrorIllegalInstruction), so that one fault
    // costs as few cases as possible: 8 bytes in, then 2.
    for (int c0 : {0, 8, -8, 96}) {
        add(v, TmaRule::start_coords, "bf16 x=" + std::to_string(c0), c0, true,
            tile_2d(2, 104, 24, 208, 32, 8, 0, c0, 20));
    }
    for (int c0 : {64, -64}) {
        add(v, TmaRule::start_coords, "bf16 128B swizzle x=" + std::to_string(c0), c0, true,
            tile_2d(2, 104, 24, 208, 64, 8, 128, c0, 20));
    }
    for (int c0 : {16, -16}) {
        add(v, TmaRule::start_coords, "u8 x=" + std::to_string(c0), c0, true,
            tile_2d(1, 208, 24, 208, 64, 8, 0, c0, 20));
    }
    for (int c0 : {4, 1}) {
        add(v, TmaRule::start_coords, "bf16 x=" + std::to_string(c0), c0, true,
            tile_2d(2, 104, 24, 208, 32, 8, 0, c0, 20));
        v.back().faults = true;
    }
    return v;
}

CUresult encode_map(const TmaGeometry& g, void* base, CUtensorMap* map) {
    cuuint64_t dims[3], strides[2];
    cuuint32_t box[3], elem_strides[3];
    for (int d = 0; d < g.rank; ++d) {
        dims[d] = g.dims[static_cast<std::size_t>(d)];
        box[d] = g.box[static_cast<std::size_t>(d)];
        elem_strides[d] = g.elem_strides[static_cast<std::size_t>(d)];
        if (d > 0) strides[d - 1] = g.strides[static_cast<std::size_t>(d - 1)];
    }
    const CUtensorMapDataType type =
        g.elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const CUtensorMapInterleave interleave = g.interleave_bytes == 32   ? CU_TENSOR_MAP_INTERLEAVE_32B
                                             : g.interleave_bytes == 16 ? CU_TENSOR_MAP_INTERLEAVE_16B
                                                                        : CU_TENSOR_MAP_INTERLEAVE_NONE;
    const CUtensorMapSwizzle swizzle = g.swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                       : g.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                       : g.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                               : CU_TENSOR_MAP_SWIZZLE_NONE;
    return cuda::sm90::tensor_map_encoder()(map, type, static_cast<cuuint32_t>(g.rank), base, dims, strides, box,
                                            elem_strides, interleave, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

void run_tma_case(TmaCase& c, std::uint64_t seed, DeviceState& dev, bool avoid_faults) {
    SweptCase& sc = c.sc;
    if (dev.lost) {
        sc.outcome = CaseOutcome::not_run;
        sc.evidence = dev.why;
        return;
    }
    if (c.faults && avoid_faults) {
        sc.outcome = CaseOutcome::not_run;
        sc.evidence = "left out (--avoid-faults): this load faulted the device on the H200 machine";
        return;
    }
    const std::size_t bytes =
        c.load ? static_cast<std::size_t>(tma_allocation_extent(c.g)) + 256 : static_cast<std::size_t>(512);
    const std::vector<std::uint8_t> host = nonzero_pattern(bytes, seed);
    DeviceArray<std::uint8_t> alloc(host);
    alignas(64) CUtensorMap map{};
    const CUresult r = encode_map(c.g, alloc.get() + c.g.base_offset, &map);
    if (r != CUDA_SUCCESS) {
        sc.outcome = CaseOutcome::refused;
        sc.evidence = "cuTensorMapEncodeTiled: " + cu_result_text(r);
        return;
    }
    if (!c.load) {
        sc.outcome = CaseOutcome::unchecked;
        sc.evidence = "encode accepted it; not loaded (the tensor it describes cannot be allocated)";
        return;
    }
    if (c.g.interleave_bytes != 0) {
        // rigel does not model where an interleaved box lands in shared
        // memory, so a byte comparison would test that model, not the device.
        sc.outcome = CaseOutcome::unchecked;
        sc.evidence = "encode accepted it; not loaded (the interleaved shared-memory layout is not modelled)";
        return;
    }
    const std::size_t dump = tma_dump_bytes(c.g);
    if (dump > kMaxDumpBytes) {
        sc.outcome = CaseOutcome::unchecked;
        sc.evidence = "encode accepted it; not loaded (" + std::to_string(dump) + " bytes of shared memory)";
        return;
    }
    DeviceArray<std::uint8_t> out(dump);
    DeviceArray<int> status(1);
    out.fill_bytes(kDumpPoison);
    status.fill_bytes(0);
    const LoadArgs args{c.g.rank,
                        c.g.coords[0],
                        c.g.coords[1],
                        c.g.coords[2],
                        static_cast<unsigned>(tma_box_bytes(c.g)),
                        static_cast<unsigned>(dump),
                        kLoadTimeoutNs};
    tma_box_kernel<<<1, kLoadThreads, dump + kAtomSlack>>>(map, args, out.get(), status.get());
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        sc.outcome = CaseOutcome::failed;
        sc.evidence = "encode accepted it; the load failed: " + cuda_text(e);
        if (context_lost()) {
            dev.lost = true;
            dev.why = "not run: the device faulted on an earlier case (" + sc.label + ": " + cuda_text(e) + ")";
        }
        return;
    }
    const int s = status.download()[0];
    if (s == kLoadNoCode) {
        sc.outcome = CaseOutcome::not_run;
        sc.evidence = "this binary has no sm_90 code for the TMA kernel";
        return;
    }
    if (s != kLoadDone) {
        sc.outcome = CaseOutcome::failed;
        sc.evidence = s == kLoadTimedOut ? "encode accepted it; the box never completed the mbarrier (" +
                                               std::to_string(tma_box_bytes(c.g)) + " bytes announced, 50 ms)"
                                         : "encode accepted it; the kernel reported status " + std::to_string(s);
        return;
    }
    const std::vector<std::uint8_t> got = out.download();
    c.verdict = judge_tma_load(c.g, host, got, kSmemPoison);
    sc.outcome = c.verdict->outcome;
    sc.evidence = c.verdict->evidence;
}

struct TmaRuleText {
    TmaRule rule;
    const char* dtype;  // the types swept
    const char* quantity;
    const char* unit;
    RuleForm form;
    const char* documented;  // "" when the documentation is silent
    const char* statement;
};

constexpr TmaRuleText kTmaRules[] = {
    {TmaRule::base, kTmaTypes, "global base address alignment (offset from a 256-byte-aligned allocation)", "bytes",
     RuleForm::multiple_of, "multiple of 16 bytes",
     "'globalAddress, which specifies the starting address of the memory region described, must be 16 byte "
     "aligned'"},
    {TmaRule::stride_multiple, kTmaTypes, "row stride (globalStrides[0])", "bytes", RuleForm::multiple_of,
     "multiple of 16 bytes", "'globalStrides array ... must be a multiple of 16 and less than 2^40'"},
    {TmaRule::stride_covers_row, "bf16", "row stride minus the row's bytes (padding[0])", "bytes", RuleForm::at_least,
     "at least 0 bytes (rows do not overlap)",
     "'globalStrides[0] = globalDim[0] * elementSizeInBytes(tensorDataType) + padding[0]'"},
    {TmaRule::stride_limit, "bf16", "row stride limit", "bytes", RuleForm::at_most, "less than 2^40 bytes",
     "'globalStrides array ... must be a multiple of 16 and less than 2^40'"},
    {TmaRule::inner_multiple, kTmaTypes, "inner box bytes (boxDim[0] x element size), no interleave, no swizzle",
     "bytes", RuleForm::multiple_of, "multiple of 16 bytes",
     "'When interleave is CU_TENSOR_MAP_INTERLEAVE_NONE, { boxDim[0] * elementSizeInBytes( tensorDataType ) } must "
     "be a multiple of 16 bytes.'"},
    {TmaRule::box_dim, kTmaTypes, "box dimension (elements)", "elements", RuleForm::at_most, "at most 256 elements",
     "'boxDim array, which specifies number of elements to be traversed along each of the tensorRank dimensions, "
     "must be non-zero and less than or equal to 256'"},
    {TmaRule::swizzle_none, kTmaTypes, "inner box bytes with CU_TENSOR_MAP_SWIZZLE_NONE", "bytes", RuleForm::at_most,
     "no bound from the swizzle (boxDim[0] <= 256 elements)",
     "the swizzle bound applies only when swizzle is not CU_TENSOR_MAP_SWIZZLE_NONE"},
    {TmaRule::swizzle_32, kTmaTypes, "inner box bytes with CU_TENSOR_MAP_SWIZZLE_32B", "bytes", RuleForm::at_most,
     "at most 32 bytes", "'CU_TENSOR_MAP_SWIZZLE_32B requires the bounding box inner dimension to be <= 32.'"},
    {TmaRule::swizzle_64, kTmaTypes, "inner box bytes with CU_TENSOR_MAP_SWIZZLE_64B", "bytes", RuleForm::at_most,
     "at most 64 bytes", "'CU_TENSOR_MAP_SWIZZLE_64B requires the bounding box inner dimension to be <= 64.'"},
    {TmaRule::swizzle_128, kTmaTypes, "inner box bytes with CU_TENSOR_MAP_SWIZZLE_128B", "bytes", RuleForm::at_most,
     "at most 128 bytes", "'CU_TENSOR_MAP_SWIZZLE_128B* require the bounding box inner dimension to be <= 128.'"},
    {TmaRule::interleave_rank, "bf16", "tensor rank with CU_TENSOR_MAP_INTERLEAVE_16B", "", RuleForm::at_least,
     "rank at least 3",
     "'If interleave is not CU_TENSOR_MAP_INTERLEAVE_NONE, then tensorRank must additionally be greater than or "
     "equal to 3.'"},
    {TmaRule::interleave32_base, "bf16", "global base address alignment with CU_TENSOR_MAP_INTERLEAVE_32B", "bytes",
     RuleForm::multiple_of, "multiple of 32 bytes",
     "'When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, globalAddress must be 32 byte aligned.'"},
    {TmaRule::interleave32_stride, "bf16", "strides with CU_TENSOR_MAP_INTERLEAVE_32B", "bytes", RuleForm::multiple_of,
     "multiple of 32 bytes",
     "'When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, the strides must be a multiple of 32.'"},
    {TmaRule::interleave_swizzle, "bf16", "swizzle modes accepted with interleave (16B, 32B)", "", RuleForm::listed,
     "interleave 32B: SWIZZLE_32B only; interleave 16B: any swizzle",
     "'When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, swizzle must be CU_TENSOR_MAP_SWIZZLE_32B. Other "
     "interleave modes can have any swizzling pattern.'"},
    {TmaRule::elem_strides, "bf16", "elementStrides[1]", "", RuleForm::listed, "1 to 8",
     "'elementStrides array ... must be non-zero and less than or equal to 8'; 'TMA loads ceil( boxDim[i] / "
     "elementStrides[i]) number of elements along i-th dimension'"},
    {TmaRule::start_coords, kTmaTypes, "box start coordinate (elements, innermost dimension)", "elements",
     RuleForm::listed, "",
     "silent on the alignment of a box's start coordinates (PTX ISA 9.0, cp.async.bulk.tensor: signed 32-bit "
     "element coordinates; out-of-bound elements are filled)"},
};

std::vector<Finding> tma_not_available(const std::string& why) {
    std::vector<Finding> out;
    for (const TmaRuleText& t : kTmaRules) out.push_back(not_available(kProbe, kTmaPath2d, t.dtype, t.quantity, why));
    out.push_back(not_available(kProbe, kTmaPath2d, kTmaTypes, "out-of-bound box elements (oobFill NONE)", why));
    out.push_back(not_available(kProbe, kTmaPath2d, kTmaTypes,
                                "shared-memory layout of a box narrower than its swizzle span", why));
    return out;
}

std::vector<SweptCase> cases_of(const std::vector<TmaCase>& all, TmaRule rule) {
    std::vector<SweptCase> out;
    for (const TmaCase& c : all)
        if (c.rule == rule) out.push_back(c.sc);
    return out;
}

std::vector<Finding> tma_findings(const std::vector<TmaCase>& all, std::string& stride_rule) {
    std::vector<Finding> out;
    for (const TmaRuleText& t : kTmaRules) {
        RuleSpec spec;
        const bool three_d = t.rule == TmaRule::interleave32_base || t.rule == TmaRule::interleave32_stride ||
                             t.rule == TmaRule::interleave_swizzle;
        spec.path = t.rule == TmaRule::interleave_rank ? kTmaPath2d3d : three_d ? kTmaPath3d : kTmaPath2d;
        spec.dtype = t.dtype;
        spec.quantity = t.quantity;
        spec.unit = t.unit;
        spec.form = t.form;
        spec.documented = t.documented;
        spec.doc_statement = t.statement;
        spec.doc_source = t.rule == TmaRule::start_coords
                              ? std::string("PTX ISA 9.0, cp.async.bulk.tensor; ") + kDriverDoc
                              : std::string(kDriverDoc);
        spec.note =
            "Each accepted map loads one box into poisoned shared memory; box, zero fill and a 1 KB guard "
            "compared byte for byte with the host copy.";
        const std::vector<SweptCase> cases = cases_of(all, t.rule);
        out.push_back(judge_rule(kProbe, spec, cases));
        if (t.rule == TmaRule::stride_multiple) stride_rule = derive_rule(t.form, cases, t.unit).text;
    }

    // Zero fill, over every load whose box reached past the tensor.
    std::size_t loads = 0, fill = 0, fill_wrong = 0;
    for (const TmaCase& c : all) {
        if (!c.verdict || c.verdict->diff.fill == 0) continue;
        ++loads;
        fill += c.verdict->diff.fill;
        fill_wrong += c.verdict->diff.fill_wrong;
    }
    Finding z = make_finding(kProbe, kTmaPath2d, kTmaTypes, "out-of-bound box elements (oobFill NONE)");
    if (loads == 0) {
        z = not_available(kProbe, kTmaPath2d, kTmaTypes, z.quantity, "no load reached past its tensor");
    } else {
        z.measured = std::to_string(fill - fill_wrong) + " of " + std::to_string(fill) +
                     " out-of-bound bytes zero in " + std::to_string(loads) + " loads";
        z.expected = "all zero";
        z.verified = true;
        z.relation = fill_wrong == 0 ? DocRelation::confirms : DocRelation::contradicts;
        z.doc_statement =
            "'oobFill, which indicates whether zero or a special NaN constant should be used to fill "
            "out-of-bound elements' (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zero)";
        z.doc_source = kDriverDoc;
        z.detail =
            "bytes past the tensor's last column, last row or before its first element (negative "
            "coordinates), in every load of the sweep whose box reached past the tensor";
    }
    out.push_back(z);

    // Where the rows of a box narrower than the swizzle span land.
    std::vector<SweptCase> narrow;
    for (const TmaCase& c : all) {
        if (!c.verdict || c.g.swizzle_bytes == 0 || c.g.interleave_bytes != 0) continue;
        if (tma_row_bytes(c.g) >= static_cast<std::uint64_t>(c.g.swizzle_bytes)) continue;
        SweptCase s = c.sc;
        s.label = type_name(c.g.elem_bytes) + " " + std::to_string(tma_row_bytes(c.g)) + " B rows, " +
                  std::to_string(c.g.swizzle_bytes) + "B swizzle";
        if (c.verdict->model) s.evidence = std::string(name(*c.verdict->model));
        narrow.push_back(s);
    }
    RuleSpec layout;
    layout.path = kTmaPath2d;
    layout.dtype = kTmaTypes;
    layout.quantity = "shared-memory layout of a box narrower than its swizzle span";
    layout.form = RuleForm::listed;
    layout.doc_statement =
        "silent on where the rows of a box narrower than the swizzle span land "
        "('Swizzle 16B chunks within 128B span')";
    layout.doc_source = kDriverDoc;
    layout.note =
        "Each load compared with two layouts: rows packed at the inner box bytes, or one row per swizzle "
        "span, the XOR pattern applied to the shared-memory offset in both.";
    if (narrow.empty()) {
        out.push_back(not_available(kProbe, kTmaPath2d, kTmaTypes, layout.quantity, "no such box was loaded"));
    } else {
        Finding f = judge_rule(kProbe, layout, narrow);
        int packed = 0, spans = 0;
        for (const TmaCase& c : all)
            if (c.verdict && c.verdict->model && c.g.swizzle_bytes > 0 && c.g.interleave_bytes == 0 &&
                tma_row_bytes(c.g) < static_cast<std::uint64_t>(c.g.swizzle_bytes))
                (*c.verdict->model == TmaSmemModel::packed_rows ? packed : spans)++;
        f.measured = std::to_string(packed) + " loads matched rows packed at the inner box bytes, " +
                     std::to_string(spans) + " one row per swizzle span, " +
                     std::to_string(static_cast<int>(narrow.size()) - packed - spans) + " neither";
        out.push_back(f);
    }
    return out;
}

// The TMA sweep runs in two parts: every rule but the box start coordinates,
// then (after the cuBLASLt sweep) the start coordinates, whose odd values
// have faulted the device (cudaErrorIllegalInstruction on the H200 machine)
// and so ended the context for every case after them.
struct TmaRun {
    std::vector<TmaCase> cases;
    std::vector<Finding> unavailable;  // non-empty: TMA cannot be probed here
    bool ready() const { return unavailable.empty(); }
};

void run_tma_cases(TmaRun& run, const ProbeContext& ctx, DeviceState& dev, bool start_coords) {
    if (!run.ready()) return;
    for (std::size_t i = 0; i < run.cases.size(); ++i)
        if ((run.cases[i].rule == TmaRule::start_coords) == start_coords)
            run_tma_case(run.cases[i], ctx.seed ^ (0x746D6100ull + i), dev, ctx.avoid_faults);
}

TmaRun prepare_tma(const ProbeContext& ctx) {
    TmaRun run;
    if (ctx.compute_capability < 90) {
        run.unavailable = tma_not_available(
            "TMA (cuTensorMapEncodeTiled, cp.async.bulk.tensor) needs compute capability 9.0; "
            "device has " +
            std::to_string(ctx.compute_capability));
        return run;
    }
    if (!kernel_has_image(tma_box_kernel)) {
        run.unavailable = tma_not_available("this binary has no code for the TMA kernel on this device");
        return run;
    }
    try {
        (void)cuda::sm90::tensor_map_encoder();
    } catch (const std::exception& e) {
        run.unavailable = tma_not_available(e.what());
        return run;
    }
    RIGEL_CUDA_CHECK(cudaFuncSetAttribute(tma_box_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(kMaxDumpBytes + kAtomSlack)));
    run.cases = make_tma_cases();
    report(ctx, "alignment: " + std::to_string(run.cases.size()) + " TMA tensor maps, each accepted one loaded once");
    return run;
}

// ---- (b) cuBLASLt fp8 ------------------------------------------------------------------------

using cuda::LtDesc;
using cuda::LtHandle;
using cuda::LtLayout;
using cuda::LtPreference;

enum class LtRule : std::uint8_t { ptr_a, ptr_b, ptr_d, lda, ldb, ldd, k, m, n, ops, ptr_default_pref };

struct LtCase {
    LtRule rule;
    LtGemmCase g;
};

// cuBLASLt documents the "TN"-only rule for fp8 on these devices.
bool fp8_tn_only(int cc) { return cc == 89 || cc == 90 || (cc >= 120 && cc < 130); }

std::vector<LtCase> make_lt_cases(int cc) {
    std::vector<LtCase> v;
    auto push = [&](LtRule rule, LtGemmCase g) { v.push_back({rule, std::move(g)}); };
    const LtGemmCase base;  // 32 x 32 x 64, TN, f32 D, every pointer 256-byte aligned
    for (int off : {0, 1, 2, 4, 8, 16, 32}) {
        LtGemmCase a = base, b = base, d = base;
        a.a_offset = off;
        a.label = "A +" + std::to_string(off) + " B";
        b.b_offset = off;
        b.label = "B +" + std::to_string(off) + " B";
        d.d_offset = off;
        d.label = "D f32 +" + std::to_string(off) + " B";
        for (LtGemmCase* g : {&a, &b, &d}) {
            g->value = off;
            g->doc_legal = off % 16 == 0;
        }
        push(LtRule::ptr_a, a);
        push(LtRule::ptr_b, b);
        push(LtRule::ptr_d, d);
    }
    for (int off : {2, 8, 16}) {
        LtGemmCase d = base;
        d.out = DType::bf16;
        d.d_offset = off;
        d.label = "D bf16 +" + std::to_string(off) + " B";
        d.value = off;
        d.doc_legal = off % 16 == 0;
        push(LtRule::ptr_d, d);
    }
    for (int ld : {64, 65, 68, 72, 80, 96}) {
        LtGemmCase a = base, b = base;
        a.lda = ld;
        a.label = "lda=" + std::to_string(ld);
        b.ldb = ld;
        b.label = "ldb=" + std::to_string(ld);
        for (LtGemmCase* g : {&a, &b}) {
            g->value = ld;
            g->doc_legal = ld % 16 == 0;
        }
        push(LtRule::lda, a);
        push(LtRule::ldb, b);
    }
    for (int ld : {32, 33, 34, 36, 40, 48}) {
        LtGemmCase d = base;
        d.ldd = ld;
        d.label = "f32 ldd=" + std::to_string(ld);
        d.value = ld * 4;
        d.doc_legal = d.value % 16 == 0;
        push(LtRule::ldd, d);
    }
    for (int ld : {32, 33, 36, 40, 48}) {
        LtGemmCase d = base;
        d.out = DType::bf16;
        d.ldd = ld;
        d.label = "bf16 ldd=" + std::to_string(ld);
        d.value = ld * 2;
        d.doc_legal = d.value % 16 == 0;
        push(LtRule::ldd, d);
    }
    for (int k : {8, 16, 24, 32, 40, 48, 56, 64}) {
        LtGemmCase g = base;
        g.k = k;  // lda = ldb = 64 stay legal
        g.label = "K=" + std::to_string(k);
        g.value = k;
        g.doc_legal = k % 16 == 0;
        push(LtRule::k, g);
    }
    for (int m : {17, 18, 20, 24, 32}) {
        LtGemmCase g = base;
        g.m = m;  // ldd = 32 stays legal
        g.label = "f32 M=" + std::to_string(m);
        g.value = m * 4;
        g.doc_legal = g.value % 16 == 0;
        push(LtRule::m, g);
    }
    for (int m : {17, 20, 24, 32}) {
        LtGemmCase g = base;
        g.out = DType::bf16;
        g.m = m;
        g.label = "bf16 M=" + std::to_string(m);
        g.value = m * 2;
        g.doc_legal = g.value % 16 == 0;
        push(LtRule::m, g);
    }
    for (int n : {1, 17, 33, 48}) {
        LtGemmCase g = base;
        g.n = n;
        g.label = "N=" + std::to_string(n);
        g.value = n;
        push(LtRule::n, g);
    }
    int op_index = 0;
    for (const auto& [ta, tb, label] : {std::tuple{true, false, "TN"}, std::tuple{false, false, "NN"},
                                        std::tuple{false, true, "NT"}, std::tuple{true, true, "TT"}}) {
        LtGemmCase g = base;
        g.m = g.n = g.k = 32;
        g.lda = g.ldb = g.ldd = 32;
        g.a_transposed = ta;
        g.b_transposed = tb;
        g.label = label;
        g.value = op_index++;
        g.doc_legal = !fp8_tn_only(cc) || (ta && !tb);
        push(LtRule::ops, g);
    }
    // Last: pointers less aligned than the heuristic was told (its default,
    // 256 bytes). The most likely to fault.
    for (const auto& [which, off] : {std::pair{'A', 0}, std::pair{'A', 8}, std::pair{'A', 4}, std::pair{'A', 1},
                                     std::pair{'B', 8}, std::pair{'D', 8}, std::pair{'D', 4}}) {
        LtGemmCase g = base;
        g.honest_alignment = false;
        (which == 'A' ? g.a_offset : which == 'B' ? g.b_offset : g.d_offset) = off;
        g.label = std::string(1, which) + " +" + std::to_string(off) + " B";
        g.value = off;
        g.doc_legal = off % 16 == 0;
        push(LtRule::ptr_default_pref, g);
    }
    return v;
}

SweptCase run_lt_case(const LtHandle& lt, const DeviceArray<std::uint8_t>& workspace, const LtGemmCase& g,
                      std::uint64_t seed, DeviceState& dev) {
    SweptCase sc;
    sc.label = g.label;
    sc.value = g.value;
    sc.doc_legal = g.doc_legal;
    if (dev.lost) {
        sc.outcome = CaseOutcome::not_run;
        sc.evidence = dev.why;
        return sc;
    }
    auto refuse = [&](const std::string& where, cublasStatus_t s) {
        sc.outcome = CaseOutcome::refused;
        sc.evidence = where + ": " + lt_status_text(s);
        return sc;
    };
    const cudaDataType out_type = g.out == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
    LtLayout la(CUDA_R_8F_E4M3, lt_a_rows(g), lt_a_cols(g), g.lda);
    if (la.status() != CUBLAS_STATUS_SUCCESS) return refuse("cublasLtMatrixLayoutCreate (A)", la.status());
    LtLayout lb(CUDA_R_8F_E4M3, lt_b_rows(g), lt_b_cols(g), g.ldb);
    if (lb.status() != CUBLAS_STATUS_SUCCESS) return refuse("cublasLtMatrixLayoutCreate (B)", lb.status());
    LtLayout ld(out_type, g.m, g.n, g.ldd);
    if (ld.status() != CUBLAS_STATUS_SUCCESS) return refuse("cublasLtMatrixLayoutCreate (D)", ld.status());
    LtDesc desc;
    const cublasOperation_t ta = g.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    RIGEL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LtPreference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(kWorkspaceBytes));
    if (g.honest_alignment) {
        pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, pointer_alignment(g.a_offset));
        pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, pointer_alignment(g.b_offset));
        pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, pointer_alignment(g.d_offset));
        pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, pointer_alignment(g.d_offset));
    }
    std::array<cublasLtMatmulHeuristicResult_t, kHeuristicResults> results{};
    int found = 0;
    // C is D (in place, beta = 0), as rigel's vendor rung runs it.
    const cublasStatus_t h =
        cublasLtMatmulAlgoGetHeuristic(lt.get(), desc.get(), la.get(), lb.get(), ld.get(), ld.get(), pref.get(),
                                       kHeuristicResults, results.data(), &found);
    if (h != CUBLAS_STATUS_SUCCESS) return refuse("heuristic", h);
    if (found == 0) {
        sc.outcome = CaseOutcome::refused;
        sc.evidence = "heuristic: 0 algorithms";
        return sc;
    }

    const LtOperands ops = make_lt_operands(g, seed);
    DeviceArray<std::uint8_t> a(ops.a), b(ops.b), d(lt_d_allocation(g));
    d.fill_bytes(kGemmPoison);
    const float alpha = 1.0f, beta = 0.0f;
    void* d_ptr = d.get() + g.d_offset;
    const cublasStatus_t s = cublasLtMatmul(lt.get(), desc.get(), &alpha, a.get() + g.a_offset, la.get(),
                                            b.get() + g.b_offset, lb.get(), &beta, d_ptr, ld.get(), d_ptr, ld.get(),
                                            &results[0].algo, workspace.get(), kWorkspaceBytes, nullptr);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess || s == CUBLAS_STATUS_EXECUTION_FAILED) {
        sc.outcome = CaseOutcome::failed;
        sc.evidence = "cublasLtMatmul: " + lt_status_text(s) + ", then " + cuda_text(e);
        if (context_lost()) {
            dev.lost = true;
            dev.why = "not run: the device faulted on an earlier case (" + g.label + ": " + cuda_text(e) + ")";
        }
        return sc;
    }
    if (s != CUBLAS_STATUS_SUCCESS) return refuse("cublasLtMatmul", s);
    const std::vector<std::uint8_t> expected = lt_expected_d(g, lt_reference(g, ops), kGemmPoison);
    const LtOutputVerdict v = judge_lt_output(g, expected, d.download());
    sc.outcome = v.outcome;
    sc.evidence = v.evidence + " (the heuristic's first of " + std::to_string(found) + " algorithms)";
    return sc;
}

struct LtRuleText {
    LtRule rule;
    const char* quantity;
    const char* unit;
    RuleForm form;
    const char* documented;
    const char* condition;  // the Tensor Core Usage condition (appended to kFp8Requirement), or the FP8 rule
};

constexpr LtRuleText kLtRules[] = {
    {LtRule::ptr_a, "A pointer alignment (heuristic told the real alignment)", "bytes", RuleForm::multiple_of,
     "multiple of 16 bytes", "intptr_t(A) % 16 == 0"},
    {LtRule::ptr_b, "B pointer alignment (heuristic told the real alignment)", "bytes", RuleForm::multiple_of,
     "multiple of 16 bytes", "intptr_t(B) % 16 == 0"},
    {LtRule::ptr_d, "C = D pointer alignment, f32 and bf16 D (heuristic told the real alignment)", "bytes",
     RuleForm::multiple_of, "multiple of 16 bytes", "intptr_t(C) % 16 == 0"},
    {LtRule::lda, "lda (A stored K x M, op T)", "bytes", RuleForm::multiple_of, "multiple of 16 bytes",
     "(lda * AtypeSize) % 16 == 0"},
    {LtRule::ldb, "ldb (B stored K x N, op N)", "bytes", RuleForm::multiple_of, "multiple of 16 bytes",
     "(ldb * BtypeSize) % 16 == 0"},
    {LtRule::ldd, "ldc = ldd x output bytes, f32 and bf16 D", "bytes", RuleForm::multiple_of, "multiple of 16 bytes",
     "(ldc * CtypeSize) % 16 == 0"},
    {LtRule::k, "K (bytes of an fp8 row of A and of B; lda = ldb = 64)", "bytes", RuleForm::multiple_of,
     "multiple of 16 bytes", "((op_A == CUBLAS_OP_N ? m : k) * AtypeSize) % 16 == 0 (k for TN)"},
    {LtRule::m, "M x output bytes, f32 and bf16 D (ldd = 32)", "bytes", RuleForm::multiple_of, "multiple of 16 bytes",
     "(m * CtypeSize) % 16 == 0"},
    {LtRule::n, "N", "", RuleForm::multiple_of, "any N",
     "((op_B == CUBLAS_OP_N ? k : n) * BtypeSize) % 16 == 0 (k for TN: no condition on n)"},
    {LtRule::ops, "transpose combination (32 x 32 x 32, every ld 32)", "", RuleForm::listed, "TN only",
     "'A must be transposed and B non-transposed (The \"TN\" format) on Ada (compute capability 8.9), Hopper "
     "(compute capability 9.0), and Blackwell GeForce (compute capability 12.x) GPUs'"},
    {LtRule::ptr_default_pref,
     "pointers less aligned than the heuristic was told (its default CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES = "
     "256)",
     "bytes", RuleForm::multiple_of, "multiple of 16 bytes",
     "pointers % 16 == 0; the preference's default (256) lets the heuristic pick algorithms that need up to 256"},
};

std::string lt_path(const LtRuleText& t) {
    return std::string("cublasLtMatmul e4m3 x e4m3, compute 32F, ") + (t.rule == LtRule::ops ? "TN/NN/NT/TT" : "TN") +
           ", D f32/bf16 (C = D, beta 0)";
}

std::vector<Finding> lt_findings(const std::vector<std::pair<LtRule, SweptCase>>& results, int cc) {
    std::vector<Finding> out;
    for (const LtRuleText& t : kLtRules) {
        std::vector<SweptCase> sweep;
        for (const auto& [rule, sc] : results)
            if (rule == t.rule) sweep.push_back(sc);
        RuleSpec spec;
        spec.path = lt_path(t);
        spec.dtype = "e4m3";
        spec.quantity = t.quantity;
        spec.unit = t.unit;
        spec.form = t.form;
        spec.documented = t.rule == LtRule::ops && !fp8_tn_only(cc)
                              ? "any combination (TN is required on compute capability 8.9, 9.0 and 12.x only)"
                              : t.documented;
        spec.doc_statement = t.rule == LtRule::ops ? std::string("FP8 requirements: ") + t.condition
                                                   : std::string(kFp8Requirement) + t.condition;
        spec.doc_source = kCublasDoc;
        if (t.rule == LtRule::ptr_default_pref)
            spec.doc_source += "; cublasLt.h 13, cublasLtMatmulPreferenceAttributes_t";
        spec.note =
            "Base case 32 x 32 x 64 (M x N x K), lda = ldb = 64, ldd = 32, D f32, every pointer 256-byte "
            "aligned; operands -2..2 (exact sums), D poisoned, the whole D allocation compared.";
        out.push_back(judge_rule(kProbe, spec, sweep));
    }
    return out;
}

std::vector<Finding> run_cublaslt(const ProbeContext& ctx, DeviceState& dev) {
    auto all_not_available = [&](const std::string& why) {
        std::vector<Finding> out;
        for (const LtRuleText& t : kLtRules) out.push_back(not_available(kProbe, lt_path(t), "e4m3", t.quantity, why));
        return out;
    };
    if (ctx.compute_capability < 89)
        return all_not_available("cuBLASLt's fp8 GEMM needs compute capability 8.9; device has " +
                                 std::to_string(ctx.compute_capability));
    if (dev.lost) return all_not_available(dev.why);
    LtHandle lt;
    DeviceArray<std::uint8_t> workspace(kWorkspaceBytes);
    const std::vector<LtCase> cases = make_lt_cases(ctx.compute_capability);
    report(ctx, "alignment: " + std::to_string(cases.size()) + " cuBLASLt fp8 GEMMs");
    std::vector<std::pair<LtRule, SweptCase>> results;
    for (std::size_t i = 0; i < cases.size(); ++i)
        results.emplace_back(cases[i].rule, run_lt_case(lt, workspace, cases[i].g, ctx.seed ^ (0x6C7400ull + i), dev));
    return lt_findings(results, ctx.compute_capability);
}

// ---- (c) rigel's Hopper rungs ----------------------------------------------------------------

std::vector<Finding> rung_findings(const std::string& stride_rule) {
    std::vector<CheckCase> half, fp8;
    struct Shape {
        std::int64_t m, n, k;
    };
    for (const Rung& r : cuda::hopper_rungs()) {
        for (DType t : {DType::bf16, DType::f16, DType::e4m3, DType::e5m2}) {
            if (!(r.dtypes & dtype_bit(t))) continue;
            const int eb = cuda::sm90::elem_bytes(t);
            const std::vector<Shape> shapes =
                eb == 2
                    ? std::vector<Shape>{{17, 33, 4}, {17, 33, 100}, {128, 128, 4094}, {17, 33, 8}, {1000, 17, 4104}}
                    : std::vector<Shape>{{17, 33, 8}, {17, 33, 24}, {128, 128, 4104}, {17, 33, 16}, {1000, 17, 4112}};
            for (const Shape& s : shapes) {
                GemmProblem p{t, s.m, s.n, s.k, nullptr, nullptr, nullptr};
                CheckCase c;
                c.label = std::string(r.id) + " " + std::string(name(t)) + " " + std::to_string(s.m) + "x" +
                          std::to_string(s.n) + "x" + std::to_string(s.k);
                c.should_refuse = (s.k * eb) % 16 != 0;
                c.rule_phrase = k_rule_phrase(eb);
                c.message = r.check ? r.check(p) : std::string();
                (eb == 2 ? half : fp8).push_back(std::move(c));
            }
        }
    }
    std::vector<Finding> out;
    const std::string note =
        "Host-side: each rung's CheckFn, as the runner calls it before any launch. The TMA "
        "row-stride rule measured on this device: " +
        stride_rule + ".";
    RuleSpec spec;
    spec.path = "rigel hopper rungs: CheckFn (hopper_tma_check)";
    spec.doc_statement =
        "each row of A and of B (both K-major) must start on a 16-byte boundary, so K x element "
        "size must be a multiple of 16 (K % 8 for f16/bf16, K % 16 for fp8); M, N and K tails are "
        "otherwise free";
    spec.doc_source = "rigel, src/cuda/hopper/hopper_rungs.cuh (hopper_tma_check)";
    spec.note = note;
    spec.dtype = "bf16, f16";
    spec.quantity = "K refused unless K x 2 bytes is a multiple of 16, with a message naming the rule";
    spec.documented = "refuse K % 8 != 0 naming 'K must be a multiple of 8'; accept any M, N";
    out.push_back(judge_checks(kProbe, spec, half));
    spec.dtype = "e4m3, e5m2";
    spec.quantity = "K refused unless K x 1 byte is a multiple of 16, with a message naming the rule";
    spec.documented = "refuse K % 16 != 0 naming 'K must be a multiple of 16'; accept any M, N";
    out.push_back(judge_checks(kProbe, spec, fp8));

    // The launchers' pointer check (sm90::require_alignment): host-side, on
    // pointer values only (nothing is dereferenced).
    std::vector<CheckCase> ptr;
    const auto at = [](std::uintptr_t v) { return reinterpret_cast<void*>(v); };
    constexpr std::uintptr_t kBase = 0x10000;
    for (const auto& [which, off] : {std::pair{'A', 0}, std::pair{'A', 8}, std::pair{'A', 16}, std::pair{'B', 4},
                                     std::pair{'B', 32}, std::pair{'C', 4}, std::pair{'C', 8}}) {
        GemmProblem p{DType::bf16, 128, 128, 64, at(kBase), at(kBase), at(kBase)};
        const std::uintptr_t moved = kBase + static_cast<std::uintptr_t>(off);
        if (which == 'A') p.a = at(moved);
        if (which == 'B') p.b = at(moved);
        if (which == 'C') p.c = at(moved);
        CheckCase c;
        c.label = std::string(1, which) + " +" + std::to_string(off) + " B";
        c.should_refuse = which == 'C' ? off % 8 != 0 : off % 16 != 0;
        c.rule_phrase = which == 'C' ? "8-byte boundary" : "16-byte boundaries";
        try {
            cuda::sm90::require_alignment(p, "rung");
        } catch (const std::invalid_argument& e) {
            c.message = e.what();
        }
        ptr.push_back(std::move(c));
    }
    RuleSpec pspec;
    pspec.path = "rigel hopper rungs: launcher pointer check (sm90::require_alignment)";
    pspec.dtype = "any";
    pspec.quantity = "A and B pointers refused unless 16-byte aligned, C unless 8-byte aligned, naming the rule";
    pspec.documented = "refuse A or B off a 16-byte boundary (TMA), C off an 8-byte boundary (paired stores)";
    pspec.doc_statement = "A and B must start on 16-byte boundaries (TMA); C on an 8-byte boundary (paired stores)";
    pspec.doc_source = "rigel, src/cuda/hopper/sm90.cuh (require_alignment)";
    pspec.note = "Host-side, on pointer values only. The TMA base-address rule is measured in the rows above.";
    out.push_back(judge_checks(kProbe, pspec, ptr));
    return out;
}

}  // namespace

std::vector<Finding> run_alignment(const ProbeContext& ctx) {
    DeviceState dev;
    std::string stride_rule = "not measured (TMA not available)";
    TmaRun tma = prepare_tma(ctx);
    run_tma_cases(tma, ctx, dev, false);
    std::vector<Finding> lt = run_cublaslt(ctx, dev);
    run_tma_cases(tma, ctx, dev, true);
    std::vector<Finding> out = tma.ready() ? tma_findings(tma.cases, stride_rule) : tma.unavailable;
    for (Finding& f : lt) out.push_back(std::move(f));
    for (Finding& f : rung_findings(stride_rule)) out.push_back(std::move(f));
    return out;
}

}  // namespace rigel::probes
