// Input recipes. An operand is drawn from a named recipe and a seed, quantized
// once to the operand type, and kept twice: as the bytes the rung consumes and
// as the exact float64 values of those bytes, from which the reference is
// computed. The generator and the distributions are rigel's own, so the same
// recipe and seed give the same bytes with any compiler.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace rigel {

enum class Recipe : std::uint8_t {
    uniform,    // U[-1, 1]
    normal,     // N(0, 1)
    small_int,  // integers in [-4, 4]: exact in every type, sums exact in fp32
    hostile,    // sign * 2^e * (1 + f), e spread over the type's exponent range:
                // large and tiny terms mixed, to stress alignment in the accumulator
};

std::string_view name(Recipe r);
std::optional<Recipe> parse_recipe(std::string_view s);

// xoshiro256** seeded through splitmix64.
class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next();
    double uniform01();          // [0, 1), 53 random bits
    double uniform(double lo, double hi);
    double normal();             // Box-Muller
private:
    std::uint64_t s_[4];
};

struct Operand {
    DType type;
    std::size_t count = 0;
    std::vector<unsigned char> bytes;  // storage format of `type`
    std::vector<double> values;        // exact value of each element
};

// `stream` separates A from B under one seed.
Operand make_operand(DType type, Recipe recipe, std::uint64_t seed, std::uint64_t stream, std::size_t count);

// Quantize one double to `type` (round to nearest even, saturating for the fp8
// and fp4 types) and return both the stored bits and their exact value.
void quantize_into(DType type, double x, std::size_t index, Operand& out);

// Reorder a row-major rows x cols operand into cols x rows (untimed layout change
// for rungs that want B as N x K).
Operand transposed(const Operand& op, std::size_t rows, std::size_t cols);

}  // namespace rigel
