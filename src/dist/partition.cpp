#include "dist/partition.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace rigel::dist {

Range shard(std::size_t n, int world, int rank, std::size_t align) {
    if (world < 1) throw std::invalid_argument("a shard needs a world of at least one rank");
    if (rank < 0 || rank >= world)
        throw std::invalid_argument("rank " + std::to_string(rank) + " is outside a world of " + std::to_string(world));
    if (align == 0) throw std::invalid_argument("shard boundaries need an alignment of at least one element");
    const std::size_t r = static_cast<std::size_t>(rank);
    const std::size_t step = shard_step(n, world, align);
    const std::size_t begin = std::min(n, r * step), end = std::min(n, (r + 1) * step);
    return {begin, end};
}

std::size_t shard_step(std::size_t n, int world, std::size_t align) {
    if (world < 1 || align == 0) throw std::invalid_argument("a shard needs a world of at least one rank and an alignment");
    // Per-rank share rounded up to the alignment, so that every shard but the
    // last ones is the same size.
    const std::size_t w = static_cast<std::size_t>(world);
    const std::size_t per = (n + w - 1) / w;
    return std::max<std::size_t>(align, (per + align - 1) / align * align);
}

}  // namespace rigel::dist
