// The parts of the probe registry; each is defined beside its kernels.
#pragma once
#include <span>

#include "probes/probe.hpp"

namespace rigel::cuda {

std::span<const Probe> format_probes();      // conversions, saturation, special values, fp8 GEMM overflow
std::span<const Probe> layout_probes();      // fragment layouts of mma.sync and wgmma
std::span<const Probe> numerics_probes();    // accumulation numerics per path and type
std::span<const Probe> throughput_probes();  // ceilings per unit and type, with clocks and power
std::span<const Probe> alignment_probes();   // alignment and shape rules of TMA, cuBLASLt fp8 and the Hopper rungs

}  // namespace rigel::cuda
