// When the ping-pong kernel's epilogue spreads its stores (pingpong_gemm.cuh,
// FixedEpilogue::kSpreadNs). A consumer's epilogue runs while the other
// consumer multiplies its next tile, and its stores, issued back to back, slow
// that main loop; a policy that sleeps between its stores lets them trickle
// out beside it instead. That only pays where a main loop runs beside the
// epilogue (the other consumer has a next unit: not the CTA's last tile, whose
// epilogue is the kernel's tail) and lasts long enough to cover the sleeps
// (16 sleeps of 150 ns add about 5 k cycles to an epilogue of 3-8 k; a main
// loop of kSpreadMinKTiles k-tiles of 512 cycles lasts 32 k). Plain C++,
// compiled into the kernel and into the host tests.
#pragma once
#include "cuda/host_device.hpp"

namespace rigel::gemm {

inline constexpr int kSpreadMinKTiles = 64;

// `unit`: the consumer's unit in the CTA's sequence (units unit, unit + stride, ... alternate between
// the two consumers); `units`: the sequence's end; `k_tiles`: the main loop's length.
RIGEL_HOST_DEVICE constexpr bool spread_epilogue(int unit, int stride, int units, int k_tiles) {
    return unit + stride < units && k_tiles >= kSpreadMinKTiles;
}

}  // namespace rigel::gemm
