// The library's float64 reference and verification gate (reference.hpp).
#include "gemm/reference.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/formats.hpp"
#include "core/recipe.hpp"

namespace rigel::gemm {
namespace {

// Rows of a stored matrix: A and B as stored (gemm.hpp), M x N for C, D and aux.
std::int64_t rows_a(const Desc& d) { return d.a_op == Op::n ? d.m : d.k; }
std::int64_t rows_b(const Desc& d) { return d.b_op == Op::n ? d.k : d.n; }

std::size_t matrix_bytes(std::int64_t rows, std::int64_t ld, Type t) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(ld) * static_cast<std::size_t>(type_bytes(t));
}

Type bias_type(const Desc& d) { return d.d_type == Type::f32 ? Type::f32 : d.d_type; }

void encode(Type t, float x, std::uint8_t* p) {
    switch (t) {
        case Type::f32: std::memcpy(p, &x, 4); return;
        case Type::bf16: { const std::uint16_t v = f32_to_bf16(x); std::memcpy(p, &v, 2); return; }
        case Type::f16: { const std::uint16_t v = f32_to_f16(x); std::memcpy(p, &v, 2); return; }
        case Type::e4m3: *p = f32_to_e4m3(x, Overflow::saturate); return;
        case Type::e5m2: *p = f32_to_e5m2(x, Overflow::saturate); return;
    }
}

// A rows x cols matrix at leading dimension ld, uniform in [lo, hi], padding poisoned.
std::vector<std::uint8_t> random_matrix(Type t, std::int64_t rows, std::int64_t cols, std::int64_t ld, Rng& rng,
                                        double lo, double hi) {
    std::vector<std::uint8_t> out(matrix_bytes(rows, ld, t), kPoisonByte);
    const int bytes = type_bytes(t);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            encode(t, static_cast<float>(rng.uniform(lo, hi)), out.data() + (r * ld + c) * bytes);
    return out;
}

}  // namespace

BufferSizes buffer_sizes(const Desc& desc, float beta) {
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueTraits e = traits(d.epilogue);
    BufferSizes s;
    s.a = matrix_bytes(rows_a(d), d.lda, d.a_type);
    s.b = matrix_bytes(rows_b(d), d.ldb, d.b_type);
    s.c = beta != 0.0f ? matrix_bytes(d.m, d.ldc, d.d_type) : 0;
    s.d = matrix_bytes(d.m, d.ldd, d.d_type);
    s.bias = e.bias ? matrix_bytes(1, d.n, bias_type(d)) : 0;
    s.aux = e.aux_in || e.aux_out ? matrix_bytes(d.m, d.ldaux, d.d_type) : 0;
    s.bgrad = e.bgrad ? static_cast<std::size_t>(d.n) * sizeof(float) : 0;
    return s;
}

HostInputs random_inputs(const Desc& desc, std::uint64_t seed, float alpha, float beta) {
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueTraits e = traits(d.epilogue);
    Rng rng(seed);
    HostInputs in;
    in.alpha = alpha;
    in.beta = beta;
    in.a = random_matrix(d.a_type, rows_a(d), d.a_op == Op::n ? d.k : d.m, d.lda, rng, -1, 1);
    in.b = random_matrix(d.b_type, rows_b(d), d.b_op == Op::n ? d.n : d.k, d.ldb, rng, -1, 1);
    if (beta != 0.0f) in.c = random_matrix(d.d_type, d.m, d.n, d.ldc, rng, -1, 1);
    if (e.bias) in.bias = random_matrix(bias_type(d), 1, d.n, d.n, rng, -1, 1);
    if (e.aux_in) in.aux = random_matrix(d.d_type, d.m, d.n, d.ldaux, rng, -4, 4);
    return in;
}

GemmVerdict verify_gemm(const Desc&, const HostInputs&, const DeviceOutputs&, std::uint64_t, int,
                        const VerifyOptions&) {
    throw std::logic_error("verify_gemm: the comparison is not written yet");
}

ElementBound element_bound(const Desc&, const HostInputs&, std::int64_t, std::int64_t, Path) {
    throw std::logic_error("element_bound: not written yet");
}

}  // namespace rigel::gemm
