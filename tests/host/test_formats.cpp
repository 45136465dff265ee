// Host tests for core/formats: every code of every narrow format decoded against
// values computed here from the sign/exponent/mantissa fields, encoders checked
// against a brute-force nearest-value oracle on midpoints, their neighbours and
// a strided sweep of all fp32 patterns, and, when the CUDA headers are present,
// bit-for-bit against CUDA's own host-side conversions.
#include "core/formats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#if defined(RIGEL_HAVE_CUDA_HEADERS) && RIGEL_HAVE_CUDA_HEADERS
// These headers compile for the host with a plain C++ compiler; cuda_fp4.hpp
// has unused parameters, which -Werror must not see.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#pragma GCC diagnostic pop
#define RIGEL_TEST_CUDA 1
#else
#define RIGEL_TEST_CUDA 0
#endif

namespace {

using rigel::Overflow;

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

// A narrow binary format described by its fields only, independent of the
// implementation's tables.
struct Spec {
    const char* name;
    int exp_bits;
    int mant_bits;
    int bias;
    std::uint32_t max_code;  // largest finite magnitude code
};

constexpr Spec f16_spec{"f16", 5, 10, 15, 0x7BFF};
constexpr Spec bf16_spec{"bf16", 8, 7, 127, 0x7F7F};
constexpr Spec e4m3_spec{"e4m3", 4, 3, 7, 0x7E};
constexpr Spec e5m2_spec{"e5m2", 5, 2, 15, 0x7B};
constexpr Spec e2m1_spec{"e2m1", 2, 1, 1, 0x7};

// (-1)^s * 2^(e - bias) * (1 + m / 2^M), or 2^(1 - bias) * (m / 2^M) when e = 0.
double field_value(const Spec& s, std::uint32_t magnitude_code) {
    const std::uint32_t m = magnitude_code & ((1u << s.mant_bits) - 1);
    const int e = static_cast<int>(magnitude_code >> s.mant_bits);
    const double frac = static_cast<double>(m) / std::ldexp(1.0, s.mant_bits);
    if (e == 0) return std::ldexp(frac, 1 - s.bias);
    return std::ldexp(1.0 + frac, e - s.bias);
}

// All finite non-negative values by magnitude code, plus the value the next
// code would have if the exponent went on (where overflow begins).
struct Table {
    Spec spec;
    std::vector<double> values;
    double beyond;
};

Table make_table(const Spec& s) {
    Table t{s, {}, 0.0};
    for (std::uint32_t c = 0; c <= s.max_code; ++c) t.values.push_back(field_value(s, c));
    t.beyond = field_value(s, s.max_code + 1);
    return t;
}

const Table& table_for(const Spec& s) {
    static const Table f16 = make_table(f16_spec);
    static const Table bf16 = make_table(bf16_spec);
    static const Table e4m3 = make_table(e4m3_spec);
    static const Table e5m2 = make_table(e5m2_spec);
    static const Table e2m1 = make_table(e2m1_spec);
    if (&s == &f16_spec) return f16;
    if (&s == &bf16_spec) return bf16;
    if (&s == &e4m3_spec) return e4m3;
    if (&s == &e5m2_spec) return e5m2;
    return e2m1;
}

// Brute-force round to nearest, ties to the even code, of a finite |x|.
// Returns max_code + 1 when the result lies beyond the largest finite value.
std::uint32_t oracle_magnitude(const Table& t, double ax) {
    const auto& v = t.values;
    if (ax >= t.beyond) return t.spec.max_code + 1;
    const auto up = std::upper_bound(v.begin(), v.end(), ax);
    const auto lo = static_cast<std::uint32_t>(up - v.begin() - 1);
    if (v[lo] == ax) return lo;
    const std::uint32_t hi = lo + 1;
    const double hi_value = hi <= t.spec.max_code ? v[hi] : t.beyond;
    const double d_lo = ax - v[lo];  // exact: both are floats a binade apart at most
    const double d_hi = hi_value - ax;
    if (d_lo < d_hi) return lo;
    if (d_hi < d_lo) return hi;
    return (lo & 1u) == 0 ? lo : hi;
}

// The expected code of a finite x with the sign bit at sign_shift and the
// given code for overflow.
std::uint32_t oracle_encode(const Spec& s, float x, std::uint32_t overflow_code, int sign_shift) {
    std::uint32_t mag = oracle_magnitude(table_for(s), std::fabs(static_cast<double>(x)));
    if (mag > s.max_code) mag = overflow_code;
    return mag | (std::signbit(x) ? 1u << sign_shift : 0u);
}

void add_with_neighbours(std::vector<float>& out, float x) {
    for (const float v : {x, std::nextafter(x, -INFINITY), std::nextafter(x, INFINITY)}) {
        out.push_back(v);
        out.push_back(-v);
    }
}

// Inputs that exercise every rounding decision: a strided sweep of all 2^32
// fp32 patterns, every representable value and every midpoint of each format
// with their fp32 neighbours, the overflow boundaries, and the specials.
const std::vector<float>& probe_inputs() {
    static const std::vector<float> inputs = [] {
        constexpr std::uint64_t stride = 4093;  // prime, so every bit position moves
        std::vector<float> out;
        for (std::uint64_t p = 0; p < (std::uint64_t{1} << 32); p += stride) {
            out.push_back(float_of(static_cast<std::uint32_t>(p)));
        }
        for (const Spec* s : {&f16_spec, &bf16_spec, &e4m3_spec, &e5m2_spec, &e2m1_spec}) {
            const Table& t = table_for(*s);
            for (std::size_t i = 0; i < t.values.size(); ++i) {
                const double next = i + 1 < t.values.size() ? t.values[i + 1] : t.beyond;
                add_with_neighbours(out, static_cast<float>(t.values[i]));
                add_with_neighbours(out, static_cast<float>((t.values[i] + next) / 2));  // exact
            }
            add_with_neighbours(out, static_cast<float>(t.beyond));
        }
        for (const float v : {0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                              std::numeric_limits<float>::max(), INFINITY, 1.0f, 0.25f, 7.0f, 464.0f, 61440.0f,
                              65520.0f}) {
            add_with_neighbours(out, v);
        }
        for (const std::uint32_t nan : {0x7FC0'0000u, 0x7F80'0001u, 0x7FFF'FFFFu, 0x7FA0'0000u, 0xFFC0'0000u,
                                        0xFF80'0001u, 0xFFFF'FFFFu}) {
            out.push_back(float_of(nan));
        }
        return out;
    }();
    return inputs;
}

bool same_float(float a, double expected) {
    return static_cast<double>(a) == expected && std::signbit(a) == std::signbit(expected);
}

// ---------------------------------------------------------------- decoders

TEST(FormatsTest, E4m3DecodesEveryCode) {
    for (std::uint32_t c = 0; c < 256; ++c) {
        const float got = rigel::e4m3_to_f32(static_cast<std::uint8_t>(c));
        const std::uint32_t mag = c & 0x7Fu;
        if (mag == 0x7F) {
            EXPECT_TRUE(std::isnan(got)) << c;
            continue;
        }
        const double expected = (c & 0x80u) != 0 ? -field_value(e4m3_spec, mag) : field_value(e4m3_spec, mag);
        EXPECT_TRUE(same_float(got, expected)) << "code " << c << " got " << got << " expected " << expected;
    }
}

TEST(FormatsTest, E5m2DecodesEveryCode) {
    for (std::uint32_t c = 0; c < 256; ++c) {
        const float got = rigel::e5m2_to_f32(static_cast<std::uint8_t>(c));
        const std::uint32_t mag = c & 0x7Fu;
        const bool negative = (c & 0x80u) != 0;
        if (mag > 0x7C) {
            EXPECT_TRUE(std::isnan(got)) << c;
        } else if (mag == 0x7C) {
            EXPECT_EQ(got, negative ? -INFINITY : INFINITY) << c;
        } else {
            const double expected = negative ? -field_value(e5m2_spec, mag) : field_value(e5m2_spec, mag);
            EXPECT_TRUE(same_float(got, expected)) << "code " << c << " got " << got;
        }
    }
}

TEST(FormatsTest, E2m1DecodesEveryCode) {
    constexpr double documented[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (std::uint32_t c = 0; c < 16; ++c) {
        const float got = rigel::e2m1_to_f32(static_cast<std::uint8_t>(c));
        const double from_fields = field_value(e2m1_spec, c & 7u);
        EXPECT_EQ(from_fields, documented[c & 7u]);
        EXPECT_TRUE(same_float(got, (c & 8u) != 0 ? -from_fields : from_fields)) << c;
    }
}

TEST(FormatsTest, F16AndBf16DecodeEveryCode) {
    for (std::uint32_t c = 0; c < 65536; ++c) {
        const auto code = static_cast<std::uint16_t>(c);
        const std::uint32_t mag = c & 0x7FFFu;
        const bool negative = (c & 0x8000u) != 0;

        const float h = rigel::f16_to_f32(code);
        if (mag > 0x7C00) {
            EXPECT_TRUE(std::isnan(h)) << c;
        } else if (mag == 0x7C00) {
            EXPECT_EQ(h, negative ? -INFINITY : INFINITY);
        } else {
            EXPECT_TRUE(same_float(h, negative ? -field_value(f16_spec, mag) : field_value(f16_spec, mag))) << c;
        }

        const float b = rigel::bf16_to_f32(code);
        if (mag > 0x7F80) {
            EXPECT_TRUE(std::isnan(b)) << c;
        } else if (mag == 0x7F80) {
            EXPECT_EQ(b, negative ? -INFINITY : INFINITY);
        } else {
            EXPECT_TRUE(same_float(b, negative ? -field_value(bf16_spec, mag) : field_value(bf16_spec, mag))) << c;
        }
    }
}

TEST(FormatsTest, E8m0DecodesEveryCode) {
    for (std::uint32_t c = 0; c < 255; ++c) {
        EXPECT_EQ(static_cast<double>(rigel::e8m0_to_f32(static_cast<std::uint8_t>(c))),
                  std::ldexp(1.0, static_cast<int>(c) - 127))
            << c;
    }
    EXPECT_TRUE(std::isnan(rigel::e8m0_to_f32(0xFF)));
}

TEST(FormatsTest, SpotValues) {
    EXPECT_EQ(rigel::e4m3_to_f32(0x7E), 448.0f);
    EXPECT_EQ(rigel::e4m3_to_f32(0xFE), -448.0f);
    EXPECT_EQ(rigel::e4m3_to_f32(0x08), std::ldexp(1.0f, -6));
    EXPECT_EQ(rigel::e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
    EXPECT_EQ(rigel::e4m3_to_f32(0x38), 1.0f);
    EXPECT_EQ(rigel::e5m2_to_f32(0x7B), 57344.0f);
    EXPECT_EQ(rigel::e5m2_to_f32(0x04), std::ldexp(1.0f, -14));
    EXPECT_EQ(rigel::e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
    EXPECT_EQ(rigel::e5m2_to_f32(0x3C), 1.0f);
    EXPECT_EQ(rigel::e2m1_to_f32(0x7), 6.0f);
    EXPECT_EQ(rigel::e2m1_to_f32(0x1), 0.5f);
    EXPECT_EQ(rigel::e2m1_to_f32(0xA), -1.0f);
    EXPECT_EQ(rigel::f16_to_f32(0x7BFF), 65504.0f);
    EXPECT_EQ(rigel::f16_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(rigel::f16_to_f32(0x0400), std::ldexp(1.0f, -14));
    EXPECT_EQ(rigel::bf16_to_f32(0x3F80), 1.0f);
    EXPECT_EQ(rigel::bf16_to_f32(0x0001), std::ldexp(1.0f, -133));
    EXPECT_EQ(rigel::e8m0_to_f32(127), 1.0f);
    EXPECT_EQ(rigel::e8m0_to_f32(0), std::ldexp(1.0f, -127));
    EXPECT_EQ(rigel::e8m0_to_f32(254), std::ldexp(1.0f, 127));
}

// ------------------------------------------------------------- round trips

TEST(FormatsTest, RoundTripEveryNonNanCode) {
    for (std::uint32_t c = 0; c < 256; ++c) {
        const auto code = static_cast<std::uint8_t>(c);
        if ((c & 0x7Fu) != 0x7F) {
            const float v = rigel::e4m3_to_f32(code);
            EXPECT_EQ(rigel::f32_to_e4m3(v, Overflow::saturate), code) << c;
            EXPECT_EQ(rigel::f32_to_e4m3(v, Overflow::non_saturate), code) << c;
        }
        if ((c & 0x7Fu) <= 0x7C) {
            const float v = rigel::e5m2_to_f32(code);
            EXPECT_EQ(rigel::f32_to_e5m2(v, Overflow::non_saturate), code) << c;
            if ((c & 0x7Fu) != 0x7C) {
                EXPECT_EQ(rigel::f32_to_e5m2(v, Overflow::saturate), code) << c;
            }
        }
    }
    for (std::uint32_t c = 0; c < 16; ++c) {
        EXPECT_EQ(rigel::f32_to_e2m1(rigel::e2m1_to_f32(static_cast<std::uint8_t>(c))), c);
    }
    for (std::uint32_t c = 0; c < 65536; ++c) {
        const auto code = static_cast<std::uint16_t>(c);
        if ((c & 0x7FFFu) <= 0x7C00) {
            EXPECT_EQ(rigel::f32_to_f16(rigel::f16_to_f32(code)), code) << c;
        }
        if ((c & 0x7FFFu) <= 0x7F80) {
            EXPECT_EQ(rigel::f32_to_bf16(rigel::bf16_to_f32(code)), code) << c;
        }
    }
    for (std::uint32_t c = 0; c < 255; ++c) {
        EXPECT_EQ(rigel::f32_to_e8m0_floor(rigel::e8m0_to_f32(static_cast<std::uint8_t>(c))), c);
    }
}

// ---------------------------------------------------------------- encoders

TEST(FormatsTest, EncodersMatchNearestEvenOracle) {
    int failures = 0;
    for (const float x : probe_inputs()) {
        if (!std::isfinite(x)) continue;
        const std::uint32_t checks[][2] = {
            {rigel::f32_to_f16(x), oracle_encode(f16_spec, x, 0x7C00, 15)},
            {rigel::f32_to_bf16(x), oracle_encode(bf16_spec, x, 0x7F80, 15)},
            {rigel::f32_to_e4m3(x, Overflow::saturate), oracle_encode(e4m3_spec, x, 0x7E, 7)},
            {rigel::f32_to_e4m3(x, Overflow::non_saturate), oracle_encode(e4m3_spec, x, 0x7F, 7)},
            {rigel::f32_to_e5m2(x, Overflow::saturate), oracle_encode(e5m2_spec, x, 0x7B, 7)},
            {rigel::f32_to_e5m2(x, Overflow::non_saturate), oracle_encode(e5m2_spec, x, 0x7C, 7)},
            {rigel::f32_to_e2m1(x), oracle_encode(e2m1_spec, x, 0x7, 3)},
        };
        for (std::size_t k = 0; k < std::size(checks); ++k) {
            if (checks[k][0] != checks[k][1] && failures++ < 20) {
                ADD_FAILURE() << "conversion " << k << " of " << x << " (0x" << std::hex << bits_of(x)
                              << "): got 0x" << checks[k][0] << ", oracle 0x" << checks[k][1];
            }
        }
    }
    EXPECT_EQ(failures, 0);
}

TEST(FormatsTest, OverflowModes) {
    // e4m3: 464 is the tie between 448 and the (missing) 480; it goes to the
    // even 448. Anything above overflows.
    const float above_464 = std::nextafter(464.0f, INFINITY);
    EXPECT_EQ(rigel::f32_to_e4m3(464.0f, Overflow::non_saturate), 0x7E);
    EXPECT_EQ(rigel::f32_to_e4m3(above_464, Overflow::saturate), 0x7E);
    EXPECT_EQ(rigel::f32_to_e4m3(above_464, Overflow::non_saturate), 0x7F);
    EXPECT_EQ(rigel::f32_to_e4m3(-1e9f, Overflow::saturate), 0xFE);
    EXPECT_EQ(rigel::f32_to_e4m3(-1e9f, Overflow::non_saturate), 0xFF);
    EXPECT_EQ(rigel::f32_to_e4m3(INFINITY, Overflow::saturate), 0x7E);
    EXPECT_EQ(rigel::f32_to_e4m3(-INFINITY, Overflow::non_saturate), 0xFF);
    // e5m2: 61440 ties between 57344 (odd mantissa) and 65536 (inf): overflow.
    EXPECT_EQ(rigel::f32_to_e5m2(std::nextafter(61440.0f, 0.0f), Overflow::non_saturate), 0x7B);
    EXPECT_EQ(rigel::f32_to_e5m2(61440.0f, Overflow::non_saturate), 0x7C);
    EXPECT_EQ(rigel::f32_to_e5m2(61440.0f, Overflow::saturate), 0x7B);
    EXPECT_EQ(rigel::f32_to_e5m2(-INFINITY, Overflow::non_saturate), 0xFC);
    EXPECT_EQ(rigel::f32_to_e5m2(-INFINITY, Overflow::saturate), 0xFB);  // satfinite: inf -> max
    // f16: 65520 ties between 65504 and 65536: inf.
    EXPECT_EQ(rigel::f32_to_f16(65520.0f), 0x7C00);
    EXPECT_EQ(rigel::f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
    EXPECT_EQ(rigel::f32_to_f16(-INFINITY), 0xFC00);
    EXPECT_EQ(rigel::f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
    // e2m1 has no inf: always +-6.
    EXPECT_EQ(rigel::f32_to_e2m1(7.0f), 0x7);
    EXPECT_EQ(rigel::f32_to_e2m1(1e30f), 0x7);
    EXPECT_EQ(rigel::f32_to_e2m1(-INFINITY), 0xF);
}

TEST(FormatsTest, TiesAndSubnormals) {
    const float t = std::ldexp(1.0f, -10);  // half of e4m3's smallest subnormal
    EXPECT_EQ(rigel::f32_to_e4m3(t, Overflow::saturate), 0x00);
    EXPECT_EQ(rigel::f32_to_e4m3(std::nextafter(t, 1.0f), Overflow::saturate), 0x01);
    EXPECT_EQ(rigel::f32_to_e4m3(3 * t, Overflow::saturate), 0x02);    // 1.5 subnormal ulps -> even 2
    EXPECT_EQ(rigel::f32_to_e4m3(15 * t, Overflow::saturate), 0x08);   // 7.5 ulps -> min normal
    EXPECT_EQ(rigel::f32_to_e4m3(-t, Overflow::saturate), 0x80);       // underflow keeps the sign
    EXPECT_EQ(rigel::f32_to_e5m2(std::ldexp(1.0f, -17), Overflow::saturate), 0x00);
    EXPECT_EQ(rigel::f32_to_e5m2(std::ldexp(3.0f, -17), Overflow::saturate), 0x02);
    EXPECT_EQ(rigel::f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
    EXPECT_EQ(rigel::f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
    EXPECT_EQ(rigel::f32_to_f16(std::ldexp(1.0f, -149)), 0x0000);
    EXPECT_EQ(rigel::f32_to_bf16(float_of(0x0000'8000u)), 0x0000);  // tie, even
    EXPECT_EQ(rigel::f32_to_bf16(float_of(0x0001'8000u)), 0x0002);  // tie, odd -> up
    EXPECT_EQ(rigel::f32_to_bf16(float_of(0x3F80'8000u)), 0x3F80);
    EXPECT_EQ(rigel::f32_to_bf16(float_of(0x3F81'8000u)), 0x3F82);
    EXPECT_EQ(rigel::f32_to_bf16(float_of(0x3FFF'FFFFu)), 0x4000);  // carry into the exponent
    constexpr float e2m1_ties[][2] = {{0.25f, 0.0f}, {0.75f, 1.0f}, {1.25f, 1.0f}, {1.75f, 2.0f},
                                      {2.5f, 2.0f},  {3.5f, 4.0f},  {5.0f, 4.0f}};
    for (const auto& tie : e2m1_ties) {
        EXPECT_EQ(rigel::e2m1_to_f32(rigel::f32_to_e2m1(tie[0])), tie[1]) << tie[0];
        EXPECT_EQ(rigel::e2m1_to_f32(rigel::f32_to_e2m1(-tie[0])), -tie[1]) << tie[0];
    }
    EXPECT_EQ(rigel::f32_to_e2m1(std::nextafter(0.25f, 1.0f)), 0x1);
}

TEST(FormatsTest, NegativeZeroIsKept) {
    EXPECT_EQ(rigel::f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(rigel::f32_to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(rigel::f32_to_e4m3(-0.0f, Overflow::saturate), 0x80);
    EXPECT_EQ(rigel::f32_to_e5m2(-0.0f, Overflow::non_saturate), 0x80);
    EXPECT_EQ(rigel::f32_to_e2m1(-0.0f), 0x8);
    EXPECT_TRUE(std::signbit(rigel::f16_to_f32(0x8000)));
    EXPECT_TRUE(std::signbit(rigel::e4m3_to_f32(0x80)));
    EXPECT_TRUE(std::signbit(rigel::e5m2_to_f32(0x80)));
    EXPECT_TRUE(std::signbit(rigel::e2m1_to_f32(0x8)));
    EXPECT_TRUE(std::signbit(rigel::f32_to_tf32(-0.0f)));
}

TEST(FormatsTest, NanEncodesCanonically) {
    // CUDA's canonical codes: positive whatever the input's sign and payload;
    // e2m1 has no NaN and CUDA's conversion gives +6.
    for (const std::uint32_t nan : {0x7FC0'0000u, 0x7F80'0001u, 0xFFC0'0000u, 0xFFFF'FFFFu}) {
        const float x = float_of(nan);
        EXPECT_EQ(rigel::f32_to_f16(x), 0x7FFF);
        EXPECT_EQ(rigel::f32_to_bf16(x), 0x7FFF);
        EXPECT_EQ(rigel::f32_to_e4m3(x, Overflow::saturate), 0x7F);
        EXPECT_EQ(rigel::f32_to_e4m3(x, Overflow::non_saturate), 0x7F);
        EXPECT_EQ(rigel::f32_to_e5m2(x, Overflow::saturate), 0x7F);
        EXPECT_EQ(rigel::f32_to_e5m2(x, Overflow::non_saturate), 0x7F);
        EXPECT_EQ(rigel::f32_to_e2m1(x), 0x7);
        EXPECT_EQ(rigel::f32_to_e8m0_floor(x), 0xFF);
        EXPECT_EQ(bits_of(rigel::f32_to_tf32(x)), nan);
    }
}

TEST(FormatsTest, E8m0Floor) {
    EXPECT_EQ(rigel::f32_to_e8m0_floor(1.0f), 127);
    EXPECT_EQ(rigel::f32_to_e8m0_floor(std::nextafter(2.0f, 0.0f)), 127);
    EXPECT_EQ(rigel::f32_to_e8m0_floor(2.0f), 128);
    EXPECT_EQ(rigel::f32_to_e8m0_floor(-6.0f), 129);  // the magnitude's exponent
    EXPECT_EQ(rigel::f32_to_e8m0_floor(0.0f), 0);
    EXPECT_EQ(rigel::f32_to_e8m0_floor(std::numeric_limits<float>::denorm_min()), 0);
    EXPECT_EQ(rigel::f32_to_e8m0_floor(std::numeric_limits<float>::max()), 254);
    EXPECT_EQ(rigel::f32_to_e8m0_floor(INFINITY), 254);
}

// -------------------------------------------------------------------- tf32

// Nearest tf32 by distance in double, ties to the even 10-bit mantissa.
float tf32_oracle(float x) {
    const std::uint32_t u = bits_of(x);
    const float lo = float_of(u & ~0x1FFFu);
    const float hi = float_of((u & ~0x1FFFu) + 0x2000u);  // may be inf: the next binade
    const auto dx = static_cast<double>(x);
    const double d_lo = std::fabs(dx - static_cast<double>(lo));
    const double d_hi = std::isinf(hi) ? std::fabs(std::ldexp(x < 0 ? -1.0 : 1.0, 128) - dx)
                                       : std::fabs(static_cast<double>(hi) - dx);
    if (d_lo < d_hi) return lo;
    if (d_hi < d_lo) return hi;
    return (bits_of(lo) & 0x2000u) == 0 ? lo : hi;
}

TEST(FormatsTest, Tf32RoundsToNearestEven) {
    const float ulp = std::ldexp(1.0f, -10);
    EXPECT_EQ(rigel::f32_to_tf32(1.0f + ulp / 2), 1.0f);                       // tie, even
    EXPECT_EQ(rigel::f32_to_tf32(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);         // tie, odd -> up
    EXPECT_EQ(rigel::f32_to_tf32(std::nextafter(1.0f + ulp / 2, 2.0f)), 1.0f + ulp);
    EXPECT_EQ(rigel::f32_to_tf32(std::nextafter(1.0f + ulp / 2, 0.0f)), 1.0f);
    EXPECT_EQ(rigel::f32_to_tf32(-(1.0f + 3 * ulp / 2)), -(1.0f + 2 * ulp));
    EXPECT_EQ(rigel::f32_to_tf32(std::nextafter(2.0f, 0.0f)), 2.0f);           // carry into exponent
    EXPECT_EQ(bits_of(rigel::f32_to_tf32(float_of(0x7F7F'EFFFu))), 0x7F7F'E000u);
    EXPECT_EQ(rigel::f32_to_tf32(float_of(0x7F7F'F000u)), INFINITY);          // tie past the max
    EXPECT_EQ(rigel::f32_to_tf32(std::numeric_limits<float>::max()), INFINITY);
    EXPECT_EQ(rigel::f32_to_tf32(-std::numeric_limits<float>::max()), -INFINITY);
    EXPECT_EQ(rigel::f32_to_tf32(INFINITY), INFINITY);
    EXPECT_EQ(rigel::f32_to_tf32(-INFINITY), -INFINITY);
    EXPECT_EQ(bits_of(rigel::f32_to_tf32(float_of(0x0000'1000u))), 0x0000'0000u);  // subnormal tie
    EXPECT_EQ(bits_of(rigel::f32_to_tf32(float_of(0x0000'3000u))), 0x0000'4000u);
    EXPECT_EQ(bits_of(rigel::f32_to_tf32(float_of(0x007F'FFFFu))), 0x0080'0000u);  // to min normal
    int failures = 0;
    for (const float x : probe_inputs()) {
        if (!std::isfinite(x)) continue;
        const float got = rigel::f32_to_tf32(x);
        if (bits_of(got) != bits_of(tf32_oracle(x)) && failures++ < 20) {
            ADD_FAILURE() << "tf32 of 0x" << std::hex << bits_of(x) << ": 0x" << bits_of(got);
        }
    }
    EXPECT_EQ(failures, 0);
}

// ------------------------------------------------------------------- MXFP4

std::uint8_t element(const rigel::Mxfp4Block& b, int i) {
    const std::uint8_t byte = b.packed[static_cast<std::size_t>(i / 2)];
    return static_cast<std::uint8_t>((i & 1) != 0 ? byte >> 4 : byte & 0xF);
}

TEST(FormatsTest, Mxfp4ScaleIsFloorLog2AmaxMinus2) {
    struct Case {
        float amax;
        int scale_exp;
    };
    const Case cases[] = {{1.0f, -2}, {6.0f, 0}, {4.0f, 0}, {std::nextafter(4.0f, 0.0f), -1}, {8.0f, 1},
                          {0.3f, -4}, {std::numeric_limits<float>::max(), 125},
                          // tiny blocks clamp to e8m0's smallest scale
                          {std::ldexp(1.0f, -126), -127}, {std::numeric_limits<float>::denorm_min(), -127}};
    for (const Case& c : cases) {
        std::array<float, 32> v{};
        for (int i = 0; i < 32; ++i) v[static_cast<std::size_t>(i)] = c.amax * (static_cast<float>(i % 4) / 4);
        v[17] = -c.amax;  // amax taken over magnitudes
        const rigel::Mxfp4Block b = rigel::encode_mxfp4(v.data());
        EXPECT_EQ(b.scale, c.scale_exp + 127) << c.amax;
    }
}

TEST(FormatsTest, Mxfp4ElementsSaturateAndRoundEven) {
    std::array<float, 32> v{};
    v[0] = std::nextafter(8.0f, 0.0f);  // scale 1; 7.99.. would round to 8: saturates to 6
    v[1] = 7.0f;                        // tie 6 / 8 -> overflow -> 6
    v[2] = 5.0f;                        // tie 4 / 6 -> 4
    v[3] = -0.25f;                      // tie 0 / 0.5 -> -0
    v[4] = 0.2f;
    v[5] = -2.9f;
    const rigel::Mxfp4Block b = rigel::encode_mxfp4(v.data());
    EXPECT_EQ(b.scale, 127);
    std::array<float, 32> out{};
    rigel::decode_mxfp4(b, out.data());
    EXPECT_EQ(out[0], 6.0f);
    EXPECT_EQ(out[1], 6.0f);
    EXPECT_EQ(out[2], 4.0f);
    EXPECT_EQ(bits_of(out[3]), bits_of(-0.0f));
    EXPECT_EQ(out[4], 0.0f);
    EXPECT_EQ(out[5], -3.0f);
    EXPECT_EQ(b.packed[0], 0x77);  // elements 0 and 1, both +6
    EXPECT_EQ(b.packed[1], 0x86);  // element 2 (4.0) low, element 3 (-0) high

    std::array<float, 32> w{};
    w[9] = 3.9f;  // floor(log2 3.9) = 1 -> scale 2^-1; 3.9 / 0.5 = 7.8 -> 6 -> 3.0
    const rigel::Mxfp4Block c = rigel::encode_mxfp4(w.data());
    EXPECT_EQ(c.scale, 126);
    rigel::decode_mxfp4(c, out.data());
    EXPECT_EQ(out[9], 3.0f);
}

TEST(FormatsTest, Mxfp4ZeroBlock) {
    std::array<float, 32> v{};
    v[5] = -0.0f;
    const rigel::Mxfp4Block b = rigel::encode_mxfp4(v.data());
    EXPECT_EQ(b.scale, 0);
    std::array<float, 32> out{};
    out.fill(1.0f);
    rigel::decode_mxfp4(b, out.data());
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(out[static_cast<std::size_t>(i)], 0.0f);
        EXPECT_EQ(std::signbit(out[static_cast<std::size_t>(i)]), i == 5) << i;
    }
}

TEST(FormatsTest, Mxfp4NonFiniteBlockIsNan) {
    for (const float bad : {NAN, INFINITY, -INFINITY}) {
        std::array<float, 32> v{};
        v.fill(1.0f);
        v[31] = bad;
        const rigel::Mxfp4Block b = rigel::encode_mxfp4(v.data());
        EXPECT_EQ(b.scale, 0xFF);
        std::array<float, 32> out{};
        rigel::decode_mxfp4(b, out.data());
        for (const float x : out) EXPECT_TRUE(std::isnan(x));
    }
}

TEST(FormatsTest, Mxfp4RoundTripAndRandomBlocks) {
    std::mt19937 rng(20240607);
    std::uniform_int_distribution<int> code_dist(0, 15);
    std::uniform_int_distribution<int> scale_dist(-127, 125);
    std::uniform_int_distribution<int> big_dist(6, 7);  // codes of 4 and 6 pin floor(log2 amax)
    const Table& e2m1 = table_for(e2m1_spec);
    for (int trial = 0; trial < 2000; ++trial) {
        // Representable blocks come back unchanged.
        const int s = scale_dist(rng);
        std::array<std::uint8_t, 32> codes{};
        for (auto& c : codes) c = static_cast<std::uint8_t>(code_dist(rng));
        codes[static_cast<std::size_t>(trial % 32)] = static_cast<std::uint8_t>(big_dist(rng) | (trial & 8));
        std::array<float, 32> v{};
        for (std::size_t i = 0; i < 32; ++i) v[i] = std::ldexp(rigel::e2m1_to_f32(codes[i]), s);
        const rigel::Mxfp4Block b = rigel::encode_mxfp4(v.data());
        ASSERT_EQ(b.scale, s + 127);
        std::array<float, 32> out{};
        rigel::decode_mxfp4(b, out.data());
        for (std::size_t i = 0; i < 32; ++i) {
            ASSERT_EQ(element(b, static_cast<int>(i)), codes[i]);
            ASSERT_EQ(bits_of(out[i]), bits_of(v[i]));
        }

        // Arbitrary blocks: each element is the oracle's e2m1 of x / scale.
        std::uniform_int_distribution<std::uint32_t> bits_dist(0, 0x7F7F'FFFFu);
        const std::uint32_t base = bits_dist(rng);
        std::array<float, 32> x{};
        for (auto& xi : x) {
            const auto offset = static_cast<std::uint32_t>(rng() & 0x0FFF'FFFFu);
            const auto sign = static_cast<std::uint32_t>(rng() & 1u) << 31;
            xi = float_of(std::min<std::uint32_t>(base + offset, 0x7F7F'FFFFu) | sign);
        }
        const rigel::Mxfp4Block r = rigel::encode_mxfp4(x.data());
        double amax = 0;
        for (const float xi : x) amax = std::max(amax, std::fabs(static_cast<double>(xi)));
        const int expected_exp = std::max(std::ilogb(amax) - 2, -127);
        ASSERT_EQ(r.scale, expected_exp + 127);
        for (std::size_t i = 0; i < 32; ++i) {
            const double scaled = std::ldexp(std::fabs(static_cast<double>(x[i])), -expected_exp);
            const std::uint32_t mag = std::min<std::uint32_t>(oracle_magnitude(e2m1, scaled), 7);
            ASSERT_EQ(element(r, static_cast<int>(i)), mag | (std::signbit(x[i]) ? 8u : 0u)) << x[i];
        }
    }
}

// -------------------------------------------------- CUDA's host conversions

#if RIGEL_TEST_CUDA

float cuda_f16_to_f32(std::uint16_t bits) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
}
std::uint16_t cuda_f32_to_f16(float x) { return static_cast<__half_raw>(__float2half_rn(x)).x; }

float cuda_bf16_to_f32(std::uint16_t bits) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
}
std::uint16_t cuda_f32_to_bf16(float x) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x; }

// Every comparison below is bit for bit, NaN codes included: rigel chose
// CUDA's canonical NaN codes, so even in formats with several NaN codes
// (f16, bf16, e5m2, e4m3's 0x7F/0xFF) no NaN is allowed to differ. The one
// exception, the fp32 NaN that e8m0's 0xFF decodes to, is marked below.
TEST(FormatsTest, CudaF16AndBf16EveryCode) {
    int failures = 0;
    for (std::uint32_t c = 0; c < 65536; ++c) {
        const auto code = static_cast<std::uint16_t>(c);
        const float h = rigel::f16_to_f32(code);
        const float b = rigel::bf16_to_f32(code);
        const bool ok = bits_of(h) == bits_of(cuda_f16_to_f32(code)) &&
                        rigel::f32_to_f16(h) == cuda_f32_to_f16(h) &&
                        bits_of(b) == bits_of(cuda_bf16_to_f32(code)) &&
                        rigel::f32_to_bf16(b) == cuda_f32_to_bf16(b);
        if (!ok && failures++ < 20) ADD_FAILURE() << "code 0x" << std::hex << c;
    }
    EXPECT_EQ(failures, 0);
}

TEST(FormatsTest, CudaFp8AndFp4EveryCode) {
    for (std::uint32_t c = 0; c < 256; ++c) {
        const auto code = static_cast<__nv_fp8_storage_t>(c);
        const float e4 = __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E4M3)));
        const float e5 = __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E5M2)));
        const float e8 = __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(code)));
        EXPECT_EQ(bits_of(rigel::e4m3_to_f32(code)), bits_of(e4)) << c;
        EXPECT_EQ(bits_of(rigel::e5m2_to_f32(code)), bits_of(e5)) << c;
        // CUDA decodes e8m0 only to bf16, whose NaN 0x7FFF widens to fp32
        // 0x7FFF0000; rigel's decoders return 0x7FFFFFFF. fp32 has many NaN
        // codes, so here (only) any NaN matches any NaN.
        if (std::isnan(e8)) {
            EXPECT_TRUE(std::isnan(rigel::e8m0_to_f32(code))) << c;
        } else {
            EXPECT_EQ(bits_of(rigel::e8m0_to_f32(code)), bits_of(e8)) << c;
        }
    }
    for (std::uint32_t c = 0; c < 16; ++c) {
        const auto code = static_cast<__nv_fp4_storage_t>(c);
        const float e2 = __half2float(__half(__nv_cvt_fp4_to_halfraw(code, __NV_E2M1)));
        EXPECT_EQ(bits_of(rigel::e2m1_to_f32(code)), bits_of(e2)) << c;
    }
}

TEST(FormatsTest, CudaEncodersOverSweepAndBoundaries) {
    int failures = 0;
    for (const float x : probe_inputs()) {
        const std::uint32_t checks[][2] = {
            {rigel::f32_to_f16(x), cuda_f32_to_f16(x)},
            {rigel::f32_to_bf16(x), cuda_f32_to_bf16(x)},
            {rigel::f32_to_e4m3(x, Overflow::saturate), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)},
            {rigel::f32_to_e4m3(x, Overflow::non_saturate), __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)},
            {rigel::f32_to_e5m2(x, Overflow::saturate), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)},
            {rigel::f32_to_e5m2(x, Overflow::non_saturate), __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)},
            {rigel::f32_to_e2m1(x), __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)},
            {rigel::f32_to_e8m0_floor(x), __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero)},
        };
        for (std::size_t k = 0; k < std::size(checks); ++k) {
            if (checks[k][0] != checks[k][1] && failures++ < 20) {
                ADD_FAILURE() << "conversion " << k << " of " << x << " (0x" << std::hex << bits_of(x)
                              << "): rigel 0x" << checks[k][0] << ", CUDA 0x" << checks[k][1];
            }
        }
    }
    EXPECT_EQ(failures, 0);
}

#else

TEST(FormatsTest, CudaCrossCheck) { GTEST_SKIP() << "built without the CUDA headers"; }

#endif

}  // namespace
