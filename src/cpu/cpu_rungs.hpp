// The CPU rungs' entry points; the registry table is in cpu_rungs.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ladder/rung.hpp"

namespace rigel::cpu {

void k01_naive(const GemmProblem& p);
void k02_ikj(const GemmProblem& p);
void k03_blocked(const GemmProblem& p);
void k04_packed_simd(const GemmProblem& p);
void k05_threads(const GemmProblem& p);

#if RIGEL_HAVE_OPENBLAS
void vendor_openblas(const GemmProblem& p);
void vendor_openblas_mt(const GemmProblem& p);
#endif
// The kernel OpenBLAS chose for this CPU ("SkylakeX", "Haswell", ...; a
// DYNAMIC_ARCH build falls back to "Prescott" on a CPU model it does not know),
// or "none" without OpenBLAS. Worth recording next to every vendor number.
std::string openblas_corename();

// The microkernel family that k04 and k05 run. `automatic` takes the widest
// one the CPU supports (checked once with __builtin_cpu_supports).
enum class SimdPath : std::uint8_t { automatic, portable, avx2, avx512 };
std::string_view name(SimdPath s);
// Whether this CPU (and OS) can run the path; `automatic` and `portable` always can.
bool simd_path_supported(SimdPath s);
// Forces a path for tests and experiments (not thread-safe against running
// rungs). Returns false and changes nothing when the CPU lacks it.
bool force_simd_path(SimdPath s);
// The path k04 and k05 will run next (never `automatic`).
SimdPath active_simd_path();

}  // namespace rigel::cpu
