// The packed GEMM of k04 (GotoBLAS/BLIS structure): its microkernels, packers
// and cache blocking, defined in k04_packed_simd.cpp and shared with k05,
// which runs the same pieces on several threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace rigel::cpu::packed {

// C[0:mr, 0:nr] (row stride ldc) = (accumulate ? C : 0) + the product of a
// packed MR x kc panel of A and a packed kc x NR panel of B. mr <= MR and
// nr <= NR trim the edge tiles; the panels are always whole (zero-padded).
template <typename T>
using Microkernel = void (*)(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc, bool accumulate,
                             int mr, int nr);
// A[0:mc, 0:kc] (stride lda) into ceil(mc/MR) panels of kc x MR, rows past mc zero.
template <typename T>
using PackA = void (*)(const T* a, std::int64_t lda, std::int64_t mc, std::int64_t kc, T* out);
// B[0:kc, 0:nc] (stride ldb) into ceil(nc/NR) panels of kc x NR, columns past nc zero.
template <typename T>
using PackB = void (*)(const T* b, std::int64_t ldb, std::int64_t kc, std::int64_t nc, T* out);

// One microkernel family with its packers and its cache blocking: mc and nc
// are whole register tiles (mr, nr).
template <typename T>
struct Kernel {
    Microkernel<T> run;
    PackA<T> pack_a;
    PackB<T> pack_b;
    int mr, nr;
    std::int64_t kc, mc, nc;
};

// The kernel of the active SimdPath (see cpu_rungs.hpp).
template <typename T>
Kernel<T> active_kernel();
extern template Kernel<float> active_kernel<float>();
extern template Kernel<double> active_kernel<double>();

// The block size for a dimension of `extent`: at most `limit`, a multiple of
// `tile`, and as even as possible, so that 2048 rows in blocks of up to 2016
// become two blocks of 1036 and 1012, not 2016 and a sliver of 32 that would
// pay for packing all of B again.
std::int64_t even_block(std::int64_t extent, std::int64_t limit, std::int64_t tile);

// Working memory for packed panels: grown on demand and kept, so that repeated
// calls do not pay for fresh pages. Not thread-safe; 64-byte aligned.
class PackBuffers {
public:
    void* a(std::size_t bytes) { return grow(a_, a_bytes_, bytes); }
    void* b(std::size_t bytes) { return grow(b_, b_bytes_, bytes); }

private:
    struct Free {
        void operator()(void* p) const;
    };
    static void* grow(std::unique_ptr<void, Free>& buf, std::size_t& have, std::size_t need);
    std::unique_ptr<void, Free> a_, b_;
    std::size_t a_bytes_ = 0, b_bytes_ = 0;
};

}  // namespace rigel::cpu::packed
