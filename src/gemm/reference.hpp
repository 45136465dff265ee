// The library's verification gate: the float64 reference of every GEMM
// include/rigel/gemm.hpp computes, from exactly the bytes the device consumed,
// epilogue and output rounding included, and the comparison that decides
// whether what the device wrote is right.
//
// Every element of D (and aux, and bgrad) gets its own allowance, a bound on
// what an honest kernel can be off by (reference.cpp derives it): fp32
// accumulation in proportion to |alpha| sum_k |a b| (the ladder's
// element_tolerance, a likely bound, not the worst case), fp32 evaluation of alpha, beta, bias and the activation,
// carried through the activation's local slope, and the output type's rounding
// relative to the value itself. An error beyond its allowance fails the run.
// Also failed: an element of M x N still holding the poison (never written),
// a NaN where the reference is finite, and any byte of the padding between
// rows (ld > N) that is no longer the poison.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rigel/gemm.hpp"

namespace rigel::gemm {

// The poison: every byte of D's and aux's buffers (padding included) holds it
// before the run, and every padding byte of the inputs. 0xFF bytes are a NaN in
// every type rigel stores (f32 0xFFFFFFFF, bf16/f16 0xFFFF, e4m3/e5m2 0xFF) and
// one no kernel writes (CUDA's NaNs are positive), so a padding element a
// kernel reads poisons its output, and an element it never writes is told
// apart from a NaN it computed.
constexpr std::uint8_t kPoisonByte = 0xFF;

// Element `idx` of a buffer of type t, decoded exactly with rigel's codecs
// (core/formats.hpp); and the store of a float into one, rounded to nearest
// even (fp8 saturating).
float load_element(Type t, const void* buf, std::int64_t idx);
void store_element(Type t, void* buf, std::int64_t idx, float value);

// Bytes of each buffer of a GEMM, as the device holds them: every stored
// matrix has all its rows at its leading dimension (padding of the last row
// included), so A is (M or K) x lda, D is M x ldd, and so on. c, bias, aux and
// bgrad are 0 where the call takes none (c: beta == 0).
struct BufferSizes {
    std::size_t a = 0, b = 0, c = 0, d = 0, bias = 0, aux = 0, bgrad = 0;
};
BufferSizes buffer_sizes(const Desc& d, float beta);

// Host copies of the bytes the device consumes, as stored (types and leading
// dimensions from the Desc, sizes from buffer_sizes). aux is the input aux of
// dgelu_bgrad (empty otherwise: bias_gelu_aux's aux is an output).
struct HostInputs {
    std::vector<std::uint8_t> a, b, c, bias, aux;
    float alpha = 1.0f, beta = 0.0f;
};

// Fresh inputs for `d` (leading dimensions of 0 mean packed), the same for the
// same seed: A, B, C and bias uniform in [-1, 1], the input aux uniform in
// [-4, 4] (GELU' over its whole curved range), each rounded to its type to
// nearest even; every padding byte is kPoisonByte.
HostInputs random_inputs(const Desc& d, std::uint64_t seed, float alpha, float beta);

// What the device wrote, copied back to the host, as stored: d is M x ldd
// elements of D's type (the whole buffer, padding included); aux is M x ldaux
// when the epilogue writes it (else ignored); bgrad is N floats when the
// epilogue writes it (else ignored).
struct DeviceOutputs {
    const void* d = nullptr;
    const void* aux = nullptr;
    const float* bgrad = nullptr;
    // A call that added its column sums into bgrad (Args::bgrad_accumulate): what bgrad held before it,
    // N floats; null: bgrad started at zero.
    const float* bgrad_before = nullptr;
};

// Which of the plan's paths wrote the outputs: run_decomposed rounds the
// product to D's type before the epilogue reads it back, one more rounding
// the allowance takes in.
enum class Path : std::uint8_t { fused, decomposed };

struct VerifyOptions {
    Path path = Path::fused;
    // Rows of D checked against the reference: all when M N (K + 64) <=
    // full_limit (64: an element's allowance costs about that many
    // multiply-adds), else the first, the last and one random row in every
    // block of consecutive rows, about full_limit / (N (K + 64)) rows in all.
    // 2^31 checks every row of a 1024^3 problem and 501 of 2000^3's.
    double full_limit = 0x1p31;
};

struct GemmVerdict {
    bool pass = false;
    std::string reason;             // empty when pass, else the first failure in one sentence
    double err_max_scaled = 0;      // max over the checked elements of |out - ref| / allowance
    double tolerance = 1;           // what err_max_scaled is held to: each element within its allowance
    double acc_tolerance = 0;       // the accumulation part of an allowance, per unit of |alpha| sum_k |a b|
    std::string worst;              // where err_max_scaled is: "D[i,j]", "aux[i,j]" or "bgrad[j]"
    std::int64_t checked_rows = 0;  // rows of D (and aux) compared with the reference
    std::int64_t nan_count = 0;     // NaN (not the poison) in D and aux inside M x N, and in bgrad
    std::int64_t unwritten = 0;     // elements of D and aux inside M x N still holding the poison
    std::int64_t padding_written = 0;  // elements in the padding of D and aux no longer holding the poison
};

// Checks `out` against float64 computed from `in`: pre = alpha sum_k a b +
// beta c (+ bias), the epilogue in double, each element within its allowance.
// `seed` picks the sampled rows; `threads` computes the reference.
GemmVerdict verify_gemm(const Desc& d, const HostInputs& in, const DeviceOutputs& out, std::uint64_t seed,
                        int threads, const VerifyOptions& opt = {});

// One element's reference and allowance (tests, diagnostics): D's value and
// aux's (the pre-activation, bias_gelu_aux), and D's value before the output
// rounding, what bgrad sums, with its allowance.
struct ElementBound {
    double d_ref = 0, d_allowed = 0;
    double aux_ref = 0, aux_allowed = 0;
    double unrounded_allowed = 0;  // d_ref's allowance before D's rounding
};
ElementBound element_bound(const Desc& d, const HostInputs& in, std::int64_t row, std::int64_t col,
                           Path path = Path::fused);

}  // namespace rigel::gemm
