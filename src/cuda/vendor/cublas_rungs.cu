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
    Rung{.id = "vendor_cublas_f32", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::f32),
         .b_layout = kSimtLayout, .vendor = VendorRank::primary,
         .lesson = "cuBLAS in true fp32 (CUBLAS_COMPUTE_32F, TF32 off): the fp32 bar",
         .run = cublas_f32},
    Rung{.id = "vendor_cublas_tf32", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::tf32),
         .b_layout = kTensorLayout, .min_sm = 80, .vendor = VendorRank::primary,
         .lesson = "cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32: fp32 words on the tf32 tensor cores",
         .run = cublas_tf32},
    Rung{.id = "vendor_cublas_f16", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::f16),
         .b_layout = kTensorLayout, .min_sm = 70, .vendor = VendorRank::primary,
         .lesson = "cuBLAS fp16 inputs, fp32 accumulate and output: the 16-bit bar",
         .run = cublas_f16},
    Rung{.id = "vendor_cublas_bf16", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::bf16),
         .b_layout = kTensorLayout, .min_sm = 80, .vendor = VendorRank::primary,
         .lesson = "cuBLAS bf16 inputs, fp32 accumulate and output",
         .run = cublas_bf16},
    Rung{.id = "vendor_cublaslt_e4m3", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::e4m3),
         .b_layout = kTensorLayout, .min_sm = 89, .vendor = VendorRank::primary,
         .lesson = "cuBLASLt fp8 e4m3, default accumulation (periodic promotion to fp32), fp32 out",
         .run = cublaslt_e4m3, .check = cublaslt_e4m3_check},
    Rung{.id = "vendor_cublaslt_e4m3_fastacc", .backend = Backend::cuda, .group = "vendor",
         .dtypes = dtype_mask(DType::e4m3),
         .b_layout = kTensorLayout, .min_sm = 89, .vendor = VendorRank::variant,
         .lesson = "cuBLASLt fp8 e4m3 with FAST_ACCUM: no promotion, faster, less accurate",
         .run = cublaslt_e4m3_fastacc, .check = cublaslt_e4m3_fastacc_check},
    Rung{.id = "vendor_cublaslt_e5m2", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::e5m2),
         .b_layout = kTensorLayout, .min_sm = 89, .vendor = VendorRank::primary,
         .lesson = "cuBLASLt fp8 e5m2 x e5m2, if this cuBLASLt has it (refused with its answer if not)",
         .run = cublaslt_e5m2, .check = cublaslt_e5m2_check},
    Rung{.id = "vendor_cublas_f64", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::f64),
         .b_layout = kSimtLayout, .vendor = VendorRank::primary,
         .lesson = "cuBLAS DGEMM: the fp64 bar (fp64 tensor cores on sm_80 and later)",
         .run = cublas_f64},
    Rung{.id = "vendor_cublas_i8", .backend = Backend::cuda, .group = "vendor", .dtypes = dtype_mask(DType::i8),
         .b_layout = kTensorLayout, .min_sm = 75, .vendor = VendorRank::primary,
         .lesson = "cuBLAS int8 inputs, int32 accumulate and output (exact)",
         .run = cublas_i8, .check = cublas_i8_check},
};

}  // namespace

std::span<const Rung> vendor_rungs() { return kVendorRungs; }

}  // namespace rigel::cuda
