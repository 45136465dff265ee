// mma.sync from inline PTX, one wrapper per instruction the probes use. Each
// computes d = A * B + d on its fragments (registers as the PTX ISA lists
// them, low element in the low bits). An instruction the compiled target
// lacks (e4m3 and e5m2 below sm_89) compiles to nothing; mma_compiled() says so, and
// the kernels report it to the host instead of computing.
#pragma once
#include <cstdint>

#include "probes/layouts/fragment_maps.hpp"

namespace rigel::probes {

__host__ __device__ constexpr bool mma_compiled(MmaKind kind) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    (void)kind;
    return true;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return kind != MmaKind::e4m3_m16n8k32 && kind != MmaKind::e5m2_m16n8k32 && kind != MmaKind::e4m3_e5m2_m16n8k32;
#else
    (void)kind;
    return false;
#endif
}

template <MmaKind K>
struct MmaAcc {
    using type = float;
};
template <>
struct MmaAcc<MmaKind::s8_m16n8k32> {
    using type = std::int32_t;
};
template <>
struct MmaAcc<MmaKind::f64_m8n8k4> {
    using type = double;
};

template <MmaKind K>
using mma_acc_t = typename MmaAcc<K>::type;

template <MmaKind K>
__device__ void mma(mma_acc_t<K> (&d)[shape_of(K).d_elems], const std::uint32_t (&a)[a_words(K)],
                    const std::uint32_t (&b)[b_words(K)]);

// The compiled target (x10), 0 in the host pass.
#if defined(__CUDA_ARCH__)
inline constexpr int kMmaArch = __CUDA_ARCH__;
#else
inline constexpr int kMmaArch = 0;
#endif

// The fp32-accumulating m16n8 instructions: 4 A registers, 2 B registers, 4
// accumulators; compiled to nothing below MIN_ARCH (a discarded if constexpr
// emits no PTX).
#define RIGEL_MMA_F32(KIND, MIN_ARCH, PTX)                                                                \
    template <>                                                                                          \
    __device__ inline void mma<MmaKind::KIND>(float(&d)[4], const std::uint32_t(&a)[4],                  \
                                              const std::uint32_t(&b)[2]) {                              \
        if constexpr (kMmaArch >= MIN_ARCH) {                                                            \
            asm(PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                           \
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                         \
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                     \
        } else {                                                                                         \
            (void)d, (void)a, (void)b;                                                                   \
        }                                                                                                \
    }

RIGEL_MMA_F32(f16_m16n8k16, 800, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
RIGEL_MMA_F32(bf16_m16n8k16, 800, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
RIGEL_MMA_F32(tf32_m16n8k8, 800, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
RIGEL_MMA_F32(e4m3_m16n8k32, 890, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
RIGEL_MMA_F32(e5m2_m16n8k32, 890, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32")
RIGEL_MMA_F32(e4m3_e5m2_m16n8k32, 890, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32")

#undef RIGEL_MMA_F32

template <>
__device__ inline void mma<MmaKind::s8_m16n8k32>(std::int32_t (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)d, (void)a, (void)b;
#endif
}

// f64: A and B are one double each, passed as two words (low word first).
template <>
__device__ inline void mma<MmaKind::f64_m8n8k4>(double (&d)[2], const std::uint32_t (&a)[2],
                                                const std::uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const double av = __hiloint2double(static_cast<int>(a[1]), static_cast<int>(a[0]));
    const double bv = __hiloint2double(static_cast<int>(b[1]), static_cast<int>(b[0]));
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
        : "+d"(d[0]), "+d"(d[1])
        : "d"(av), "d"(bv));
#else
    (void)d, (void)a, (void)b;
#endif
}

// Accumulator registers as raw 32-bit words (the layout probe moves values
// in and out without interpreting them).
__device__ inline void acc_from_words(float& v, const std::uint32_t* w) { v = __uint_as_float(w[0]); }
__device__ inline void acc_from_words(std::int32_t& v, const std::uint32_t* w) { v = static_cast<std::int32_t>(w[0]); }
__device__ inline void acc_from_words(double& v, const std::uint32_t* w) {
    v = __hiloint2double(static_cast<int>(w[1]), static_cast<int>(w[0]));
}
__device__ inline void acc_to_words(float v, std::uint32_t* w) { w[0] = __float_as_uint(v); }
__device__ inline void acc_to_words(std::int32_t v, std::uint32_t* w) { w[0] = static_cast<std::uint32_t>(v); }
__device__ inline void acc_to_words(double v, std::uint32_t* w) {
    w[0] = static_cast<std::uint32_t>(__double2loint(v));
    w[1] = static_cast<std::uint32_t>(__double2hiint(v));
}

}  // namespace rigel::probes
