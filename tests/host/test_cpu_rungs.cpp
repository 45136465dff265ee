// Host tests of the CPU rungs: every rung in the registry, through the real
// verification gate (float64 reference on the same bytes, poisoned output), on
// shapes that are multiples of no tile or block; and each microkernel path of
// the packed rungs forced in turn, so that the run-time dispatch cannot hide a
// broken or skipped path.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "core/reference.hpp"
#include "cpu/cpu_rungs.hpp"
#include "ladder/rung.hpp"

using namespace rigel;

namespace {

struct Case {
    std::int64_t m, n, k;
};

// Odd sizes, and sizes that cross the packed rungs' blocks: M past MC (k04:
// 2016 / 1008 rows; k05: 4096), N past NC (1024 / 504 columns), K past KC
// (256), each with a remainder that is not a whole register tile.
const std::vector<Case> kShapes = {
    {1, 1, 1},     {17, 17, 17}, {127, 33, 65}, {1000, 7, 129}, {7, 1000, 300},
    {4111, 19, 3}, {5, 1100, 11}, {29, 45, 600}, {65, 130, 257},
};
// Thread counts for the parallel rungs: one, an odd count, and more threads
// than this machine may have cores (a 2-D grid of workers).
const std::vector<int> kThreads = {1, 3, 8};

struct Inputs {
    Operand a, b;
    Reference ref;
};

Inputs make_inputs(DType t, const Case& s) {
    constexpr std::uint64_t seed = 11;
    Inputs in{make_operand(t, Recipe::uniform, seed, 0, static_cast<std::size_t>(s.m * s.k)),
              make_operand(t, Recipe::uniform, seed, 1, static_cast<std::size_t>(s.k * s.n)), {}};
    in.ref = compute_reference(in.a.values, in.b.values, s.m, s.n, s.k, seed, 1);
    return in;
}

// Runs the rung into a poisoned buffer and returns the gate's verdict.
Verdict run_verified(const Rung& r, DType t, const Case& s, const Inputs& in, int threads,
                     std::vector<unsigned char>* out_copy = nullptr) {
    const std::size_t bytes = out_bytes(t, static_cast<std::size_t>(s.m * s.n));
    std::vector<unsigned char> out(bytes);
    for (std::size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(out.data() + i, &kPoisonWord, 4);
    GemmProblem p{t, s.m, s.n, s.k, in.a.bytes.data(), in.b.bytes.data(), out.data(), threads, nullptr};
    r.run(p);
    Verdict v = verify(t, out.data(), in.ref);
    if (out_copy) *out_copy = std::move(out);
    return v;
}

std::string label(const Rung& r, DType t, const Case& s, int threads) {
    return std::string(r.id) + " " + std::string(name(t)) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) +
           "x" + std::to_string(s.k) + " threads=" + std::to_string(threads);
}

const Rung& rung(std::string_view id) {
    for (const Rung& r : cpu_rungs())
        if (r.id == id) return r;
    throw std::runtime_error("no CPU rung " + std::string(id));
}

// Restores automatic dispatch however a test ends.
struct AutomaticPathAfter {
    ~AutomaticPathAfter() { cpu::force_simd_path(cpu::SimdPath::automatic); }
};

}  // namespace

TEST(CpuRungs, RegistryOrderAndVendorRows) {
    const auto rungs = cpu_rungs();
    ASSERT_GE(rungs.size(), 5u);
    EXPECT_EQ(rungs[0].id, "k01_cpu_naive");
    int vendor = 0;
    for (const Rung& r : rungs) {
        EXPECT_EQ(r.backend, Backend::cpu) << r.id;
        EXPECT_EQ(r.b_layout, BLayout::k_by_n) << r.id;
        EXPECT_TRUE(r.dtypes & dtype_bit(DType::f32)) << r.id;
        EXPECT_TRUE(r.dtypes & dtype_bit(DType::f64)) << r.id;
        EXPECT_FALSE(r.lesson.empty()) << r.id;
        vendor += r.vendor == VendorRank::primary;
    }
    // One single-threaded and one multi-threaded denominator for "% vendor".
    EXPECT_EQ(vendor, RIGEL_HAVE_OPENBLAS ? 2 : 0);
    // The core OpenBLAS picked at run time (recorded in the environment): a
    // name of its own with OpenBLAS, "none" only without it.
    EXPECT_FALSE(cpu::openblas_corename().empty());
    EXPECT_EQ(cpu::openblas_corename() == "none", !RIGEL_HAVE_OPENBLAS);
}

TEST(CpuRungs, EveryRungPassesTheGateOnOddShapes) {
    for (DType t : {DType::f32, DType::f64})
        for (const Case& s : kShapes) {
            const Inputs in = make_inputs(t, s);
            for (const Rung& r : cpu_rungs()) {
                if (!(r.dtypes & dtype_bit(t))) continue;
                for (int threads : r.parallel ? kThreads : std::vector<int>{1}) {
                    const Verdict v = run_verified(r, t, s, in, threads);
                    EXPECT_TRUE(v.pass) << label(r, t, s, threads) << ": " << v.reason;
                    EXPECT_EQ(v.unwritten, 0) << label(r, t, s, threads);
                }
            }
        }
}

// The gate used above does catch a single cell that a rung left unwritten.
TEST(CpuRungs, OneUnwrittenCellFails) {
    const Case s{127, 33, 65};
    const Inputs in = make_inputs(DType::f32, s);
    std::vector<unsigned char> out;
    ASSERT_TRUE(run_verified(rung("k04_cpu_packed_simd"), DType::f32, s, in, 1, &out).pass);
    std::memcpy(out.data() + 4 * (126 * 33 + 32), &kPoisonWord, 4);  // the last cell
    const Verdict v = verify(DType::f32, out.data(), in.ref);
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(v.unwritten, 1);
}

TEST(CpuRungs, AutomaticDispatchPicksTheWidestPath) {
    const AutomaticPathAfter restore;
    ASSERT_TRUE(cpu::force_simd_path(cpu::SimdPath::automatic));
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const cpu::SimdPath expected =
        avx512 ? cpu::SimdPath::avx512 : (avx2 ? cpu::SimdPath::avx2 : cpu::SimdPath::portable);
    EXPECT_EQ(cpu::active_simd_path(), expected) << "active: " << cpu::name(cpu::active_simd_path());
    EXPECT_EQ(cpu::simd_path_supported(cpu::SimdPath::avx512), avx512);
    EXPECT_EQ(cpu::simd_path_supported(cpu::SimdPath::avx2), avx2);
    EXPECT_TRUE(cpu::simd_path_supported(cpu::SimdPath::portable));
}

namespace rigel::cpu {
// Names the path in the test list instead of printing its byte.
void PrintTo(SimdPath s, std::ostream* os) { *os << name(s); }
}  // namespace rigel::cpu

class CpuSimdPath : public ::testing::TestWithParam<cpu::SimdPath> {};

// Each microkernel family, forced, computes every cell of k04 and k05 on odd
// shapes: a path that skipped tiles, mis-stored an edge or was never reached
// would fail here even on a machine whose automatic choice is another path.
TEST_P(CpuSimdPath, PackedRungsPassTheGate) {
    const cpu::SimdPath path = GetParam();
    if (!cpu::simd_path_supported(path)) GTEST_SKIP() << "this CPU lacks " << cpu::name(path);
    const AutomaticPathAfter restore;
    ASSERT_TRUE(cpu::force_simd_path(path));
    ASSERT_EQ(cpu::active_simd_path(), path);
    for (DType t : {DType::f32, DType::f64})
        for (const Case& s : kShapes) {
            const Inputs in = make_inputs(t, s);
            for (std::string_view id : {"k04_cpu_packed_simd", "k05_cpu_threads"})
                for (int threads : kThreads) {
                    const Verdict v = run_verified(rung(id), t, s, in, threads);
                    EXPECT_TRUE(v.pass) << cpu::name(path) << " " << label(rung(id), t, s, threads) << ": "
                                        << v.reason;
                }
        }
}

INSTANTIATE_TEST_SUITE_P(Forced, CpuSimdPath,
                         ::testing::Values(cpu::SimdPath::portable, cpu::SimdPath::avx2, cpu::SimdPath::avx512),
                         [](const auto& info) { return std::string(cpu::name(info.param)); });
