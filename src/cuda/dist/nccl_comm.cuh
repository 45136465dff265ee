// An NCCL communicator over `rigel launch`'s rendezvous: rank 0 makes the
// unique id and publishes it, the others read it (a minute at most), then
// every rank joins on its GPU (the local rank). Shared by the all-reduce
// probe and the training's gradient sum; only with NCCL (RIGEL_HAVE_NCCL).
#pragma once
#if RIGEL_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/check.cuh"
#include "dist/rendezvous.hpp"

namespace rigel::dist {

inline void nccl_check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) throw std::runtime_error(std::string(what) + " failed: " + ncclGetErrorString(r));
}

inline ncclComm_t make_nccl_comm(const RankInfo& r) {
    RIGEL_CUDA_CHECK(cudaSetDevice(r.local_rank));
    ncclUniqueId id{};
    if (r.rank == 0) {
        nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
        if (r.world > 1) publish(r.rendezvous, "nccl_id", std::string(reinterpret_cast<const char*>(&id), sizeof id));
    } else {
        const std::string bytes = wait_for(r.rendezvous, "nccl_id", 60.0);
        if (bytes.size() != sizeof id) throw std::runtime_error("the rendezvous's nccl_id has the wrong size");
        std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(&id));
    }
    ncclComm_t comm = nullptr;
    nccl_check(ncclCommInitRank(&comm, r.world, id, r.rank), "ncclCommInitRank");
    return comm;
}

}  // namespace rigel::dist
#endif
