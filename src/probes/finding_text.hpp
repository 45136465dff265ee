// Plain C++ helpers shared by the probes: how numbers are written into
// findings, and the two shapes of finding every probe makes.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "probes/probe.hpp"

namespace rigel::probes {

inline void report(const ProbeContext& ctx, const std::string& what) {
    if (ctx.progress) ctx.progress(what);
}

// Numbers in findings: fp32 results with 9 significant digits (round-trip
// exact), float64 expectations with 17.
inline std::string fmt_f32(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}
inline std::string fmt_f64(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}
inline std::string fmt_fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

inline Finding make_finding(std::string probe, std::string path, std::string dtype, std::string quantity) {
    Finding f;
    f.probe = std::move(probe);
    f.path = std::move(path);
    f.dtype = std::move(dtype);
    f.quantity = std::move(quantity);
    return f;
}

// What the rows of one measurement share: the probe, path and type, what the documentation says and
// where, the kernel that measured it, and whether its checks passed.
struct RowSource {
    std::string probe, path, dtype, doc_statement, doc_source, kernel;
    bool verified = false;
};

// A row of such a measurement with a typed value (Finding::value), written with `decimals` decimals;
// relation fills_in.
inline Finding value_row(const RowSource& src, std::string quantity, double value, int decimals, std::string unit,
                         std::string expected, std::string detail) {
    Finding f = make_finding(src.probe, src.path, src.dtype, std::move(quantity));
    f.value = value;
    f.measured = fmt_fixed(value, decimals);
    f.unit = std::move(unit);
    f.expected = std::move(expected);
    f.verified = src.verified;
    f.relation = DocRelation::fills_in;
    f.doc_statement = src.doc_statement;
    f.doc_source = src.doc_source;
    f.kernel = src.kernel;
    f.detail = std::move(detail);
    return f;
}

inline Finding not_available(std::string probe, std::string path, std::string dtype, std::string quantity,
                             std::string why) {
    Finding f = make_finding(std::move(probe), std::move(path), std::move(dtype), std::move(quantity));
    f.measured = "not available";
    f.relation = DocRelation::not_available;
    f.detail = std::move(why);
    return f;
}

}  // namespace rigel::probes
