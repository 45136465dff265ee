#include "dist/allreduce.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace rigel::dist {

std::vector<std::uint64_t> allreduce_sizes(std::uint64_t lo, std::uint64_t hi) {
    lo = std::bit_floor(std::max<std::uint64_t>(lo, 4));
    hi = std::bit_floor(std::max<std::uint64_t>(hi, 4));
    if (lo > hi) throw std::invalid_argument("the smallest all-reduce size is above the largest");
    std::vector<std::uint64_t> sizes;
    for (std::uint64_t s = lo; s <= hi; s *= 2) sizes.push_back(s);
    return sizes;
}

double bus_bandwidth(double algbw, int ranks) {
    return ranks < 2 ? 0.0 : algbw * 2.0 * (ranks - 1) / ranks;
}

}  // namespace rigel::dist
