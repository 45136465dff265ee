// NCCL's all-reduce timed on every rank (src/dist/allreduce.hpp). Compiled
// against NCCL when CMake finds it (RIGEL_HAVE_NCCL); otherwise the sweep says so.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/dist/nccl_comm.cuh"
#include "dist/allreduce.hpp"

namespace rigel::dist {

#if RIGEL_HAVE_NCCL

std::vector<AllreduceRow> nccl_allreduce_sweep(const RankInfo& r, const std::vector<std::uint64_t>& sizes) {
    ncclComm_t comm = make_nccl_comm(r);
    const std::uint64_t largest = sizes.empty() ? 4 : *std::max_element(sizes.begin(), sizes.end());
    float* buf = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    std::vector<AllreduceRow> rows;
    try {
        RIGEL_CUDA_CHECK(cudaMalloc(&buf, largest + sizeof(float)));
        RIGEL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        // Zeros stay zeros: the sums cannot overflow. (On the sums' stream: a non-blocking stream is not
        // ordered after the legacy default one.)
        RIGEL_CUDA_CHECK(cudaMemsetAsync(buf, 0, largest + sizeof(float), stream));
        // One float past the messages: a one-element sum before each timed batch, which no rank leaves
        // before all have joined, so that the batches start together and no rank's first call waits
        // for a late peer inside the timing.
        float* const gate = buf + largest / sizeof(float);
        RIGEL_CUDA_CHECK(cudaEventCreate(&start));
        RIGEL_CUDA_CHECK(cudaEventCreate(&stop));
        for (const std::uint64_t bytes : sizes) {
            const std::size_t count = bytes / sizeof(float);
            // About 1 GB moved per batch, between 5 and 200 calls; 5 batches, the median kept.
            const int iters = static_cast<int>(std::clamp<std::uint64_t>((1ull << 30) / bytes, 5, 200));
            const auto batch = [&] {
                for (int i = 0; i < iters; ++i)
                    nccl_check(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
            };
            batch();  // warm-up: connections, buffers
            RIGEL_CUDA_CHECK(cudaStreamSynchronize(stream));
            std::vector<double> times;
            for (int b = 0; b < 5; ++b) {
                nccl_check(ncclAllReduce(gate, gate, 1, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
                RIGEL_CUDA_CHECK(cudaEventRecord(start, stream));
                batch();
                RIGEL_CUDA_CHECK(cudaEventRecord(stop, stream));
                RIGEL_CUDA_CHECK(cudaEventSynchronize(stop));
                float ms = 0;
                RIGEL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
                times.push_back(ms * 1e-3 / iters);
            }
            std::sort(times.begin(), times.end());
            AllreduceRow row;
            row.bytes = bytes;
            row.ranks = r.world;
            row.iterations = iters;
            row.seconds = times[times.size() / 2];
            row.algbw_gbs = static_cast<double>(bytes) / row.seconds / 1e9;
            row.busbw_gbs = bus_bandwidth(row.algbw_gbs, r.world);
            rows.push_back(row);
        }
    } catch (...) {
        (void)ncclCommAbort(comm);
        if (buf) (void)cudaFree(buf);
        throw;
    }
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
    (void)cudaStreamDestroy(stream);
    (void)cudaFree(buf);
    nccl_check(ncclCommDestroy(comm), "ncclCommDestroy");
    return rows;
}

#else

std::vector<AllreduceRow> nccl_allreduce_sweep(const RankInfo&, const std::vector<std::uint64_t>&) {
    throw std::runtime_error("rigel was built without NCCL (CMake found no nccl.h and libnccl)");
}

#endif

}  // namespace rigel::dist
