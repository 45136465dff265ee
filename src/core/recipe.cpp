// Input recipes and quantization to the operand type.
#include "core/recipe.hpp"

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
// the operand type (e4m3 spans 2^-6..2^8, e2m1 2^0..2^2).
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
            unsigned char& byte = out.bytes[i / 2];
            byte = (i % 2 == 0) ? static_cast<unsigned char>((byte & 0xF0) | b)
                                : static_cast<unsigned char>((byte & 0x0F) | (b << 4));
            out.values[i] = e2m1_to_f32(b);
            return;
        }
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
    Operand op;
    op.type = type;
    op.count = count;
    op.bytes.assign(storage_bytes(type, count), 0);
    op.values.resize(count);
    Rng rng(mix64(seed) ^ mix64(stream + 0x51ed));
    const bool integer = type == DType::i8;
    const int span = hostile_exponent_span(type);
    for (std::size_t i = 0; i < count; ++i) {
        double x = 0.0;
        switch (recipe) {
            case Recipe::uniform:
                x = rng.uniform(-1.0, 1.0) * (integer ? 127.0 : 1.0);
                break;
            case Recipe::normal:
                x = rng.normal() * (integer ? 32.0 : 1.0);
                break;
            case Recipe::small_int:
                x = static_cast<double>(static_cast<int>(rng.next() % 9) - 4);
                break;
            case Recipe::hostile: {
                const double sign = (rng.next() & 1) ? -1.0 : 1.0;
                const int e = static_cast<int>(rng.next() % static_cast<std::uint64_t>(2 * span + 1)) - span;
                x = integer ? sign * static_cast<double>(rng.next() % 128)
                            : sign * std::ldexp(1.0 + rng.uniform01(), e);
                break;
            }
        }
        quantize_into(type, x, i, op);
    }
    return op;
}

Operand transposed(const Operand& op, std::size_t rows, std::size_t cols) {
    Operand t;
    t.type = op.type;
    t.count = op.count;
    t.bytes.assign(op.bytes.size(), 0);
    t.values.resize(op.count);
    const int bits = info(op.type).storage_bits;
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
            const std::size_t src = r * cols + c, dst = c * rows + r;
            t.values[dst] = op.values[src];
            if (bits == 4) {
                const unsigned nib = (op.bytes[src / 2] >> ((src % 2) * 4)) & 0xF;
                t.bytes[dst / 2] = static_cast<unsigned char>(t.bytes[dst / 2] | (nib << ((dst % 2) * 4)));
            } else {
                const std::size_t w = static_cast<std::size_t>(bits / 8);
                std::memcpy(t.bytes.data() + dst * w, op.bytes.data() + src * w, w);
            }
        }
    }
    return t;
}

}  // namespace rigel
