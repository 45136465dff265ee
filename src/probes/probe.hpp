// The characterization (RIGEL) probes: each asks the device one question the
// documentation leaves open, checks the device's raw output against a float64
// expectation computed from the same bytes, and returns findings: rows that
// set what was measured beside the documentation statement it confirms, fills
// in or contradicts.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rigel {

// How a finding relates to the documentation (the discovery bar).
enum class DocRelation : std::uint8_t {
    confirms,       // the documentation says so, and the device agrees
    fills_in,       // the documentation is silent; this is the measured fact
    contradicts,    // the documentation says otherwise
    not_available,  // the instruction or path does not exist on this device
};
std::string_view name(DocRelation r);
// The inverse of name(); nullopt for any other text.
std::optional<DocRelation> parse_doc_relation(std::string_view s);

struct Finding {
    std::string probe;          // probe name, e.g. "cvt_saturation"
    std::string path;           // instruction or path: "cvt.rn.satfinite.e4m3x2.f32", "mma.sync.m16n8k16", "ffma"
    std::string dtype;          // operand type, or "" where none applies
    std::string quantity;       // what was measured, in words: "fp32 1000.0 -> e4m3"
    std::string measured;       // the device's answer, as text
    std::string expected;       // the float64 / host-codec expectation on the same bytes ("" if none)
    std::string unit;           // "", "Tflop/s", "bits", "MHz", ...
    bool verified = false;      // the device's raw output was checked against the expectation
    DocRelation relation = DocRelation::fills_in;
    std::string doc_statement;  // what the documentation says (or "silent")
    std::string doc_source;     // where: "PTX ISA 9.0, section 9.7.9.21 (cvt)"
    std::string detail;         // anything a reader needs to interpret the row, in words only

    // Typed numbers, each a CSV column of its own: the report reads these,
    // never the `detail` sentence. NaN or empty where nothing was measured.
    static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
    double value = kNotMeasured;         // the measured quantity as a number, in `unit`
    double sm_clock_mhz = kNotMeasured;  // median SM clock during the measurement
    double power_w = kNotMeasured;       // mean board power
    double power_max_w = kNotMeasured;
    double temp_c = kNotMeasured;        // highest GPU temperature
    std::optional<std::uint64_t> clock_event_mask;  // OR of the NVML clock-event reasons seen
    std::string kernel;                  // symbol of the kernel that measured it
    double swept = kNotMeasured;         // the swept input of a row that belongs to a sweep (e.g. a gap)

    // An accumulation model a row states (the accumulation probe's "model
    // assembled" rows), each parameter a column of its own. For a path that
    // ptxas lowers to other instructions, the parameters are one step's and
    // `lowering` says how the steps and C are put together.
    struct Model {
        int block = 0;                  // products per alignment step
        int frac_bits = 0;              // bits kept below the largest term's leading bit
        int out_frac_bits = 23;         // the result's fraction bits
        std::string align, out;         // the alignment cut and the result's rounding, in words
        std::string c_joins;            // where C joins the sum, in words
        std::string exp_rule;           // "factors" or "value": what a product is aligned by
        std::string lowering;           // "" for one instruction's own model
        int single_ok = 0, single_n = 0, chain_ok = 0, chain_n = 0;  // random cases reproduced bit for bit
    };
    std::optional<Model> model;
};

struct ProbeContext {
    int compute_capability = 0;  // x10
    std::uint64_t seed = 1;
    bool quick = false;          // shorter timing, for tests
    // Leave out the cases known to fault the device (a fault ends the context:
    // under compute-sanitizer it is reported as an error and leaks what was live).
    bool avoid_faults = false;
    std::function<void(const std::string&)> progress;
};

struct Probe {
    std::string_view name;
    std::string_view question;  // one line: what it asks of the hardware
    std::vector<Finding> (*run)(const ProbeContext&);
};

// Every probe; empty when rigel is built without CUDA.
std::span<const Probe> cuda_probes();

}  // namespace rigel
