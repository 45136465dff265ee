// How data-parallel training divides its parameters: the ZeRO stage-1
// shards, the part of the flat parameter vector whose optimizer state (fp32
// master weights, AdamW's two moments) one rank keeps. (The gradient buckets
// are the layers themselves: the CUDA backend sums each layer's tensors as
// one NCCL group as soon as the backward pass leaves the layer.)
#pragma once
#include <cstddef>
#include <vector>

namespace rigel::dist {

// [begin, end) in elements of the flat parameter vector.
struct Range {
    std::size_t begin = 0, end = 0;
    std::size_t size() const { return end - begin; }
};

// Rank `rank` of `world`'s shard of a vector of `n` elements: contiguous,
// every boundary a multiple of `align` elements (so that each shard starts on
// a 16-byte boundary for align = 4 fp32 or 8 bf16), the shards in rank order
// and covering [0, n) exactly; the last may be shorter, some may be empty when
// n is small. Throws std::invalid_argument for world < 1, rank >= world or
// align 0.
Range shard(std::size_t n, int world, int rank, std::size_t align);
// The size of every full shard of shard(n, world, ., align): world times it
// covers n, so a buffer of world x shard_step elements holds every shard at
// rank x shard_step (what an all-gather in place needs).
std::size_t shard_step(std::size_t n, int world, std::size_t align);

}  // namespace rigel::dist
