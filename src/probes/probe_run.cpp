// Probe selection, isolated execution, CSV rows and the summary table.
#include "probes/probe_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace rigel {
namespace {

std::string clip(const std::string& s, std::size_t width) {
    std::string flat;
    for (char c : s) flat += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (flat.size() <= width) return flat;
    return flat.substr(0, width - 3) + "...";
}

std::string pad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// The typed cells as the ladder CSV writes the same quantities: six
// significant digits, the clock-event mask as 16 hex digits, "" when absent.
std::string number_cell(double v) {
    if (!std::isfinite(v)) return {};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string mask_cell(const std::optional<std::uint64_t>& mask) {
    if (!mask) return {};
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(*mask));
    return buf;
}

}  // namespace

std::vector<const Probe*> select_probes(std::span<const Probe> registry, const std::string& selector) {
    std::vector<const Probe*> out;
    if (selector == "all") {
        for (const Probe& p : registry) out.push_back(&p);
        return out;
    }
    for (const Probe& p : registry)
        if (p.name == selector) return {&p};
    std::string known;
    for (const Probe& p : registry) known += (known.empty() ? "" : ", ") + std::string(p.name);
    throw std::invalid_argument("unknown probe '" + selector + "' (known: " + (known.empty() ? "none" : known) +
                                ", or all)");
}

std::vector<ProbeRun> run_probes(const std::vector<const Probe*>& probes, const ProbeContext& ctx) {
    std::vector<ProbeRun> runs;
    for (const Probe* p : probes) {
        ProbeRun r;
        r.probe = std::string(p->name);
        if (ctx.progress) ctx.progress("probe " + r.probe + ": " + std::string(p->question));
        const auto t0 = std::chrono::steady_clock::now();
        try {
            r.findings = p->run(ctx);
            if (r.findings.empty()) r.error = "the probe returned no findings";
        } catch (const std::exception& e) {
            r.findings.clear();
            r.error = e.what();
        } catch (...) {
            r.findings.clear();
            r.error = "unknown exception";
        }
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (Finding& f : r.findings)
            if (f.probe.empty()) f.probe = r.probe;
        if (ctx.progress && !r.error.empty()) ctx.progress("probe " + r.probe + " FAILED: " + r.error);
        runs.push_back(std::move(r));
    }
    return runs;
}

int count_errors(const std::vector<ProbeRun>& runs) {
    int n = 0;
    for (const auto& r : runs) n += !r.error.empty();
    return n;
}

std::vector<std::string> probe_csv_header() {
    return {"run_id",  "probe",        "path",     "dtype",         "quantity",   "measured", "expected",
            "unit",    "verified",     "relation", "doc_statement", "doc_source", "detail",   "value",
            "sm_clock_mhz", "power_w", "power_max_w", "temp_c", "clock_event_mask", "kernel",
            "swept", "model_block", "model_frac_bits", "model_out_frac_bits", "model_align", "model_out", "model_c",
            "model_exp_rule", "model_lowering", "model_single_ok", "model_single_n", "model_chain_ok",
            "model_chain_n"};
}

namespace {

// The model columns of a row: 12 cells, empty where the row states no model.
std::vector<std::string> model_cells(const std::optional<Finding::Model>& m) {
    if (!m) return std::vector<std::string>(12);
    return {std::to_string(m->block),     std::to_string(m->frac_bits), std::to_string(m->out_frac_bits),
            m->align,                     m->out,                       m->c_joins,
            m->exp_rule,                  m->lowering,                  std::to_string(m->single_ok),
            std::to_string(m->single_n),  std::to_string(m->chain_ok),  std::to_string(m->chain_n)};
}

}  // namespace

std::vector<std::vector<std::string>> probe_csv_rows(const std::vector<ProbeRun>& runs, const std::string& run_id) {
    std::vector<std::vector<std::string>> rows;
    for (const ProbeRun& r : runs) {
        if (!r.error.empty()) {
            std::vector<std::string> row{run_id, r.probe, "", "", "probe failed", "", "", "", "0",
                                         std::string(kErrorRelation), "", "", r.error, "", "", "", "", "", "", "", ""};
            for (std::string& c : model_cells(std::nullopt)) row.push_back(std::move(c));
            rows.push_back(std::move(row));
            continue;
        }
        for (const Finding& f : r.findings) {
            std::vector<std::string> row{run_id, f.probe, f.path, f.dtype, f.quantity, f.measured, f.expected, f.unit,
                                         f.verified ? "1" : "0", std::string(name(f.relation)), f.doc_statement,
                                         f.doc_source, f.detail, number_cell(f.value), number_cell(f.sm_clock_mhz),
                                         number_cell(f.power_w), number_cell(f.power_max_w), number_cell(f.temp_c),
                                         mask_cell(f.clock_event_mask), f.kernel, number_cell(f.swept)};
            for (std::string& c : model_cells(f.model)) row.push_back(std::move(c));
            rows.push_back(std::move(row));
        }
    }
    return rows;
}

std::string probe_summary_table(const std::vector<ProbeRun>& runs) {
    constexpr std::size_t w_probe = 18, w_quantity = 58, w_measured = 30;
    std::string out = pad("probe", w_probe) + " " + pad("quantity", w_quantity) + " " + pad("measured", w_measured) +
                      " relation\n";
    for (const ProbeRun& r : runs) {
        if (!r.error.empty()) {
            out += pad(clip(r.probe, w_probe), w_probe) + " " + pad("probe failed", w_quantity) + " " +
                   pad(clip(r.error, w_measured), w_measured) + " " + std::string(kErrorRelation) + "\n";
            continue;
        }
        // Confirmations are counted, not listed: the table is for what the
        // documentation does not already say; the CSV holds every row.
        const auto confirmed = std::count_if(r.findings.begin(), r.findings.end(),
                                             [](const Finding& f) { return f.relation == DocRelation::confirms; });
        if (confirmed)
            out += pad(clip(r.probe, w_probe), w_probe) + " (" + std::to_string(confirmed) +
                   " findings confirm the documentation; see the CSV)\n";
        // A sweep's rows are points of a curve, drawn by reproduce, not read one by one.
        const auto swept = std::count_if(r.findings.begin(), r.findings.end(), [](const Finding& f) {
            return f.relation != DocRelation::confirms && std::isfinite(f.swept);
        });
        if (swept)
            out += pad(clip(r.probe, w_probe), w_probe) + " (" + std::to_string(swept) +
                   " rows of a sweep; see the CSV)\n";
        for (const Finding& f : r.findings) {
            if (f.relation == DocRelation::confirms || std::isfinite(f.swept)) continue;
            out += pad(clip(r.probe, w_probe), w_probe) + " " + pad(clip(f.quantity, w_quantity), w_quantity) + " " +
                   pad(clip(f.measured + (f.unit.empty() ? "" : " " + f.unit), w_measured), w_measured) + " " +
                   std::string(name(f.relation)) + "\n";
        }
    }
    return out;
}

}  // namespace rigel
