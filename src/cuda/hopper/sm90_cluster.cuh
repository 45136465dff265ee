// The PTX that the cluster rungs (k35, k36) add to sm90.cuh: thread-block
// clusters and their shared memory, TMA multicast, the TMA store and named
// barriers, an mbarrier wait with a suspend-time hint, and stmatrix.
//
// Sources, PTX ISA 9.0 (CUDA 13.0), cited by section title:
//   "Cluster of Cooperative Thread Arrays", special registers %cluster_ctarank,
//   %clusterid, %nclusterid; "barrier.cluster"; "mapa"
//   "mbarrier.arrive" (on a shared::cluster address) and
//   "mbarrier.test_wait/try_wait" (suspendTimeHint)
//   "cp.async.bulk.tensor" (.multicast::cluster with a ctaMask; the
//   global <- shared::cta direction with .bulk_group completion)
//   "cp.async.bulk.commit_group", "cp.async.bulk.wait_group" (.read)
//   "bar.sync" (named barriers); "stmatrix"
#pragma once
#include <cstdint>

#include "cuda/hopper/sm90.cuh"

namespace rigel::cuda::sm90 {

// -- clusters ------------------------------------------------------------------
__device__ __forceinline__ std::uint32_t cluster_ctarank() {
    std::uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ std::uint32_t cluster_id_x() {
    std::uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ std::uint32_t cluster_count_x() {
    std::uint32_t r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return r;
}

// Every thread of every CTA of the cluster arrives, then waits: release and
// acquire at cluster scope, so what a CTA wrote to its shared memory (the
// initialized mbarriers) is visible to its peer afterwards, and no CTA leaves
// while its peer may still write to its shared memory. The non-.aligned form:
// the threads of a warp may come to it at different times (the producer's
// lane 0 comes last).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// The shared::cluster address of the same object in CTA `rank` of the cluster.
__device__ __forceinline__ std::uint32_t map_to_rank(const void* p, std::uint32_t rank) {
    std::uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(p)), "r"(rank));
    return r;
}

// Arrive on an mbarrier that may live in another CTA of the cluster. The
// default semantics (release at CTA scope) are enough here, as for the local
// arrive: what the arrival publishes is that this warp's wgmma reads of a stage
// have finished (wgmma.wait_group), and the reader of the barrier is the copy
// engine's next write, not an ordinary load. An explicit .release.cluster
// compiles to a GPU-wide memory barrier before every arrival (MEMBAR.ALL.GPU
// in SASS), which would wait for this SM's outstanding global stores.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint32_t cluster_addr) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr) : "memory");
}

// try_wait with a suspend-time hint: a thread whose phase has not completed is
// suspended (up to the hint, in ns) instead of spinning through the issue
// slots that its warpgroup's neighbours need.
constexpr std::uint32_t kSuspendHintNs = 0x989680;  // 10 ms: a bound, not a delay; the wait returns at completion

__device__ __forceinline__ void mbar_wait_hinted(std::uint64_t* bar, std::uint32_t parity) {
    std::uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity), "r"(kSuspendHintNs)
            : "memory");
    } while (!done);
}

// -- TMA multicast -------------------------------------------------------------
// One thread copies a box from global memory into shared memory at the same
// offset `dst` in every CTA whose bit is set in cta_mask, and signals the
// mbarrier at the same offset `bar` in each of them with the bytes it wrote
// there. L2 is read once for all of them.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, std::uint64_t* bar,
                                                      int k_elem, int row, std::uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
        "l"(reinterpret_cast<std::uint64_t>(map)), "r"(k_elem), "r"(row), "r"(smem_u32(bar)), "h"(cta_mask)
        : "memory");
}

// -- TMA store -----------------------------------------------------------------
// The copy engine reads a box from shared memory and writes it to global
// memory, clipped to the tensor (rows and columns outside are not written).
// Completion is tracked per issuing thread in bulk groups: commit closes a
// group; wait_group.read N returns once at most N groups still read shared
// memory (their buffers may be reused); wait_group N once at most N are
// unfinished (their writes are done).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, std::uint32_t src, int col, int row) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                     reinterpret_cast<std::uint64_t>(map)),
                 "r"(src), "r"(col), "r"(row)
                 : "memory");
}
// The same box added into global memory instead of written over it (cp.reduce.async.bulk.tensor ...
// .add): the copy engine reads the box and adds each element into D in L2 (f32 by the map's type), so
// an in-place D += needs no load of D by the SMs. Tracked in the same bulk groups as the store.
__device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap* map, std::uint32_t src, int col, int row) {
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                     reinterpret_cast<std::uint64_t>(map)),
                 "r"(src), "r"(col), "r"(row)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// fence_proxy_async_smem (before the copy engine reads what threads stored):
// wgmma.cuh.

// Four 8 x 8 matrices of 16-bit values from a warp's registers into shared
// memory ("stmatrix", sm_90): lane 8 i + r gives the address of row r of
// matrix i (16 bytes), and register i of lane l holds row l / 4, columns
// 2 (l % 4) and 2 (l % 4) + 1 of matrix i, which is how wgmma's accumulator
// holds an 8-column group of rows r and r + 8. ldmatrix (tensor_rungs.cuh)
// is its mirror.
__device__ __forceinline__ void stmatrix_x4(std::uint32_t addr, const std::uint32_t (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}
// Two of them (matrix i's row r from lane 8 i + r, lanes 16-31 giving none): the last 8-column group of a
// tile whose width is an odd number of groups (the library's 128 x 168 tiles).
__device__ __forceinline__ void stmatrix_x2(std::uint32_t addr, const std::uint32_t (&r)[2]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r[0]), "r"(r[1])
                 : "memory");
}

// A barrier among `Threads` threads (whole warps) only: a consumer warpgroup
// synchronizes its epilogue without stopping the producer or the other
// consumer. Id 0 is __syncthreads'.
template <int Threads>
__device__ __forceinline__ void named_barrier_sync(int id) {
    static_assert(Threads % 32 == 0);
    asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(Threads) : "memory");
}

// The other half of a named barrier: arrive without waiting. A barrier with
// `Threads` = 256 that one warpgroup arrives on and another syncs on passes a
// token from the first to the second (CUTLASS calls this an ordered sequence
// barrier): the syncing warpgroup goes on only after the arriving one passed
// its arrive.
template <int Threads>
__device__ __forceinline__ void named_barrier_arrive(int id) {
    static_assert(Threads % 32 == 0);
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(Threads) : "memory");
}

__device__ __forceinline__ void st_shared_v2(std::uint32_t addr, float a, float b) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// -- host: launching a kernel in clusters stacked along x ----------------------
// The launch configuration of `grid` CTAs of `threads` in clusters of
// cluster_x, with `smem` bytes of dynamic shared memory; `attr` holds the
// cluster attribute and must outlive the launch.
inline cudaLaunchConfig_t cluster_launch_config(unsigned grid, int threads, int smem, cudaStream_t stream,
                                                int cluster_x, cudaLaunchAttribute* attr) {
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = static_cast<unsigned>(cluster_x);
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

// How many clusters of cluster_x CTAs of `kernel` fit on the GPU at once (the
// GPCs' SM counts decide: 66 pairs of one-CTA-per-SM kernels on a 132-SM H200
// when every GPC has an even count); the kernel's dynamic shared memory is
// allowed first. Throws when not one fits.
template <class Kernel>
int max_active_clusters(Kernel kernel, int threads, int smem, int cluster_x) {
    RIGEL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaLaunchAttribute attr{};
    const cudaLaunchConfig_t cfg =
        cluster_launch_config(static_cast<unsigned>(cluster_x * sm_count()), threads, smem, nullptr, cluster_x, &attr);
    int clusters = 0;
    RIGEL_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    if (clusters < 1)
        throw std::runtime_error("no cluster of " + std::to_string(cluster_x) + " CTAs with " +
                                 std::to_string(smem / 1024) + " KB of shared memory each fits on this GPU");
    return clusters;
}

// -- host: the tensor map of C for the TMA store ------------------------------
// C is M x N fp32, row-major; boxes of box_rows rows x 32 columns (128 bytes,
// the 128B swizzle span). The row stride N x 4 bytes must be a multiple of 16
// and the base 16-byte aligned: the launchers fall back to direct stores
// otherwise.
inline CUtensorMap make_output_map(void* base, std::int64_t rows, std::int64_t cols, int box_rows) {
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 4u};
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(kRowBytes / 4), static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box,
                                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                 ") for a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                 " fp32 output");
    return map;
}

class OutputMapCache {
public:
    const CUtensorMap& get(void* base, std::int64_t rows, std::int64_t cols, int box_rows) {
        if (!valid_ || base != base_ || rows != rows_ || cols != cols_ || box_rows != box_rows_) {
            map_ = make_output_map(base, rows, cols, box_rows);
            base_ = base;
            rows_ = rows;
            cols_ = cols;
            box_rows_ = box_rows;
            valid_ = true;
        }
        return map_;
    }

private:
    void* base_ = nullptr;
    std::int64_t rows_ = 0, cols_ = 0;
    int box_rows_ = 0;
    CUtensorMap map_{};
    bool valid_ = false;
};

}  // namespace rigel::cuda::sm90
