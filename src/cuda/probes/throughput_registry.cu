// The throughput probes' table.
#include "cuda/probes/probe_parts.hpp"

namespace rigel::probes {
std::vector<Finding> run_throughput(const ProbeContext& ctx);  // throughput_ceilings.cu
std::vector<Finding> run_bandwidth(const ProbeContext& ctx);   // throughput_bandwidth.cu
std::vector<Finding> run_pingpong_timeline(const ProbeContext& ctx);  // throughput_pingpong_timeline.cu
std::vector<Finding> run_wgmma_corun(const ProbeContext& ctx);        // throughput_wgmma_corun.cu
std::vector<Finding> run_wgmma_operand_layout(const ProbeContext& ctx);  // throughput_wgmma_operand_layout.cu
std::vector<Finding> run_tma_box_rate(const ProbeContext& ctx);          // throughput_tma_box_rate.cu
}

namespace rigel::cuda {

std::span<const Probe> throughput_probes() {
    static const Probe table[] = {
        {"throughput",
         "What sustained throughput does each arithmetic path reach (scalar FMA, mma.sync per type, wgmma per type "
         "and N), at what clock and power?",
         &probes::run_throughput},
        {"bandwidth",
         "What device-memory bandwidth does the card sustain (a device-to-device copy and a streaming read), at "
         "what clock and power?",
         &probes::run_bandwidth},
        {"pingpong_timeline",
         "Where do the cycles of the library's ping-pong GEMM kernel go between tiles (start-up, hand-offs, the "
         "last epilogue), against its tensor cores' time?",
         &probes::run_pingpong_timeline},
        {"wgmma_corun",
         "Does other warps' work on the same SM (FP32, MUFU, conversions, a GELU, loads, stmatrix, global stores, long code) slow a running wgmma "
         "chain, and by how many tensor cycles a step?",
         &probes::run_wgmma_corun},
        {"wgmma_operand_layout",
         "Does a wgmma's operand layout in shared memory (K-major or MN-major, 128B swizzle) or an N that ends "
         "inside a 64-column swizzle slab change its cycles?",
         &probes::run_wgmma_operand_layout},
        {"tma_box_rate",
         "Does a TMA load of 128B-swizzled boxes slow down when the boxes start between the 128-byte lines of the "
         "contiguous dimension (an MN-major operand's tile at a column that is no multiple of 64)?",
         &probes::run_tma_box_rate},
    };
    return table;
}

}  // namespace rigel::cuda
