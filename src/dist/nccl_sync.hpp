// The training's gradient sum over NCCL (train::GradientSync), one
// communicator per process, built over `rigel launch`'s rendezvous.
#pragma once
#include <memory>

#include "dist/rendezvous.hpp"
#include "train/trainer.hpp"

namespace rigel::dist {

// Throws std::runtime_error when rigel was built without CUDA or NCCL.
std::unique_ptr<train::GradientSync> make_nccl_sync(const RankInfo& r);

}  // namespace rigel::dist
