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
// Every recipe's name, in the order above (help texts and errors list them).
std::vector<std::string_view> recipe_names();

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

// Which index of a row-major rows x cols operand is the GEMM's K, the one
// mxfp4's 32-element scale blocks run along: the column index for A (M x K)
// and for B as N x K, the row index for B as K x N.
enum class KAxis : std::uint8_t { cols, rows };

struct Operand {
    DType type;
    std::size_t count = 0;
    std::vector<unsigned char> bytes;  // storage format of `type` (dtype.hpp; mxfp4: elements, then scales)
    std::vector<double> values;        // exact value of each element
    // The matrix shape (count = rows * cols) and where K runs, set by the shaped
    // make_operand and carried by transposed(); mxfp4's scales need them.
    std::size_t rows = 0, cols = 0;
    KAxis k_axis = KAxis::cols;
};

// `stream` separates A from B under one seed. The count form draws a flat run
// of elements (a 1 x count row); it refuses mxfp4, whose scales need the shape.
Operand make_operand(DType type, Recipe recipe, std::uint64_t seed, std::uint64_t stream, std::size_t count);
// A row-major rows x cols operand. The same recipe, seed and stream give the
// same draws in the same order as the count form (so the same bytes for every
// type without block scales); mxfp4 then quantizes each 32-element block
// along k_axis with its own scale (formats.hpp, encode_mxfp4).
Operand make_operand(DType type, Recipe recipe, std::uint64_t seed, std::uint64_t stream, std::size_t rows,
                     std::size_t cols, KAxis k_axis);

// Quantize one double to `type` (round to nearest even, saturating for the fp8
// and fp4 types) and return both the stored bits and their exact value.
// mxfp4 is quantized a block at a time (make_operand with a shape), not here.
void quantize_into(DType type, double x, std::size_t index, Operand& out);

// mxfp4: the byte offset in Operand::bytes of the scale of the block holding
// element (r, c) of a shaped operand (layout in dtype.hpp).
std::size_t mxfp4_scale_offset(const Operand& op, std::size_t r, std::size_t c);

// Reorder a row-major rows x cols operand into cols x rows (untimed layout change
// for rungs that want B as N x K). 4-bit elements move nibble by nibble; mxfp4's
// scales move with their blocks and K's axis flips (K x N in, N x K out).
Operand transposed(const Operand& op, std::size_t rows, std::size_t cols);

}  // namespace rigel
