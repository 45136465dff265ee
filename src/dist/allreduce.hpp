// The NCCL all-reduce bandwidth probe (`rigel dist allreduce`, one process per
// GPU under `rigel launch`): fp32 sums in place for message sizes from 1 KB to
// 1 GB, each timed on every rank. Bus bandwidth, nccl-tests' convention, is
// the algorithm bandwidth (bytes / time) times 2 (n - 1) / n: the bytes a
// ring all-reduce moves over each link, comparable across rank counts and with
// the link's own figure.
#pragma once
#include <cstdint>
#include <vector>

#include "dist/rendezvous.hpp"

namespace rigel::dist {

struct AllreduceRow {
    std::uint64_t bytes = 0;
    int ranks = 1;
    int iterations = 0;
    double seconds = 0;  // one all-reduce, the median of the timed batches
    double algbw_gbs = 0, busbw_gbs = 0;
};

// Powers of two from lo to hi bytes (both rounded down to one), at least 4.
std::vector<std::uint64_t> allreduce_sizes(std::uint64_t lo, std::uint64_t hi);
// algbw x 2 (n - 1) / n; 0 for one rank (nothing crosses a link).
double bus_bandwidth(double algbw, int ranks);

// On every rank of `r` (its GPU the local rank): an NCCL communicator over
// the rendezvous (rank 0 publishes the unique id), then the sweep. Throws
// std::runtime_error when rigel was built without CUDA or NCCL, or NCCL fails.
std::vector<AllreduceRow> nccl_allreduce_sweep(const RankInfo& r, const std::vector<std::uint64_t>& sizes);

}  // namespace rigel::dist
