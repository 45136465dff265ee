// Input recipes and quantization to the operand type.
#include "core/recipe.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>

#include "core/formats.hpp"
#include "core/hash.hpp"

namespace rigel {
namespace {

constexpr std::array<std::pair<Recipe, std::string_view>, 4> kRecipes{{
    {Recipe::uniform, "uniform"},
    {Recipe::normal, "normal"},
    {Recipe::small_int, "small_int"},
    {Recipe::hostile, "hostile"},
}};

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Exponent span of the hostile recipe per type: wide enough that alignment in
// the accumulator drops bits, narrow enough that no product over- or underflows
// the operand type (e4m3 spans 2^-6..2^8, e2m1 2^0..2^2). mxfp4 keeps the
// default: its block scales carry the range, and elements far below their
// block's largest flush to zero, as MX quantization does.
int hostile_exponent_span(DType t) {
    switch (t) {
        case DType::e2m1: return 2;
        case DType::e4m3: return 5;
        case DType::i8: return 0;
        default: return 10;
    }
}

template <typename T>
void store(Operand& out, std::size_t i, T v) {
    std::memcpy(out.bytes.data() + i * sizeof(T), &v, sizeof(T));
}

void put_nibble(std::vector<unsigned char>& bytes, std::size_t i, unsigned nibble) {
    unsigned char& byte = bytes[i / 2];
    byte = (i % 2 == 0) ? static_cast<unsigned char>((byte & 0xF0) | nibble)
                        : static_cast<unsigned char>((byte & 0x0F) | (nibble << 4));
}

unsigned get_nibble(const std::vector<unsigned char>& bytes, std::size_t i) {
    return (bytes[i / 2] >> ((i % 2) * 4)) & 0xFu;
}

// The recipe's draws, one element after another.
class Draws {
public:
    Draws(DType type, Recipe recipe, std::uint64_t seed, std::uint64_t stream)
        : recipe_(recipe), rng_(mix64(seed) ^ mix64(stream + 0x51ed)), integer_(type == DType::i8),
          span_(hostile_exponent_span(type)) {}

    double next() {
        switch (recipe_) {
            case Recipe::uniform: return rng_.uniform(-1.0, 1.0) * (integer_ ? 127.0 : 1.0);
            case Recipe::normal: return rng_.normal() * (integer_ ? 32.0 : 1.0);
            case Recipe::small_int: return static_cast<double>(static_cast<int>(rng_.next() % 9) - 4);
            case Recipe::hostile: {
                const double sign = (rng_.next() & 1) ? -1.0 : 1.0;
                const int e = static_cast<int>(rng_.next() % static_cast<std::uint64_t>(2 * span_ + 1)) - span_;
                return integer_ ? sign * static_cast<double>(rng_.next() % 128)
                                : sign * std::ldexp(1.0 + rng_.uniform01(), e);
            }
        }
        return 0.0;
    }

private:
    Recipe recipe_;
    Rng rng_;
    bool integer_;
    int span_;
};

// Lines along K and elements per line of a shaped operand.
std::size_t lines_of(const Operand& op) { return op.k_axis == KAxis::cols ? op.rows : op.cols; }
std::size_t k_of(const Operand& op) { return op.k_axis == KAxis::cols ? op.cols : op.rows; }

// Row-major index of element kk of line `line`.
std::size_t element_index(const Operand& op, std::size_t line, std::size_t kk) {
    return op.k_axis == KAxis::cols ? line * op.cols + kk : kk * op.cols + line;
}

// op.values holds the unquantized draws; replace them by the exact values of
// the mxfp4 encoding, block by block (OCP MX v1.0 through encode_mxfp4: scale
// 2^(floor(log2 amax) - 2), elements rounded to nearest even and saturated at
// 6; the zero padding of a partial block changes neither).
void quantize_mxfp4(Operand& op) {
    const std::size_t lines = lines_of(op), k = k_of(op);
    for (std::size_t line = 0; line < lines; ++line) {
        for (std::size_t k0 = 0; k0 < k; k0 += kMxBlock) {
            const std::size_t len = std::min(kMxBlock, k - k0);
            float block[kMxBlock] = {};
            for (std::size_t j = 0; j < len; ++j)
                block[j] = static_cast<float>(op.values[element_index(op, line, k0 + j)]);
            const Mxfp4Block enc = encode_mxfp4(block);
            const std::size_t r = op.k_axis == KAxis::cols ? line : k0;
            const std::size_t c = op.k_axis == KAxis::cols ? k0 : line;
            op.bytes[mxfp4_scale_offset(op, r, c)] = enc.scale;
            const float scale = e8m0_to_f32(enc.scale);  // NaN for the NaN scale
            for (std::size_t j = 0; j < len; ++j) {
                const std::size_t i = element_index(op, line, k0 + j);
                const unsigned nibble = (enc.packed[j / 2] >> ((j % 2) * 4)) & 0xFu;
                put_nibble(op.bytes, i, nibble);
                // e2m1 times a power of two in [2^-127, 2^127]: exact in double.
                op.values[i] = std::isnan(scale)
                                   ? static_cast<double>(scale)
                                   : std::ldexp(static_cast<double>(e2m1_to_f32(static_cast<std::uint8_t>(nibble))),
                                                static_cast<int>(enc.scale) - 127);
            }
        }
    }
}

}  // namespace

std::string_view name(Recipe r) {
    for (auto& [rr, s] : kRecipes)
        if (rr == r) return s;
    return "?";
}

std::optional<Recipe> parse_recipe(std::string_view s) {
    for (auto& [rr, n] : kRecipes)
        if (n == s) return rr;
    return std::nullopt;
}

std::vector<std::string_view> recipe_names() {
    std::vector<std::string_view> out;
    for (const auto& r : kRecipes) out.push_back(r.second);
    return out;
}

Rng::Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : s_) {
        x += 0x9e3779b97f4a7c15ull;
        s = mix64(x);
    }
}

std::uint64_t Rng::next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double Rng::uniform01() { return static_cast<double>(next() >> 11) * 0x1p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

double Rng::normal() {
    double u1 = uniform01();
    while (u1 <= 0.0) u1 = uniform01();
    const double u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void quantize_into(DType type, double x, std::size_t i, Operand& out) {
    const auto f = static_cast<float>(x);
    switch (type) {
        case DType::f64:
            store(out, i, x);
            out.values[i] = x;
            return;
        case DType::f32:
            store(out, i, f);
            out.values[i] = f;
            return;
        case DType::tf32: {
            const float q = f32_to_tf32(f);
            store(out, i, q);
            out.values[i] = q;
            return;
        }
        case DType::f16: {
            const std::uint16_t b = f32_to_f16(f);
            store(out, i, b);
            out.values[i] = f16_to_f32(b);
            return;
        }
        case DType::bf16: {
            const std::uint16_t b = f32_to_bf16(f);
            store(out, i, b);
            out.values[i] = bf16_to_f32(b);
            return;
        }
        case DType::e4m3: {
            const std::uint8_t b = f32_to_e4m3(f, Overflow::saturate);
            out.bytes[i] = b;
            out.values[i] = e4m3_to_f32(b);
            return;
        }
        case DType::e5m2: {
            const std::uint8_t b = f32_to_e5m2(f, Overflow::saturate);
            out.bytes[i] = b;
            out.values[i] = e5m2_to_f32(b);
            return;
        }
        case DType::e2m1: {
            const std::uint8_t b = f32_to_e2m1(f);
            put_nibble(out.bytes, i, b);
            out.values[i] = e2m1_to_f32(b);
            return;
        }
        case DType::mxfp4:
            throw std::logic_error("mxfp4 elements are quantized a block at a time (make_operand with a shape)");
        case DType::i8: {
            const double r = std::nearbyint(std::fmin(127.0, std::fmax(-128.0, x)));
            const auto v = static_cast<std::int8_t>(r);
            store(out, i, v);
            out.values[i] = v;
            return;
        }
    }
    throw std::logic_error("quantize_into: unknown dtype");
}

Operand make_operand(DType type, Recipe recipe, std::uint64_t seed, std::uint64_t stream, std::size_t count) {
    if (type == DType::mxfp4)
        throw std::invalid_argument("an mxfp4 operand needs its shape and K's axis for its block scales");
    return make_operand(type, recipe, seed, stream, 1, count, KAxis::cols);
}

Operand make_operand(DType type, Recipe recipe, std::uint64_t seed, std::uint64_t stream, std::size_t rows,
                     std::size_t cols, KAxis k_axis) {
    Operand op;
    op.type = type;
    op.count = rows * cols;
    op.rows = rows;
    op.cols = cols;
    op.k_axis = k_axis;
    op.bytes.assign(operand_bytes(type, lines_of(op), k_of(op)), 0);
    op.values.resize(op.count);
    Draws draws(type, recipe, seed, stream);
    if (type == DType::mxfp4) {
        for (double& v : op.values) v = draws.next();
        quantize_mxfp4(op);
    } else {
        for (std::size_t i = 0; i < op.count; ++i) quantize_into(type, draws.next(), i, op);
    }
    return op;
}

std::size_t mxfp4_scale_offset(const Operand& op, std::size_t r, std::size_t c) {
    const std::size_t elements = storage_bytes(op.type, op.count);
    if (op.k_axis == KAxis::cols) return elements + r * ((op.cols + kMxBlock - 1) / kMxBlock) + c / kMxBlock;
    return elements + (r / kMxBlock) * op.cols + c;
}

Operand transposed(const Operand& op, std::size_t rows, std::size_t cols) {
    const bool scaled = op.type == DType::mxfp4;
    if (scaled && (op.rows != rows || op.cols != cols))
        throw std::invalid_argument("transposed: an mxfp4 operand is transposed with the shape it was made with");
    Operand t;
    t.type = op.type;
    t.count = op.count;
    t.rows = cols;
    t.cols = rows;
    t.k_axis = op.k_axis == KAxis::cols ? KAxis::rows : KAxis::cols;
    t.bytes.assign(op.bytes.size(), 0);
    t.values.resize(op.count);
    const int bits = info(op.type).storage_bits;
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
            const std::size_t src = r * cols + c, dst = c * rows + r;
            t.values[dst] = op.values[src];
            if (bits == 4) {
                put_nibble(t.bytes, dst, get_nibble(op.bytes, src));
            } else {
                const std::size_t w = static_cast<std::size_t>(bits / 8);
                std::memcpy(t.bytes.data() + dst * w, op.bytes.data() + src * w, w);
            }
        }
    }
    if (scaled) {
        // One scale per block: visit each block's first element.
        const std::size_t lines = lines_of(op), k = k_of(op);
        for (std::size_t line = 0; line < lines; ++line)
            for (std::size_t k0 = 0; k0 < k; k0 += kMxBlock) {
                const std::size_t r = op.k_axis == KAxis::cols ? line : k0;
                const std::size_t c = op.k_axis == KAxis::cols ? k0 : line;
                t.bytes[mxfp4_scale_offset(t, c, r)] = op.bytes[mxfp4_scale_offset(op, r, c)];
            }
    }
    return t;
}

}  // namespace rigel
