// The vendor rungs' registry table: cuBLAS and cuBLASLt, the baseline each own
// rung of the same type is measured against. A "primary" row is the library's
// default path for its type (the "% of vendor" denominator); a "variant" row is
// another configuration of it, reported beside but never the denominator.
#include <array>

#include "cuda/registry_parts.hpp"
#include "cuda/vendor/vendor.cuh"

namespace rigel::cuda {
namespace {

using namespace vendor;

const std::array kVendorRungs{
    Rung{"vendor_cublas_f32", Backend::cuda, "vendor", dtype_mask(DType::f32), kSimtLayout, 0, false,
         VendorRank::primary, 0, "cuBLAS in true fp32 (CUBLAS_COMPUTE_32F, TF32 off): the fp32 bar", cublas_f32,
         nullptr},
    Rung{"vendor_cublas_tf32", Backend::cuda, "vendor", dtype_mask(DType::tf32), kTensorLayout, 80, false,
         VendorRank::primary, 0, "cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32: fp32 words on the tf32 tensor cores",
         cublas_tf32, nullptr},
    Rung{"vendor_cublas_f16", Backend::cuda, "vendor", dtype_mask(DType::f16), kTensorLayout, 70, false,
         VendorRank::primary, 0, "cuBLAS fp16 inputs, fp32 accumulate and output: the 16-bit bar", cublas_f16,
         nullptr},
    Rung{"vendor_cublas_bf16", Backend::cuda, "vendor", dtype_mask(DType::bf16), kTensorLayout, 80, false,
         VendorRank::primary, 0, "cuBLAS bf16 inputs, fp32 accumulate and output", cublas_bf16, nullptr},
    Rung{"vendor_cublaslt_e4m3", Backend::cuda, "vendor", dtype_mask(DType::e4m3), kTensorLayout, 89, false,
         VendorRank::primary, 0, "cuBLASLt fp8 e4m3, default accumulation (periodic promotion to fp32), fp32 out",
         cublaslt_e4m3, cublaslt_e4m3_check},
    Rung{"vendor_cublaslt_e4m3_fastacc", Backend::cuda, "vendor", dtype_mask(DType::e4m3), kTensorLayout, 89, false,
         VendorRank::variant, 0, "cuBLASLt fp8 e4m3 with FAST_ACCUM: no promotion, faster, less accurate",
         cublaslt_e4m3_fastacc, cublaslt_e4m3_fastacc_check},
    Rung{"vendor_cublaslt_e5m2", Backend::cuda, "vendor", dtype_mask(DType::e5m2), kTensorLayout, 89, false,
         VendorRank::primary, 0, "cuBLASLt fp8 e5m2 x e5m2, if this cuBLASLt has it (refused with its answer if not)",
         cublaslt_e5m2, cublaslt_e5m2_check},
    Rung{"vendor_cublas_f64", Backend::cuda, "vendor", dtype_mask(DType::f64), kSimtLayout, 0, false,
         VendorRank::primary, 0, "cuBLAS DGEMM: the fp64 bar (fp64 tensor cores on sm_80 and later)", cublas_f64,
         nullptr},
    Rung{"vendor_cublas_i8", Backend::cuda, "vendor", dtype_mask(DType::i8), kTensorLayout, 75, false,
         VendorRank::primary, 0, "cuBLAS int8 inputs, int32 accumulate and output (exact)", cublas_i8,
         cublas_i8_check},
};

}  // namespace

std::span<const Rung> vendor_rungs() { return kVendorRungs; }

}  // namespace rigel::cuda
