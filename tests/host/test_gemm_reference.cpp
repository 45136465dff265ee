// The library's verification gate (src/gemm/reference.hpp): it passes what an
// honest kernel writes, simulated here on the host (fp32 accumulation and
// epilogue from the same bytes, outputs rounded to nearest even, like the
// device's), for every epilogue, output type and layout on odd shapes with
// padded rows; and it fails each way a kernel can be wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gemm/reference.hpp"

namespace rigel::gemm {
namespace {

constexpr Epilogue kEpilogues[] = {Epilogue::none,          Epilogue::bias,          Epilogue::bias_relu,
                                   Epilogue::bias_gelu,     Epilogue::bias_gelu_erf, Epilogue::bias_gelu_aux,
                                   Epilogue::dgelu_bgrad};
constexpr Type kOutputs[] = {Type::f32, Type::bf16, Type::f16};
constexpr Op kOps[] = {Op::n, Op::t};

// What can go wrong in the simulated kernel.
struct Fault {
    bool swap_gelu = false;  // tanh GELU where erf is asked, and the reverse (gelu' likewise)
    bool flip_a = false;     // A read in the other storage order than its op says
    bool flip_b = false;
};

struct Written {
    std::vector<std::uint8_t> d, aux;
    std::vector<float> bgrad;
    std::vector<float> unrounded;  // D before its rounding, M x N
    DeviceOutputs outputs() const { return {.d = d.data(), .aux = aux.data(), .bgrad = bgrad.data()}; }
};

float gelu_tanh32(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }
float gelu_erf32(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678f)); }
float gelu_tanh_grad32(float x) {
    const float t = std::tanh(0.7978845608f * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}
float gelu_erf_grad32(float x) {
    return 0.5f * (1.0f + std::erf(x * 0.70710678f)) + x * std::exp(-0.5f * x * x) * 0.39894228f;
}

float rounded(Type t, float v) {
    std::uint8_t buf[4];
    store_element(t, buf, 0, v);
    return load_element(t, buf, 0);
}

// The device, on the host: fp32 products summed in order, the epilogue in
// fp32, D and aux rounded to their type, bgrad summed in fp32; the
// decomposed path rounds alpha acc + beta C to D's type first.
Written simulate(const Desc& desc, const HostInputs& in, Path path = Path::fused, Fault fault = {}) {
    const Desc d = with_packed_leading_dimensions(desc);
    const EpilogueTraits e = traits(d.epilogue);
    const BufferSizes sizes = buffer_sizes(d, in.beta);
    Written w;
    w.d.assign(sizes.d, kPoisonByte);
    if (e.aux_out) w.aux.assign(sizes.aux, kPoisonByte);
    w.bgrad.assign(static_cast<std::size_t>(d.n), 0.0f);
    w.unrounded.assign(static_cast<std::size_t>(d.m * d.n), 0.0f);
    const Op a_op = fault.flip_a ? (d.a_op == Op::n ? Op::t : Op::n) : d.a_op;
    const Op b_op = fault.flip_b ? (d.b_op == Op::n ? Op::t : Op::n) : d.b_op;
    const Type bias_t = d.d_type == Type::f32 ? Type::f32 : d.d_type;
    const bool erf = (d.epilogue == Epilogue::bias_gelu_erf) != fault.swap_gelu;
    for (std::int64_t i = 0; i < d.m; ++i)
        for (std::int64_t j = 0; j < d.n; ++j) {
            float acc = 0.0f;
            for (std::int64_t p = 0; p < d.k; ++p) {
                const float a = load_element(d.a_type, in.a.data(), a_op == Op::n ? i * d.lda + p : p * d.lda + i);
                const float b = load_element(d.b_type, in.b.data(), b_op == Op::n ? p * d.ldb + j : j * d.ldb + p);
                acc = std::fma(a, b, acc);
            }
            float x = in.alpha * acc;
            if (in.beta != 0.0f) x += in.beta * load_element(d.d_type, in.c.data(), i * d.ldc + j);
            if (path == Path::decomposed) x = rounded(d.d_type, x);
            const float bias = e.bias ? load_element(bias_t, in.bias.data(), j) : 0.0f;
            const float pre = x + bias;
            float v = pre;
            switch (d.epilogue) {
                case Epilogue::none: v = x; break;
                case Epilogue::bias: break;
                case Epilogue::bias_relu: v = std::max(pre, 0.0f); break;
                case Epilogue::bias_gelu:
                case Epilogue::bias_gelu_aux:
                case Epilogue::bias_gelu_erf: v = erf ? gelu_erf32(pre) : gelu_tanh32(pre); break;
                case Epilogue::dgelu_bgrad: {
                    const float aux = load_element(d.d_type, in.aux.data(), i * d.ldaux + j);
                    v = x * (erf ? gelu_erf_grad32(aux) : gelu_tanh_grad32(aux));
                    break;
                }
            }
            if (e.aux_out) store_element(d.d_type, w.aux.data(), i * d.ldaux + j, pre);
            store_element(d.d_type, w.d.data(), i * d.ldd + j, v);
            w.unrounded[static_cast<std::size_t>(i * d.n + j)] = v;
            w.bgrad[static_cast<std::size_t>(j)] += v;
        }
    return w;
}

// An odd shape with every leading dimension padded (A and B by 16 bytes).
Desc odd_desc(Epilogue ep, Type out, Op a_op, Op b_op, Type in = Type::bf16, std::int64_t m = 37,
              std::int64_t n = 45, std::int64_t k = 29) {
    Desc d{.m = m, .n = n, .k = k, .a_type = in, .b_type = in, .a_op = a_op, .b_op = b_op, .d_type = out,
           .epilogue = ep};
    const std::int64_t pad = 16 / type_bytes(in);
    const std::int64_t a_cols = a_op == Op::n ? k : m, b_cols = b_op == Op::n ? n : k;
    d.lda = (a_cols + pad - 1) / pad * pad + pad;
    d.ldb = (b_cols + pad - 1) / pad * pad + pad;
    d.ldd = n + 3;
    d.ldc = n + 5;
    d.ldaux = n + 2;
    return d;
}

std::string label(const Desc& d, Path path) {
    return std::string(name(d.a_type)) + " " + layout_name(d.a_op, d.b_op) + " -> " + name(d.d_type) + " " +
           name(d.epilogue) + (path == Path::decomposed ? " decomposed" : " fused");
}

// Raw bits of element idx of a 16-bit buffer, or of a float one.
void add_to_bits(Type t, std::vector<std::uint8_t>& buf, std::int64_t idx, int delta) {
    if (t == Type::f32) {
        std::uint32_t u;
        std::memcpy(&u, buf.data() + idx * 4, 4);
        u += static_cast<std::uint32_t>(delta);
        std::memcpy(buf.data() + idx * 4, &u, 4);
    } else {
        std::uint16_t u;
        std::memcpy(&u, buf.data() + idx * 2, 2);
        u = static_cast<std::uint16_t>(u + delta);
        std::memcpy(buf.data() + idx * 2, &u, 2);
    }
}

// Stores ref + sign(ref) allowed, rounded, then `ulps` further from ref: an
// error of a few ulps beyond the allowance.
void push_beyond(Type t, std::vector<std::uint8_t>& buf, std::int64_t idx, double ref, double allowed, int ulps) {
    const double target = ref + std::copysign(allowed, ref);
    store_element(t, buf.data(), idx, static_cast<float>(target));
    add_to_bits(t, buf, idx, ulps);  // sign-magnitude: a larger pattern is further from 0
}

TEST(GemmReference, BufferSizesCountEveryRowAtItsLeadingDimension) {
    const Desc d = odd_desc(Epilogue::bias_gelu_aux, Type::bf16, Op::t, Op::n);
    const BufferSizes s = buffer_sizes(d, 0.5f);
    EXPECT_EQ(s.a, static_cast<std::size_t>(d.k * d.lda * 2));  // A op t: stored K x M
    EXPECT_EQ(s.b, static_cast<std::size_t>(d.k * d.ldb * 2));
    EXPECT_EQ(s.c, static_cast<std::size_t>(d.m * d.ldc * 2));
    EXPECT_EQ(s.d, static_cast<std::size_t>(d.m * d.ldd * 2));
    EXPECT_EQ(s.bias, static_cast<std::size_t>(d.n * 2));
    EXPECT_EQ(s.aux, static_cast<std::size_t>(d.m * d.ldaux * 2));
    EXPECT_EQ(s.bgrad, 0u);
    const BufferSizes f = buffer_sizes(odd_desc(Epilogue::dgelu_bgrad, Type::f32, Op::n, Op::n), 0.0f);
    EXPECT_EQ(f.c, 0u);
    EXPECT_EQ(f.bias, 0u);
    EXPECT_EQ(f.bgrad, 45u * 4);
    EXPECT_EQ(buffer_sizes(odd_desc(Epilogue::bias, Type::f32, Op::n, Op::n), 0.0f).bias, 45u * 4);  // f32 bias
}

TEST(GemmReference, RandomInputsAreSeededInRangeWithPoisonedPadding) {
    const Desc d = odd_desc(Epilogue::dgelu_bgrad, Type::bf16, Op::n, Op::t);
    const HostInputs in = random_inputs(d, 7, 1.0f, 0.5f);
    const BufferSizes s = buffer_sizes(d, 0.5f);
    EXPECT_EQ(in.a.size(), s.a);
    EXPECT_EQ(in.b.size(), s.b);
    EXPECT_EQ(in.c.size(), s.c);
    EXPECT_EQ(in.aux.size(), s.aux);
    EXPECT_TRUE(in.bias.empty());
    EXPECT_TRUE(random_inputs(d, 7, 1.0f, 0.0f).c.empty());
    double aux_max = 0;
    for (std::int64_t r = 0; r < d.m; ++r)
        for (std::int64_t c = 0; c < d.lda; ++c) {
            const float v = load_element(d.a_type, in.a.data(), r * d.lda + c);
            if (c < d.k) {
                EXPECT_LE(std::fabs(v), 1.0f);
            } else {
                EXPECT_EQ(in.a[static_cast<std::size_t>(2 * (r * d.lda + c))], kPoisonByte);
                EXPECT_TRUE(std::isnan(v));  // a padding element a kernel reads poisons its output
            }
        }
    for (std::int64_t r = 0; r < d.m; ++r)
        for (std::int64_t c = 0; c < d.n; ++c)
            aux_max = std::max<double>(aux_max, std::fabs(load_element(d.d_type, in.aux.data(), r * d.ldaux + c)));
    EXPECT_GT(aux_max, 3.0);  // GELU' sampled over its curved range
    EXPECT_LE(aux_max, 4.0);
    EXPECT_EQ(random_inputs(d, 7, 1.0f, 0.5f).b, in.b);
    EXPECT_NE(random_inputs(d, 8, 1.0f, 0.5f).b, in.b);
}

TEST(GemmReference, PoisonIsANaNInEveryStoredType) {
    const std::uint8_t poison[4] = {kPoisonByte, kPoisonByte, kPoisonByte, kPoisonByte};
    for (Type t : {Type::f32, Type::bf16, Type::f16, Type::e4m3, Type::e5m2})
        EXPECT_TRUE(std::isnan(load_element(t, poison, 0))) << name(t);
}

TEST(GemmReference, AllowanceIsTheDocumentedSum) {
    // 1 x 1 x 1, a = b = 0.5, alpha 2, beta 0.5 with c = -0.25, bias 0.125.
    constexpr double u = 0x1p-24;
    Desc d{.m = 1, .n = 1, .k = 1, .a_type = Type::bf16, .b_type = Type::bf16, .d_type = Type::bf16,
           .epilogue = Epilogue::bias};
    HostInputs in;
    in.a = in.b = in.c = in.bias = std::vector<std::uint8_t>(2);
    in.alpha = 2.0f;
    in.beta = 0.5f;
    store_element(Type::bf16, in.a.data(), 0, 0.5f);
    store_element(Type::bf16, in.b.data(), 0, 0.5f);
    store_element(Type::bf16, in.c.data(), 0, -0.25f);
    store_element(Type::bf16, in.bias.data(), 0, 0.125f);
    // pre = 2 * 0.25 - 0.125 + 0.125 = 0.5; S = 0.25; accumulation 16u (K = 1: the floor).
    const double e = 16 * u * 2 * 0.25 + 4 * u * (2 * 0.25 + 0.125 + 0.125);
    ElementBound b = element_bound(d, in, 0, 0);
    EXPECT_EQ(b.d_ref, 0.5);
    EXPECT_DOUBLE_EQ(b.unrounded_allowed, e);
    EXPECT_DOUBLE_EQ(b.d_allowed, e * (1 + 0x1p-8) + 0x1p-8 * 0.5 + 0x1p-134);
    // The decomposed path rounds alpha p + beta c = 0.375 once more.
    const double e_dec = e + 0x1p-8 * (0.5 + 0.125 + e) + 0x1p-134;
    EXPECT_DOUBLE_EQ(element_bound(d, in, 0, 0, Path::decomposed).unrounded_allowed, e_dec);
    // ReLU clamps a negative pre-activation to 0 with the same allowance.
    d.epilogue = Epilogue::bias_relu;
    in.alpha = -2.0f;
    b = element_bound(d, in, 0, 0);
    EXPECT_EQ(b.d_ref, 0.0);
    EXPECT_DOUBLE_EQ(b.unrounded_allowed, e);
}

TEST(GemmReference, PassesAnHonestKernelForEveryEpilogueOutputAndLayout) {
    int runs = 0;
    for (Epilogue ep : kEpilogues)
        for (Type out : kOutputs)
            for (Op a_op : kOps)
                for (Op b_op : kOps)
                    for (Path path : {Path::fused, Path::decomposed}) {
                        const Desc d = odd_desc(ep, out, a_op, b_op, runs % 2 ? Type::f16 : Type::bf16);
                        const float beta = runs % 3 == 0 ? 0.0f : 0.75f;
                        const HostInputs in = random_inputs(d, 100 + runs, 1.25f, beta);
                        const Written w = simulate(d, in, path);
                        const GemmVerdict v = verify_gemm(d, in, w.outputs(), 1, 2, {.path = path});
                        EXPECT_TRUE(v.pass) << label(d, path) << ": " << v.reason;
                        EXPECT_EQ(v.checked_rows, d.m);
                        EXPECT_LE(v.err_max_scaled, 1.0);
                        EXPECT_EQ(v.tolerance, 1.0);
                        // The output's rounding takes most of a bf16/f16 allowance (half of
                        // it on the decomposed path, which rounds twice): the gate is not
                        // loose by a factor.
                        if (out != Type::f32) {
                            EXPECT_GT(v.err_max_scaled, path == Path::fused ? 0.4 : 0.2) << label(d, path);
                        }
                        ++runs;
                    }
    for (Type fp8 : {Type::e4m3, Type::e5m2})
        for (Epilogue ep : kEpilogues)
            for (Type out : kOutputs) {
                const Desc d = odd_desc(ep, out, Op::n, Op::t, fp8, 33, 47, 300);
                const HostInputs in = random_inputs(d, 5, 1.0f, 1.0f);
                const GemmVerdict v = verify_gemm(d, in, simulate(d, in).outputs(), 1, 2);
                EXPECT_TRUE(v.pass) << label(d, Path::fused) << ": " << v.reason;
            }
}

TEST(GemmReference, FailsOneElementAFewUlpsBeyondItsAllowance) {
    for (Type out : kOutputs)
        for (Epilogue ep : {Epilogue::none, Epilogue::bias_gelu, Epilogue::bias_gelu_aux, Epilogue::dgelu_bgrad}) {
            const Desc d = odd_desc(ep, out, Op::n, Op::t);
            const HostInputs in = random_inputs(d, 3, 1.0f, 0.5f);
            Written w = simulate(d, in);
            const std::int64_t i = 11, j = 23;
            const ElementBound b = element_bound(d, in, i, j);
            // Just inside: the reference itself, rounded to D's type, passes.
            store_element(out, w.d.data(), i * d.ldd + j, static_cast<float>(b.d_ref));
            EXPECT_TRUE(verify_gemm(d, in, w.outputs(), 1, 2).pass) << label(d, Path::fused);
            push_beyond(out, w.d, i * d.ldd + j, b.d_ref, b.d_allowed, 2);
            GemmVerdict v = verify_gemm(d, in, w.outputs(), 1, 2);
            EXPECT_FALSE(v.pass) << label(d, Path::fused);
            EXPECT_EQ(v.worst, "D[11,23]");
            EXPECT_GT(v.err_max_scaled, 1.0);
            EXPECT_NE(v.reason.find("D[11,23]"), std::string::npos) << v.reason;
            if (ep == Epilogue::bias_gelu_aux) {
                w = simulate(d, in);
                push_beyond(out, w.aux, i * d.ldaux + j, b.aux_ref, b.aux_allowed, 2);
                v = verify_gemm(d, in, w.outputs(), 1, 2);
                EXPECT_FALSE(v.pass);
                EXPECT_EQ(v.worst, "aux[11,23]");
            }
        }
}

TEST(GemmReference, FailsPaddingWrittenElementsUnwrittenAndNaN) {
    const Desc d = odd_desc(Epilogue::bias_gelu_aux, Type::bf16, Op::t, Op::t);
    const HostInputs in = random_inputs(d, 4, 1.0f, 0.0f);
    const Written ok = simulate(d, in);
    ASSERT_TRUE(verify_gemm(d, in, ok.outputs(), 1, 2).pass);

    Written w = ok;
    store_element(Type::bf16, w.d.data(), 5 * d.ldd + d.n + 1, 0.0f);  // row 5's padding
    GemmVerdict v = verify_gemm(d, in, w.outputs(), 1, 2);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.padding_written, 1);
    EXPECT_NE(v.reason.find("padding"), std::string::npos) << v.reason;

    w = ok;
    store_element(Type::bf16, w.aux.data(), (d.m - 1) * d.ldaux + d.n, 1.0f);  // the last row's padding
    EXPECT_EQ(verify_gemm(d, in, w.outputs(), 1, 2).padding_written, 1);

    w = ok;
    std::memset(w.d.data() + 2 * (3 * d.ldd + 4), kPoisonByte, 2);
    v = verify_gemm(d, in, w.outputs(), 1, 2);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.unwritten, 1);
    EXPECT_NE(v.reason.find("never written"), std::string::npos) << v.reason;

    w = ok;
    const std::uint16_t nan = 0x7FFF;  // CUDA's canonical bf16 NaN
    std::memcpy(w.d.data() + 2 * (3 * d.ldd + 4), &nan, 2);
    v = verify_gemm(d, in, w.outputs(), 1, 2);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.nan_count, 1);
    EXPECT_EQ(v.unwritten, 0);
    EXPECT_NE(v.reason.find("NaN"), std::string::npos) << v.reason;
}

TEST(GemmReference, FailsAWrongBiasGradient) {
    for (Type out : kOutputs) {
        const Desc d = odd_desc(Epilogue::dgelu_bgrad, out, Op::n, Op::n, Type::bf16, 77, 45, 29);
        const HostInputs in = random_inputs(d, 9, 1.0f, 0.0f);
        const Written ok = simulate(d, in);
        ASSERT_TRUE(verify_gemm(d, in, ok.outputs(), 1, 2).pass) << name(out);
        // One row's contribution missing from one column.
        Written w = ok;
        w.bgrad[7] -= w.unrounded[static_cast<std::size_t>(40 * d.n + 7)];
        GemmVerdict v = verify_gemm(d, in, w.outputs(), 1, 2);
        EXPECT_FALSE(v.pass) << name(out);
        EXPECT_EQ(v.worst, "bgrad[7]");
        // Summed over the pre-activation instead of D.
        w = ok;
        for (std::int64_t j = 0; j < d.n; ++j) {
            w.bgrad[static_cast<std::size_t>(j)] = 0;
            for (std::int64_t i = 0; i < d.m; ++i)
                w.bgrad[static_cast<std::size_t>(j)] += load_element(out, in.aux.data(), i * d.ldaux + j);
        }
        EXPECT_FALSE(verify_gemm(d, in, w.outputs(), 1, 2).pass) << name(out);
        w = ok;
        w.bgrad[44] = std::nanf("");
        v = verify_gemm(d, in, w.outputs(), 1, 2);
        EXPECT_FALSE(v.pass);
        EXPECT_EQ(v.nan_count, 1);
    }
}

// A call that adds into bgrad (Args::bgrad_accumulate) is held to what bgrad held plus the column sums:
// the sums alone (bgrad zeroed first) fail, as do the earlier values added twice; every row checked and
// sampled rows alike.
TEST(GemmReference, HoldsAnAccumulatedBiasGradientToItsEarlierValuesPlusTheSums) {
    const Desc d = odd_desc(Epilogue::dgelu_bgrad, Type::bf16, Op::n, Op::n, Type::bf16, 300, 45, 29);
    const HostInputs in = random_inputs(d, 12, 1.0f, 0.0f);
    const Written fresh = simulate(d, in);
    std::vector<float> before(static_cast<std::size_t>(d.n));
    for (std::size_t j = 0; j < before.size(); ++j) before[j] = 64.0f - 2.75f * static_cast<float>(j);
    Written added = fresh;
    for (std::size_t j = 0; j < before.size(); ++j) added.bgrad[j] += before[j];
    Written twice = added;
    for (std::size_t j = 0; j < before.size(); ++j) twice.bgrad[j] += before[j];
    for (const VerifyOptions opt : {VerifyOptions{}, VerifyOptions{.full_limit = 45.0 * (29 + 64) * 30}}) {
        DeviceOutputs out = added.outputs();
        out.bgrad_before = before.data();
        EXPECT_TRUE(verify_gemm(d, in, out, 1, 2, opt).pass) << verify_gemm(d, in, out, 1, 2, opt).reason;
        out = fresh.outputs();
        out.bgrad_before = before.data();
        GemmVerdict v = verify_gemm(d, in, out, 1, 2, opt);
        EXPECT_FALSE(v.pass);
        EXPECT_EQ(v.worst.rfind("bgrad[", 0), 0u) << v.worst;
        out = twice.outputs();
        out.bgrad_before = before.data();
        EXPECT_FALSE(verify_gemm(d, in, out, 1, 2, opt).pass);
        // Without the earlier values named, the sums alone pass and the accumulated ones fail.
        EXPECT_TRUE(verify_gemm(d, in, fresh.outputs(), 1, 2, opt).pass);
        EXPECT_FALSE(verify_gemm(d, in, added.outputs(), 1, 2, opt).pass);
    }
}

TEST(GemmReference, FailsTheWrongGeluFormInEveryOutputType) {
    // K = 64 puts pre-activations around -3, where the two forms differ by 10 %.
    for (Type out : kOutputs)
        for (Epilogue ep : {Epilogue::bias_gelu, Epilogue::bias_gelu_erf, Epilogue::bias_gelu_aux,
                            Epilogue::dgelu_bgrad})
            for (Path path : {Path::fused, Path::decomposed}) {
                const Desc d = odd_desc(ep, out, Op::n, Op::t, Type::bf16, 37, 45, 64);
                const HostInputs in = random_inputs(d, 21, 1.0f, 0.0f);
                ASSERT_TRUE(verify_gemm(d, in, simulate(d, in, path).outputs(), 1, 2, {.path = path}).pass);
                const GemmVerdict v =
                    verify_gemm(d, in, simulate(d, in, path, {.swap_gelu = true}).outputs(), 1, 2, {.path = path});
                EXPECT_FALSE(v.pass) << label(d, path);
                EXPECT_GT(v.err_max_scaled, 2.0) << label(d, path);
            }
}

TEST(GemmReference, FailsAnOperandReadInTheWrongOrder) {
    for (Op op : kOps) {
        const Desc a_sq = odd_desc(Epilogue::bias, Type::bf16, op, Op::n, Type::bf16, 40, 45, 40);  // M = K
        const HostInputs ia = random_inputs(a_sq, 2, 1.0f, 0.0f);
        EXPECT_FALSE(verify_gemm(a_sq, ia, simulate(a_sq, ia, Path::fused, {.flip_a = true}).outputs(), 1, 2).pass);
        const Desc b_sq = odd_desc(Epilogue::none, Type::f32, Op::n, op, Type::bf16, 37, 40, 40);  // N = K
        const HostInputs ib = random_inputs(b_sq, 2, 1.0f, 0.0f);
        EXPECT_FALSE(verify_gemm(b_sq, ib, simulate(b_sq, ib, Path::fused, {.flip_b = true}).outputs(), 1, 2).pass);
    }
}

TEST(GemmReference, SampledRowsStillSeeEveryElementWritten) {
    const Desc d = odd_desc(Epilogue::dgelu_bgrad, Type::f32, Op::n, Op::t, Type::bf16, 300, 40, 24);
    const HostInputs in = random_inputs(d, 6, 1.0f, 0.0f);
    const Written ok = simulate(d, in);
    const VerifyOptions sample{.full_limit = 40.0 * (24 + 64) * 30};  // about 30 rows
    GemmVerdict v = verify_gemm(d, in, ok.outputs(), 1, 2, sample);
    EXPECT_TRUE(v.pass) << v.reason;
    EXPECT_GE(v.checked_rows, 20);
    EXPECT_LE(v.checked_rows, 32);
    EXPECT_EQ(verify_gemm(d, in, ok.outputs(), 2, 2, sample).checked_rows, v.checked_rows);

    Written w = ok;
    std::memset(w.d.data() + 4 * (150 * d.ldd + 3), kPoisonByte, 4);  // any row, checked or not
    EXPECT_EQ(verify_gemm(d, in, w.outputs(), 1, 2, sample).unwritten, 1);
    w = ok;
    store_element(Type::f32, w.d.data(), 151 * d.ldd + 3, std::nanf(""));
    EXPECT_EQ(verify_gemm(d, in, w.outputs(), 1, 2, sample).nan_count, 1);
    // bgrad is held to the column sums of every row of D: one row's
    // contribution missing fails even where that row is not checked.
    w = ok;
    w.bgrad[5] -= w.unrounded[static_cast<std::size_t>(151 * d.n + 5)];
    v = verify_gemm(d, in, w.outputs(), 1, 2, sample);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.worst, "bgrad[5]");
}

TEST(GemmReference, RefusesMissingOutputsAndShortInputs) {
    const Desc d = odd_desc(Epilogue::bias_gelu_aux, Type::bf16, Op::n, Op::n);
    HostInputs in = random_inputs(d, 1, 1.0f, 0.0f);
    Written w = simulate(d, in);
    DeviceOutputs out = w.outputs();
    out.aux = nullptr;
    EXPECT_THROW(verify_gemm(d, in, out, 1, 1), std::invalid_argument);
    in.bias.pop_back();
    EXPECT_THROW(verify_gemm(d, in, w.outputs(), 1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace rigel::gemm
