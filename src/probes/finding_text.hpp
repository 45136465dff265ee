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

inline Finding not_available(std::string probe, std::string path, std::string dtype, std::string quantity,
                             std::string why) {
    Finding f = make_finding(std::move(probe), std::move(path), std::move(dtype), std::move(quantity));
    f.measured = "not available";
    f.relation = DocRelation::not_available;
    f.detail = std::move(why);
    return f;
}

}  // namespace rigel::probes
