// Eight bf16 values moved as one 16-byte access and worked on in fp32: the
// form every bandwidth-bound pass of rigel (the training step's, attention's
// bookkeeping) reads and writes its bf16 rows in.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace rigel::cuda {

// Each bf16 is the top half of its float, so a word's low element is the word
// shifted up and its high one the word masked. Taken from the words by value:
// read through a bf16 pointer into the uint4, the 16-byte load it came from
// was compiled into four 4-byte loads wherever the packed value was used at
// once (load8), a quarter of each sector used by each (the cross-entropy's
// logits, GELU's backward, the LayerNorms' weights; cuobjdump of
// train_kernels.cu).
__device__ __forceinline__ void unpack8(float (&f)[8], const uint4& raw) {
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(words[i] << 16);
        f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    }
}

__device__ __forceinline__ void load8(float (&f)[8], const __nv_bfloat16* p) {
    unpack8(f, *reinterpret_cast<const uint4*>(p));
}

// Rounded to nearest even.
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float (&f)[8]) {
    uint4 raw;
    auto* h = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = raw;
}

}  // namespace rigel::cuda
