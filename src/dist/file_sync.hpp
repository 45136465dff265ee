// The training's sums between processes of one host through files in `rigel launch`'s rendezvous
// folder (train::GradientSync), for the float64 reference backend: `rigel launch --nproc N -- rigel
// train run --backend reference` then trains data-parallel on the CPU alone, so that the launcher,
// the ranks' share of the data, the sums, ZeRO stage 1 and the checkpoints are exercised end to end
// where there is no GPU (tests/cli/data_parallel.sh). The GPUs' sums are NCCL's (nccl_sync.hpp).
//
// Every collective is numbered. Each rank publishes its part as a file (rendezvous.hpp's publish:
// written whole, then renamed), reads every other rank's, and combines them in rank order, so every
// rank computes the same bits: a sum is taken in double, rank 0's part first, and rounded to fp32
// once. A rank deletes its file of collective k - 1 once every rank has published collective k's,
// which each rank does only after it has read all of collective k - 1's; the launcher removes the
// folder, and the last collective's files with it, when the launch ends. A file per collective:
// meant for small models and tests, not for speed.
#pragma once
#include <memory>

#include "dist/rendezvous.hpp"
#include "train/trainer.hpp"

namespace rigel::dist {

// Throws std::invalid_argument when `r` has no rendezvous folder (not under `rigel launch`). A rank
// that waits `timeout_s` seconds for another's part throws std::runtime_error naming the file.
std::unique_ptr<train::GradientSync> make_file_sync(const RankInfo& r, double timeout_s = 600.0);

}  // namespace rigel::dist
