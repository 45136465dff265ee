// The throughput probes' table.
#include "cuda/probes/probe_parts.hpp"

namespace rigel::probes {
std::vector<Finding> run_throughput(const ProbeContext& ctx);  // throughput_ceilings.cu
std::vector<Finding> run_bandwidth(const ProbeContext& ctx);   // throughput_bandwidth.cu
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
    };
    return table;
}

}  // namespace rigel::cuda
