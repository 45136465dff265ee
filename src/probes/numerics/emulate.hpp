// `rigel emulate`: a whole GEMM computed on the CPU exactly as a named GPU path
// computes it, from the tensor-core model the numerics probes measured
// (numerics_model.hpp, BlockModel) and the kernel's order of work.
//
// A path is one instruction with its measured model (products per alignment
// step, bits kept, alignment cut, output rounding, where C joins) and the
// order in which a kernel chains it: every output element is a chain of
// instructions over K in increasing k, each instruction's fp32 result the C of
// the next; a split-K kernel chains each split's share of K from zero and then
// adds the splits' fp32 partials in split order, rounding each add to nearest
// (src/cuda/gemm/epilogue_kernel.cu). The models are the ones the H200 machine
// measured bit-identical on random single and chained instructions
// (FINDINGS.md, the accumulator section), the fp8 wgmma path's (e4m3, the
// fp8 type the probes model) included since the probe tried a result of 13
// fraction bits, MMA-Sim's (FINDINGS.md "rigel's models beside MMA-Sim's");
// Path::measured marks a model the device has not reproduced yet. Where a model's aligned sums fit a double (the
// 16-bit ones), a chain is added in doubles instead of exact sums: the same
// bits (tests/host/test_emulate.cpp), about 9 ns per multiply-add.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "probes/numerics/numerics_model.hpp"

namespace rigel::emulate {

struct Path {
    std::string_view name;         // e.g. "wgmma_bf16"
    std::string_view instruction;  // the PTX instruction whose model it is
    DType type;                    // A's and B's
    int k_inst;                    // products per instruction along K
    probes::BlockModel model;
    std::string_view runs_it;      // which of rigel's kernels compute with it
    // true: the model the H200 machine measured bit-identical on random single
    // and chained instructions; false: a hypothesis not yet measured so (the
    // CLI says so, and a GEMM's comparison is then the test of it).
    bool measured = true;
    std::string_view model_source = "rigel's accumulation probe (FINDINGS.md)";
};

// The registry (a table, one row per path).
std::span<const Path> paths();
const Path* path_named(std::string_view name);
std::string path_names();

// How a kernel splits K: `splits` contiguous ranges of whole k-tiles of
// `k_tile` elements, and how it adds the ranges' fp32 partials.
//   Share::floor: each range k_tiles / splits tiles long, the last also taking
//     the remainder (src/cuda/hopper/warp_specialized.cuh, k_tile_range);
//   Share::ceil: each ceil(k_tiles / splits) long, the last what is left.
//   Reduction::serial: the partials added in split order, from zero
//     (src/cuda/gemm/epilogue_kernel.cu); Reduction::pairwise: as a balanced
//     tree, each half summed first. Every add fp32, rounded to nearest even.
// rigel's library splits floor and serial; the other forms are hypotheses
// about a vendor library (infer()).
enum class Share : std::uint8_t { floor, ceil };
enum class Reduction : std::uint8_t { serial, pairwise };
struct KSplit {
    int splits = 1;
    int k_tile = 64;
    Share share = Share::floor;
    Reduction reduction = Reduction::serial;
};
std::string describe(const KSplit& s);

// D = A B^T as the path computes it, D[i][j] over row i of A (M x K,
// row-major) and row j of B (N x K, row-major), the operands' exact values
// (already quantized to the path's type). Returns D's fp32 values, row-major.
// `threads` 0: all the machine's.
std::vector<float> gemm(const Path& p, std::span<const double> a, std::span<const double> b, int m, int n, int k,
                        KSplit split = {}, int threads = 0);

// One element: the chain of row `a` with row `b` (K long), split as asked.
float element(const Path& p, std::span<const double> a, std::span<const double> b, KSplit split = {});

// Looking inside a library from its outputs alone: which path and split of K
// reproduce its fp32 D. Every hypothesis (each path of `candidates`; K unsplit,
// or split 2..max_splits ways in k-tiles of 16..256 elements, either share and
// either reduction; hypotheses that cut K into the same ranges and add them
// alike counted once) is scored on `samples` elements drawn with `seed`, the
// best first (most elements bit-identical, then the fewest splits).
struct Fit {
    const Path* path = nullptr;
    KSplit split;
    int sampled = 0, identical = 0;
};
std::vector<Fit> infer(std::span<const Path* const> candidates, std::span<const double> a, std::span<const double> b,
                       int m, int n, int k, std::span<const float> d, int samples = 128, std::uint64_t seed = 1,
                       int max_splits = 32, int threads = 0);

}  // namespace rigel::emulate
