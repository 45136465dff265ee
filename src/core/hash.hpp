// A 64-bit content hash for inputs and outputs (provenance and the "same bytes"
// check between runs). Not cryptographic; stable across machines and compilers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rigel {

inline std::uint64_t mix64(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

inline std::uint64_t hash64(const void* data, std::size_t bytes, std::uint64_t seed = 0x5249474548415348ull) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t h = seed ^ (bytes * 0x9e3779b97f4a7c15ull);
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = mix64(h ^ w) + 0x9e3779b97f4a7c15ull;
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p + i, bytes - i);
    return mix64(h ^ tail ^ (bytes - i));
}

}  // namespace rigel
