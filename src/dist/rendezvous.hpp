// How the processes of one multi-GPU run find each other (issue: data-parallel
// training). `rigel launch` starts one process per GPU and gives each its
// rank, the world size and a rendezvous folder in the environment; inside the
// folder one rank publishes a file (written whole under a temporary name, then
// renamed into place, so no reader sees half of it) and the others wait for
// it. NCCL's unique id travels this way; no MPI and no network service.
#pragma once
#include <string>

namespace rigel::dist {

inline constexpr const char* kRankVar = "RIGEL_RANK";
inline constexpr const char* kWorldVar = "RIGEL_WORLD_SIZE";
inline constexpr const char* kLocalRankVar = "RIGEL_LOCAL_RANK";
inline constexpr const char* kRendezvousVar = "RIGEL_RENDEZVOUS";
// One name for all ranks of one launch (the rendezvous folder's), recorded in
// every sidecar, so that a report finds the files of one node's run together.
inline constexpr const char* kLaunchIdVar = "RIGEL_LAUNCH_ID";

struct RankInfo {
    int rank = 0, world = 1;
    int local_rank = 0;      // the GPU this process takes (one node: the rank)
    std::string rendezvous;  // empty for a single process
    std::string launch_id;   // empty for a single process
};

// From the environment `rigel launch` sets; a single process (rank 0 of 1,
// no rendezvous) when none of it is set. Throws std::invalid_argument with
// one sentence when the values are malformed or inconsistent.
RankInfo rank_from_env();

// Writes `bytes` to dir/name as a whole: a temporary file first, then a rename.
// Throws std::runtime_error naming the file when it cannot.
void publish(const std::string& dir, const std::string& name, const std::string& bytes);

// The contents of dir/name once it exists; throws std::runtime_error after
// timeout_s seconds without it (the publishing rank failed or never started).
std::string wait_for(const std::string& dir, const std::string& name, double timeout_s);

}  // namespace rigel::dist
