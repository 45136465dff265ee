// Probe cvt_saturation: the device's own conversions between fp32 and the
// narrow formats (e4m3, e5m2, f16, bf16, e2m1, e8m0) and back, over crafted
// boundary values and a sweep of fp32 patterns, compared bit for bit with
// rigel's host codecs (src/probes/formats/format_checks.cpp holds the inputs, the
// expectations and the verdicts; this file only runs the instructions).
//
// Which instructions exist is decided where it is true: at compile time, per
// target, in the kernel (__CUDA_ARCH__ and the family-specific macro, the
// same test CUDA's cuda_fp8.h uses), reported back through a flag; a device
// whose code lacks an instruction reports not_available, never a guess from
// its name. The non-saturating fp32 -> fp8 form is asked of the device's
// driver: its PTX JIT assembles the .satfinite form and is asked to assemble
// the form without it.
#include <cuda_fp8.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "probes/formats/format_checks.hpp"

namespace rigel::cuda {
namespace {

constexpr int kFlagCount = kCvtOps + kDecodeOps + 1;  // + the __CUDA_ARCH__ that ran
constexpr int kThreads = 256;
constexpr int kMaxBlocks = 2048;
constexpr unsigned char kPoisonByte = 0xA5;  // 0xA5A5 in every 16-bit output slot before the run
constexpr std::size_t kJitLogBytes = 4096;

__device__ constexpr bool has_bf16_cvt() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return true;
#else
    return false;
#endif
}

// cvt with .e4m3x2/.e5m2x2: sm_89 and later.
__device__ constexpr bool has_fp8_cvt() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    return true;
#else
    return false;
#endif
}

// cvt with .e2m1x2/.ue8m0x2: family-specific targets of sm_100 and later
// (sm_100a, sm_100f, sm_103a, sm_110a, sm_120a, sm_120f, ...); not sm_90a.
__device__ constexpr bool has_fp4_e8m0_cvt() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
    return true;
#else
    return false;
#endif
}

__device__ constexpr bool cvt_compiled(int op) {
    switch (static_cast<CvtOp>(op)) {
        case CvtOp::e4m3_satfinite:
        case CvtOp::e5m2_satfinite: return has_fp8_cvt();
        case CvtOp::e4m3_nosat_lib:
        case CvtOp::e5m2_nosat_lib:
        case CvtOp::f16_rn: return true;
        case CvtOp::bf16_rn: return has_bf16_cvt();
        case CvtOp::e2m1_satfinite:
        case CvtOp::ue8m0_rz_satfinite:
        case CvtOp::ue8m0_rp_satfinite: return has_fp4_e8m0_cvt();
    }
    return false;
}

__device__ constexpr bool decode_compiled(int op) {
    switch (static_cast<DecodeOp>(op)) {
        case DecodeOp::e4m3_to_f16:
        case DecodeOp::e5m2_to_f16: return has_fp8_cvt();
        case DecodeOp::e2m1_to_f16:
        case DecodeOp::ue8m0_to_bf16: return has_fp4_e8m0_cvt();
    }
    return false;
}

__global__ void cvt_caps_kernel(int* flags) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (int op = 0; op < kCvtOps; ++op) flags[op] = cvt_compiled(op) ? 1 : 0;
    for (int op = 0; op < kDecodeOps; ++op) flags[kCvtOps + op] = decode_compiled(op) ? 1 : 0;
#ifdef __CUDA_ARCH__
    flags[kCvtOps + kDecodeOps] = __CUDA_ARCH__;
#endif
}

// Converts the pair (in[2p], in[2p + 1]) with one instruction where the
// instruction takes two inputs: the first input operand lands in the upper
// half of the result (PTX ISA, cvt), so it is given in[2p + 1].
__device__ void convert_pair(int op, float lo, float hi, std::uint16_t& r_lo, std::uint16_t& r_hi) {
    std::uint16_t r = 0;
    switch (static_cast<CvtOp>(op)) {
        case CvtOp::e4m3_satfinite:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
            asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
#endif
            r_lo = r & 0xFF;
            r_hi = r >> 8;
            return;
        case CvtOp::e5m2_satfinite:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
            asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
#endif
            r_lo = r & 0xFF;
            r_hi = r >> 8;
            return;
        case CvtOp::e4m3_nosat_lib:
            r_lo = __nv_cvt_float_to_fp8(lo, __NV_NOSAT, __NV_E4M3);
            r_hi = __nv_cvt_float_to_fp8(hi, __NV_NOSAT, __NV_E4M3);
            return;
        case CvtOp::e5m2_nosat_lib:
            r_lo = __nv_cvt_float_to_fp8(lo, __NV_NOSAT, __NV_E5M2);
            r_hi = __nv_cvt_float_to_fp8(hi, __NV_NOSAT, __NV_E5M2);
            return;
        case CvtOp::f16_rn:
            asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r_lo) : "f"(lo));
            asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r_hi) : "f"(hi));
            return;
        case CvtOp::bf16_rn:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r_lo) : "f"(lo));
            asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r_hi) : "f"(hi));
#endif
            return;
        case CvtOp::e2m1_satfinite:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
            asm("{\n\t.reg .b8 t;\n\tcvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n\tcvt.u16.u8 %0, t;\n\t}"
                : "=h"(r)
                : "f"(hi), "f"(lo));
#endif
            r_lo = r & 0xF;
            r_hi = (r >> 4) & 0xF;
            return;
        case CvtOp::ue8m0_rz_satfinite:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
            asm("cvt.rz.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
#endif
            r_lo = r & 0xFF;
            r_hi = r >> 8;
            return;
        case CvtOp::ue8m0_rp_satfinite:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
            asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
#endif
            r_lo = r & 0xFF;
            r_hi = r >> 8;
            return;
    }
}

// out[i] = the op's code for in[i]; `pairs` = n / 2.
__global__ void cvt_encode_kernel(const float* __restrict__ in, std::uint16_t* __restrict__ out, int pairs, int op) {
    if (!cvt_compiled(op)) return;  // the poison stays; the host never launches this
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pairs; p += gridDim.x * blockDim.x) {
        std::uint16_t r_lo = 0, r_hi = 0;
        convert_pair(op, in[2 * p], in[2 * p + 1], r_lo, r_hi);
        out[2 * p] = r_lo;
        out[2 * p + 1] = r_hi;
    }
}

// One block of 256 threads: thread c decodes operand[c]; the low half of the
// result goes to out[c], the high half to out[256 + c].
__global__ void cvt_decode_kernel(const std::uint16_t* __restrict__ operand, std::uint16_t* __restrict__ out, int op) {
    if (!decode_compiled(op)) return;
    const int c = threadIdx.x;
    [[maybe_unused]] const std::uint16_t a = operand[c];
    std::uint32_t d = 0;
    switch (static_cast<DecodeOp>(op)) {
        case DecodeOp::e4m3_to_f16:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
            asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(a));
#endif
            break;
        case DecodeOp::e5m2_to_f16:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
            asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(d) : "h"(a));
#endif
            break;
        case DecodeOp::e2m1_to_f16:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
            asm("{\n\t.reg .b8 t;\n\tcvt.u8.u16 t, %1;\n\tcvt.rn.f16x2.e2m1x2 %0, t;\n\t}" : "=r"(d) : "h"(a));
#endif
            break;
        case DecodeOp::ue8m0_to_bf16:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
            asm("cvt.rn.bf16x2.ue8m0x2 %0, %1;" : "=r"(d) : "h"(a));
#endif
            break;
    }
    out[c] = static_cast<std::uint16_t>(d & 0xFFFF);
    out[256 + c] = static_cast<std::uint16_t>(d >> 16);
}

// A cudaMalloc'd array, freed on every path out.
template <typename T>
class DeviceArray {
public:
    explicit DeviceArray(std::size_t n) : n_(n) { RIGEL_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T))); }
    ~DeviceArray() { cudaFree(p_); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    T* get() const { return p_; }
    std::size_t bytes() const { return n_ * sizeof(T); }
private:
    T* p_ = nullptr;
    std::size_t n_;
};

// The first line of a JIT log that says "error", trimmed of its location.
std::string first_error_line(const char* log) {
    std::string all(log);
    std::size_t start = 0;
    while (start < all.size()) {
        const std::size_t end = std::min(all.find('\n', start), all.size());
        const std::string line = all.substr(start, end - start);
        const std::size_t e = line.find("error");
        if (e != std::string::npos) {
            const std::size_t colon = line.find(':', e);
            std::string msg = colon == std::string::npos ? line : line.substr(colon + 1);
            while (!msg.empty() && msg.front() == ' ') msg.erase(msg.begin());
            return msg;
        }
        start = end + 1;
    }
    return all.empty() ? "no log" : all.substr(0, 200);
}

// Errors that mean "the JIT would not take this PTX" rather than a fault.
bool is_jit_rejection(cudaError_t e) {
    return e == cudaErrorInvalidPtx || e == cudaErrorUnsupportedPtxVersion || e == cudaErrorInvalidKernelImage ||
           e == cudaErrorNoKernelImageForDevice || e == cudaErrorJitCompilerNotFound;
}

// Asks the driver's PTX JIT, for the current device, to assemble `ptx`
// (through the runtime's library API, so that rigel needs no libcuda at link
// time). With lazy module loading the JIT runs only when the kernel is first
// needed, so its attributes are asked for too. Returns whether it assembled;
// `log` gets the reason when not. Other failures are real errors and throw.
bool jit_assembles(const std::string& ptx, std::string& log) {
    std::array<char, kJitLogBytes> err{};
    std::array<cudaJitOption, 2> opts{cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes};
    std::array<void*, 2> vals{err.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(err.size()))};
    cudaLibrary_t lib = nullptr;
    cudaError_t r = cudaLibraryLoadData(&lib, ptx.c_str(), opts.data(), vals.data(),
                                        static_cast<unsigned>(opts.size()), nullptr, nullptr, 0);
    if (r == cudaSuccess) {
        cudaKernel_t kernel = nullptr;
        r = cudaLibraryGetKernel(&kernel, lib, "rigel_cvt_jit_check");
        if (r == cudaSuccess) {
            cudaFuncAttributes attr{};
            r = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel));
        }
        const cudaError_t unload = cudaLibraryUnload(lib);
        if (r == cudaSuccess) RIGEL_CUDA_CHECK(unload);
    }
    if (r == cudaSuccess) return true;
    (void)cudaGetLastError();
    if (!is_jit_rejection(r)) RIGEL_CUDA_CHECK(r);
    log = std::string(cudaGetErrorName(r)) + ": " + first_error_line(err.data());
    return false;
}

JitCheck jit_check(bool e5m2) {
    JitCheck j;
    j.attempted = true;
    j.control_accepted = jit_assembles(jit_cvt_ptx(e5m2, true), j.control_log);
    j.accepted = jit_assembles(jit_cvt_ptx(e5m2, false), j.log);
    return j;
}

}  // namespace

std::vector<Finding> run_cvt_saturation(const ProbeContext& ctx) {
    const FormatInputs in = make_format_inputs(ctx.seed, ctx.quick);
    FormatDeviceResults dev;
    dev.compute_capability = ctx.compute_capability;

    RIGEL_CUDA_CHECK(cudaFree(nullptr));  // the runtime's context: the JIT checks load into it
    dev.jit_nosat = {jit_check(false), jit_check(true)};

    cudaFuncAttributes attr{};
    const cudaError_t image = cudaFuncGetAttributes(&attr, cvt_caps_kernel);
    if (image == cudaErrorInvalidDeviceFunction || image == cudaErrorNoKernelImageForDevice) {
        (void)cudaGetLastError();
        dev.unavailable = "rigel's binary holds no code for this device (compute capability " +
                          std::to_string(ctx.compute_capability) +
                          "); rebuild with it in CMAKE_CUDA_ARCHITECTURES";
        return analyze_formats(in, dev);
    }
    RIGEL_CUDA_CHECK(image);

    const std::size_t n = in.values.size();
    const int pairs = static_cast<int>(n / 2);
    DeviceArray<int> flags(kFlagCount);
    DeviceArray<float> d_in(n);
    DeviceArray<std::uint16_t> d_out(static_cast<std::size_t>(kCvtOps) * n);
    DeviceArray<std::uint16_t> d_operands(static_cast<std::size_t>(kDecodeOps) * 256);
    DeviceArray<std::uint16_t> d_decoded(static_cast<std::size_t>(kDecodeOps) * kDecodeSlots);

    RIGEL_CUDA_CHECK(cudaMemset(flags.get(), 0, flags.bytes()));
    cvt_caps_kernel<<<1, 1>>>(flags.get());
    RIGEL_CUDA_CHECK_LAUNCH();
    std::array<int, kFlagCount> f{};
    RIGEL_CUDA_CHECK(cudaMemcpy(f.data(), flags.get(), flags.bytes(), cudaMemcpyDeviceToHost));
    for (int op = 0; op < kCvtOps; ++op) dev.cvt_compiled[static_cast<std::size_t>(op)] = f[static_cast<std::size_t>(op)] != 0;
    for (int op = 0; op < kDecodeOps; ++op)
        dev.decode_compiled[static_cast<std::size_t>(op)] = f[static_cast<std::size_t>(kCvtOps + op)] != 0;
    dev.compiled_arch = f[kCvtOps + kDecodeOps];

    std::vector<std::uint16_t> operands(static_cast<std::size_t>(kDecodeOps) * 256);
    for (int op = 0; op < kDecodeOps; ++op)
        for (int c = 0; c < 256; ++c)
            operands[static_cast<std::size_t>(op * 256 + c)] = decode_operand(static_cast<DecodeOp>(op), c);

    RIGEL_CUDA_CHECK(cudaMemcpy(d_in.get(), in.values.data(), d_in.bytes(), cudaMemcpyHostToDevice));
    RIGEL_CUDA_CHECK(cudaMemcpy(d_operands.get(), operands.data(), d_operands.bytes(), cudaMemcpyHostToDevice));
    RIGEL_CUDA_CHECK(cudaMemset(d_out.get(), kPoisonByte, d_out.bytes()));
    RIGEL_CUDA_CHECK(cudaMemset(d_decoded.get(), kPoisonByte, d_decoded.bytes()));

    const int blocks = std::max(1, std::min(kMaxBlocks, (pairs + kThreads - 1) / kThreads));
    for (int op = 0; op < kCvtOps; ++op) {
        if (!dev.cvt_compiled[static_cast<std::size_t>(op)]) continue;
        cvt_encode_kernel<<<blocks, kThreads>>>(d_in.get(), d_out.get() + static_cast<std::size_t>(op) * n, pairs, op);
        RIGEL_CUDA_CHECK_LAUNCH();
    }
    for (int op = 0; op < kDecodeOps; ++op) {
        if (!dev.decode_compiled[static_cast<std::size_t>(op)]) continue;
        cvt_decode_kernel<<<1, 256>>>(d_operands.get() + static_cast<std::size_t>(op) * 256,
                                      d_decoded.get() + static_cast<std::size_t>(op) * kDecodeSlots, op);
        RIGEL_CUDA_CHECK_LAUNCH();
    }
    RIGEL_CUDA_CHECK(cudaDeviceSynchronize());

    dev.cvt_out.resize(static_cast<std::size_t>(kCvtOps) * n);
    dev.decode_out.resize(static_cast<std::size_t>(kDecodeOps) * kDecodeSlots);
    RIGEL_CUDA_CHECK(cudaMemcpy(dev.cvt_out.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost));
    RIGEL_CUDA_CHECK(cudaMemcpy(dev.decode_out.data(), d_decoded.get(), d_decoded.bytes(), cudaMemcpyDeviceToHost));
    if (ctx.progress)
        ctx.progress("cvt_saturation: " + std::to_string(n) + " inputs through " + std::to_string(kCvtOps) +
                     " conversions on code for __CUDA_ARCH__ " + std::to_string(dev.compiled_arch));
    return analyze_formats(in, dev);
}

}  // namespace rigel::cuda
