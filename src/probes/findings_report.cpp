// Rendering FINDINGS.md. Determinism: files sorted by name (then digest),
// groups sorted by probe name, rows kept in the order their probe wrote them;
// nothing depends on the clock or on where the files lie.
#include "probes/findings_report.hpp"

#include "harness/timing.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "probes/probe_run.hpp"
#include "probes/sha256.hpp"
#include "probes/verdicts.hpp"

namespace rigel {
namespace {

constexpr std::string_view kProbesSuffix = "_probes.csv";
constexpr std::string_view kLadderSuffix = "_ladder.csv";
constexpr std::string_view kLadderInfix = "_ladder_";
constexpr std::string_view kSassSuffix = "_sass.csv";
constexpr std::string_view kSassKernelsSuffix = "_sass_kernels.csv";

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string short_commit(const ResultFile& f) {
    if (!f.has_sidecar) return "?";
    std::string c = f.sidecar.text("git_commit");
    if (c.empty()) return "?";
    if (c.size() > 7 && c != "unknown") c = c.substr(0, 7);
    if (f.sidecar.text("git_dirty") == "true") c += " (dirty)";
    return c;
}

std::string device_of(const ResultFile& f) {
    if (!f.has_sidecar) return "";
    const JsonValue* env = f.sidecar.find("environment");
    return env ? env->text("gpu_name") : "";
}

std::string relation_words(const std::string& r) {
    if (r == "fills_in") return "fills in";
    if (r == "not_available") return "not available";
    if (r == "contradicts") return "**contradicts**";
    return r;
}


std::string ratio_text(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", r);
    return buf;
}

bool parse_double(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end && *end == '\0' && std::isfinite(out);
}

long long parse_int(const std::string& s) {
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    return (end && *end == '\0') ? v : 0;
}

// The best verified rate per key among a ladder file's rows.
struct LadderKey {
    std::string group;
    long long m, n, k;
    std::string dtype;
    auto tie() const { return std::tie(group, m, n, k, dtype); }
    bool operator<(const LadderKey& o) const { return tie() < o.tie(); }
};
struct Best {
    double gflops = 0;
    std::string rung;
};

std::string shape_text(long long m, long long n, long long k) {
    if (m == n && n == k) return std::to_string(m);
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// Low-precision types the accelerated rule applies to (fewer than 16 bits).
const std::set<std::string>& low_precision_types() {
    static const std::set<std::string> t{"e4m3", "e5m2", "e2m1", "mxfp4", "i8"};
    return t;
}

// ---- Which unit executes each path: dispatch triangulation ----

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}
std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}
bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

std::string fixed(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

// The date_commit stem a result file shares with its *_sass.csv.
std::string result_stem(const std::string& name) {
    for (std::string_view tag : {std::string_view("_probes"), std::string_view("_ladder"), std::string_view("_sass")}) {
        const auto at = name.find(tag);
        if (at != std::string::npos) return name.substr(0, at);
    }
    return name;
}

const ResultFile* sass_for(const std::vector<ResultFile>& sass, const std::string& result_name) {
    const std::string want = result_stem(result_name) + std::string(kSassSuffix);
    for (const ResultFile& f : sass)
        if (f.name == want) return &f;
    return nullptr;
}

const ResultFile* sass_kernels_for(const std::vector<ResultFile>& sass, const std::string& result_name) {
    const std::string want = result_stem(result_name) + std::string(kSassKernelsSuffix);
    for (const ResultFile& f : sass)
        if (f.name == want) return &f;
    return nullptr;
}

// Opcode columns of a SASS CSV in file order: (column, count) for the row
// whose `key` column is `value` (the object, or the kernel's symbol); false
// when there is no such row.
bool sass_counts(const ResultFile& f, const std::string& value, std::vector<std::pair<std::string, long long>>& out,
                 const char* key = "object") {
    out.clear();
    for (std::size_t i = 0; i < f.table.rows.size(); ++i) {
        if (f.table.cell(i, key) != value) continue;
        for (const std::string& col : f.table.header)
            if (col != "object" && col != "kernel") out.emplace_back(col, parse_int(f.table.cell(i, col)));
        return true;
    }
    return false;
}

// The kernel symbol the throughput probe writes into a ceiling's detail
// ("... Kernel _ZN5rigel.... Checksums: ...").
std::string kernel_of(const std::string& detail) {
    const std::string key = "Kernel ";
    const auto at = detail.find(key);
    if (at == std::string::npos) return {};
    const auto from = at + key.size();
    const auto end = detail.find_first_of(". ", from);
    return detail.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

// A rate in Tflop/s (or Tops) from a measured cell and its unit.
bool rate_tflops(const std::string& measured, const std::string& unit, double& out) {
    if (!parse_double(measured, out)) return false;
    const std::string u = lower(unit);
    if (u == "gflop/s" || u == "gops") out /= 1000;
    else if (u != "tflop/s" && u != "tops") return false;
    return out > 0;
}

// SM clock and power recorded with a measurement: "sm_clock_mhz=V" /
// "power_w=V" when the detail carries them, else the throughput probe's prose
// "SM clock 1980 MHz (median), power 312 W mean / ...".
double number_after(const std::string& text, const std::string& key, const std::string& unit_after) {
    std::size_t from = 0;
    while ((from = text.find(key, from)) != std::string::npos) {
        const char* start = text.c_str() + from + key.size();
        char* end = nullptr;
        const double v = std::strtod(start, &end);
        if (end != start && std::isfinite(v) && std::string_view(end).substr(0, unit_after.size()) == unit_after)
            return v;
        from += key.size();
    }
    return std::numeric_limits<double>::quiet_NaN();
}
void clock_power_of(const std::string& detail, double& clock_mhz, double& power_w) {
    clock_mhz = number_after(detail, "sm_clock_mhz=", "");
    if (!std::isfinite(clock_mhz)) clock_mhz = number_after(detail, "SM clock ", " MHz");
    power_w = number_after(detail, "power_w=", "");
    if (!std::isfinite(power_w)) power_w = number_after(detail, "power ", " W");
}

// The enforced power limit and the light-load SM clock from a sidecar.
void limits_of(const ResultFile& f, double& power_limit_w, double& max_clock_mhz) {
    if (!f.has_sidecar) return;
    const JsonValue* env = f.sidecar.find("environment");
    if (!env) return;
    double v = 0;
    if (!std::isfinite(power_limit_w) && parse_double(env->text("gpu_power_limit_w"), v)) power_limit_w = v;
    if (!std::isfinite(max_clock_mhz) &&
        (parse_double(env->text("gpu_sm_clock_max_mhz"), v) || parse_double(env->text("gpu_sm_clock_peak_mhz"), v)))
        max_clock_mhz = v;
}

// The scalar-FMA paths of a probes CSV: precision -> ceiling and power.
struct ScalarRef {
    std::string mnemonic;  // FFMA, HFMA2, DFMA
    double tflops = 0;
    double power_w = std::numeric_limits<double>::quiet_NaN();
};
bool is_ceiling_row(const CsvTable& t, std::size_t i) {
    return t.cell(i, "probe") == "throughput" && t.cell(i, "quantity") == "sustained throughput ceiling";
}
std::string path_mnemonic(const std::string& path) {
    std::string m;
    for (char c : path) {
        if (c == '.' || c == ' ') break;
        m += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return m;
}
std::map<std::string, ScalarRef> scalar_refs(const CsvTable& t) {
    std::map<std::string, ScalarRef> refs;
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        if (!is_ceiling_row(t, i) || t.cell(i, "verified") != "1") continue;
        const std::string m = path_mnemonic(t.cell(i, "path"));
        if (m != "ffma" && m != "hfma2" && m != "dfma") continue;
        ScalarRef r;
        r.mnemonic = upper(m);
        if (!rate_tflops(t.cell(i, "measured"), t.cell(i, "unit"), r.tflops)) continue;
        double clock = 0;
        clock_power_of(t.cell(i, "detail"), clock, r.power_w);
        refs.emplace(t.cell(i, "dtype"), r);
    }
    return refs;
}

// The scalar precision that bounds a type on the CUDA cores: tf32 operands are
// fp32 words (FFMA); fp8 has no scalar FMA, so a CUDA-core fp8 product goes
// through f16 (HFMA2). No scalar integer path is measured (IDP4A): none for i8.
std::string roofline_precision(const std::string& dtype) {
    if (dtype == "f32" || dtype == "tf32") return "f32";
    if (dtype == "f16" || dtype == "e4m3" || dtype == "e5m2") return "f16";
    if (dtype == "bf16") return "bf16";
    if (dtype == "f64") return "f64";
    return "";
}

// The opcode a throughput-probe instruction assembles to on sm_90 and the SASS
// CSV column that counts it (older records lack some columns: "not counted").
struct ExpectedOpcode {
    std::string mnemonic, column;
};
ExpectedOpcode expected_opcode(const std::string& path, const std::string& dtype) {
    const std::string p = lower(path);
    if (starts_with(p, "ffma")) return {"FFMA", "ffma"};
    if (starts_with(p, "hfma2")) return {"HFMA2", "hfma2"};
    if (starts_with(p, "dfma")) return {"DFMA", "dfma"};
    if (starts_with(p, "wgmma")) {
        if (dtype == "e4m3" || dtype == "e5m2") return {"QGMMA", "qgmma"};
        if (dtype == "i8") return {"IGMMA", "igmma"};
        return {"HGMMA", "hgmma"};
    }
    if (starts_with(p, "mma")) {
        if (dtype == "f64") return {"DMMA", "dmma"};
        if (dtype == "i8") return {"IMMA", "imma"};
        // f16, bf16, tf32; and e4m3, which ptxas for sm_90 unpacks to f16 HMMA.
        return {"HMMA", "hmma"};
    }
    return {};
}

std::string clock_power_text(double clock, double power) {
    std::string s = std::isfinite(clock) ? fixed("%.0f MHz", clock) : "-";
    s += " / ";
    s += std::isfinite(power) ? fixed("%.0f W", power) : "-";
    return s;
}

std::string verdict_cell(const DispatchVerdict& v) {
    std::string s = "**" + v.unit + "**";
    if (v.signals_available > 0 && v.unit != "undetermined")
        s += " (" + std::to_string(v.signals_agreeing) + " of " + std::to_string(v.signals_available) + " signals agree)";
    return s;
}

std::string roofline_cell(double tflops, const std::map<std::string, ScalarRef>& refs, const std::string& dtype,
                          DispatchSignals& s) {
    s.measured_tflops = tflops;
    const auto ref = refs.find(roofline_precision(dtype));
    if (ref == refs.end()) return "- (no scalar " + dtype + " path)";
    s.scalar_fma_roofline_tflops = ref->second.tflops;
    s.scalar_power_w = ref->second.power_w;
    return ratio_text(tflops / ref->second.tflops) + " " + ref->second.mnemonic;
}

// How late a result file is: its run id (which starts with the UTC time),
// then its name.
std::pair<std::string, std::string> run_age(const ResultFile& f) {
    return {f.table.rows.empty() ? std::string() : std::string(f.table.cell(0, "run_id")), f.name};
}

// The latest probes file that measured throughput ceilings; nullptr when none did.
const ResultFile* latest_ceiling_run(const std::vector<ResultFile>& probes) {
    const ResultFile* latest = nullptr;
    for (const ResultFile& f : probes) {
        bool has = false;
        for (std::size_t i = 0; i < f.table.rows.size() && !has; ++i) has = is_ceiling_row(f.table, i);
        if (has && (!latest || run_age(f) >= run_age(*latest))) latest = &f;
    }
    return latest;
}

void render_dispatch(std::string& md, const FindingsInput& in) {
    std::string probe_part;
    const ResultFile* latest = latest_ceiling_run(in.probes);
    for (const ResultFile& f : in.probes) {
        if (&f != latest) continue;
        const CsvTable& t = f.table;
        const auto refs = scalar_refs(t);
        const ResultFile* sass = sass_for(in.sass, f.name);
        const ResultFile* per_kernel = sass_kernels_for(in.sass_kernels, f.name);
        std::vector<std::pair<std::string, long long>> object_counts;
        const bool have_object = sass && sass_counts(*sass, "throughput_ceilings", object_counts);
        double limit = std::numeric_limits<double>::quiet_NaN(), max_clock = limit;
        limits_of(f, limit, max_clock);
        std::string rows;
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            if (!is_ceiling_row(t, i)) continue;
            const std::string& path = t.cell(i, "path");
            const std::string& dtype = t.cell(i, "dtype");
            DispatchSignals s;
            s.power_limit_w = limit;
            s.max_sm_clock_mhz = max_clock;
            clock_power_of(t.cell(i, "detail"), s.sm_clock_mhz, s.sustained_power_w);
            double tflops = 0;
            std::string ceiling = "-", ratio = "-";
            if (rate_tflops(t.cell(i, "measured"), t.cell(i, "unit"), tflops)) {
                ceiling = md_cell(t.cell(i, "measured") + " " + t.cell(i, "unit"));
                if (t.cell(i, "verified") != "1") ceiling += " (unverified)";
                ratio = roofline_cell(tflops, refs, dtype, s);
            }
            const ExpectedOpcode e = expected_opcode(path, dtype);
            // The opcodes of the kernel that measured this ceiling where the
            // visit recorded them per kernel, else those of the whole object.
            std::vector<std::pair<std::string, long long>> counts = object_counts;
            std::string where = "throughput_ceilings";
            const std::string kernel = kernel_of(t.cell(i, "detail"));
            std::vector<std::pair<std::string, long long>> kernel_counts;
            if (per_kernel && !kernel.empty() && sass_counts(*per_kernel, kernel, kernel_counts, "kernel")) {
                counts = kernel_counts;
                where = "its kernel";
            }
            std::string sass_text;
            if (!sass && where == "throughput_ceilings") {
                sass_text = "no SASS record";
                s.sass_note = "no SASS record (no " + result_stem(f.name) + std::string(kSassSuffix) + ")";
            } else if (!have_object && where == "throughput_ceilings") {
                sass_text = "no SASS record";
                s.sass_note = "no SASS record of throughput_ceilings in " + sass->name;
            } else if (e.mnemonic.empty()) {
                sass_text = "-";
                s.sass_note = "no opcode known for this instruction";
            } else if (e.column.empty()) {
                sass_text = e.mnemonic + ": not counted";
                s.sass_note = e.mnemonic + " is not counted by the SASS record (" + sass->name + ")";
            } else {
                long long n = -1;
                for (const auto& [col, c] : counts)
                    if (lower(col) == e.column) n = c;
                if (n < 0) {
                    sass_text = e.mnemonic + ": not counted";
                    s.sass_note = e.mnemonic + " is not counted by the SASS record (" +
                                  (where == "its kernel" ? per_kernel->name : sass->name) + ")";
                } else if (n == 0) {
                    sass_text = "**no " + e.mnemonic + "** in " + where;
                    s.sass_opcodes_absent.push_back(e.mnemonic);
                } else {
                    sass_text = e.mnemonic + " (" + std::to_string(n) + " in " + where + ")";
                    s.sass_opcodes.push_back(e.mnemonic);
                }
                // What else the kernel holds that changes the reading: the
                // conversions of an emulated type.
                if (where == "its kernel")
                    for (const auto& [col, c] : counts)
                        if (lower(col) == "f2fp" && c > 0) sass_text += " + F2FP (" + std::to_string(c) + ")";
            }
            const DispatchVerdict v = triangulate_dispatch(s);
            rows += "| " + md_cell(path) + " | " + md_cell(dtype) + " | " + ceiling + " | " + ratio + " | " +
                    md_cell(sass_text) + " | " + clock_power_text(s.sm_clock_mhz, s.sustained_power_w) + " | " +
                    md_cell(verdict_cell(v)) + " | " + md_cell(v.reasoning) + " |\n";
        }
        if (rows.empty()) continue;
        probe_part += "\nThroughput probe, `" + md_cell(f.name) + "`; SASS: " +
                      (per_kernel ? "`" + md_cell(per_kernel->name) + "`, per kernel"
                       : sass     ? "`" + md_cell(sass->name) + "`, object `throughput_ceilings`"
                                  : std::string("no SASS record")) +
                      ".\n\n| path | type | ceiling | x scalar roofline | SASS | SM clock / power | verdict | reasoning |\n"
                      "|---|---|---|---|---|---|---|---|\n" +
                      rows;
    }

    // Ladder rungs: the best verified rate of each (rung, type) on the CUDA
    // backend, its opcodes from the SASS object named after the rung.
    const ResultFile* ref_file = nullptr;
    for (auto it = in.probes.rbegin(); it != in.probes.rend() && !ref_file; ++it)
        if (!scalar_refs(it->table).empty()) ref_file = &*it;
    struct Pick {
        const ResultFile* file = nullptr;
        std::size_t index = 0;
        double gflops = 0;
    };
    std::map<std::pair<std::string, std::string>, Pick> best;
    for (const ResultFile& f : in.ladder) {
        const CsvTable& t = f.table;
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            double g = 0;
            if (t.cell(i, "backend") != "cuda" || t.cell(i, "status") != "PASS" ||
                !parse_double(t.cell(i, "gflops"), g) || g <= 0)
                continue;
            Pick& p = best[{t.cell(i, "rung"), t.cell(i, "dtype")}];
            if (g > p.gflops) p = {&f, i, g};
        }
    }
    std::string ladder_rows;
    const std::map<std::string, ScalarRef> refs = ref_file ? scalar_refs(ref_file->table) : std::map<std::string, ScalarRef>{};
    for (const auto& [key, p] : best) {
        const auto& [rung, dtype] = key;
        const CsvTable& t = p.file->table;
        DispatchSignals s;
        limits_of(*p.file, s.power_limit_w, s.max_sm_clock_mhz);
        if (ref_file) limits_of(*ref_file, s.power_limit_w, s.max_sm_clock_mhz);
        double v = 0;
        if (parse_double(t.cell(p.index, "sm_clock_mhz"), v)) s.sm_clock_mhz = v;
        if (parse_double(t.cell(p.index, "power_w"), v)) s.sustained_power_w = v;
        const std::string ratio = roofline_cell(p.gflops / 1000, refs, dtype, s);
        const ResultFile* sass = sass_for(in.sass, p.file->name);
        std::vector<std::pair<std::string, long long>> counts;
        std::string sass_text;
        if (!sass || !sass_counts(*sass, rung, counts)) {
            sass_text = "no SASS record";
            s.sass_note = "no SASS record for " + rung;
        } else {
            // The object holds every type the rung is built for: an fp64 row
            // reads only fp64 opcodes (the record does not count DFMA), an fp8
            // row no HGMMA, the others no QGMMA and no DMMA.
            for (const auto& [col, c] : counts) {
                const std::string lc = lower(col);
                const bool fp8 = dtype == "e4m3" || dtype == "e5m2";
                if (c <= 0 || (dtype == "f64") != (lc == "dmma") || (fp8 && lc == "hgmma") ||
                    (!fp8 && lc == "qgmma"))
                    continue;
                s.sass_opcodes.push_back(upper(col));
                sass_text += (sass_text.empty() ? "" : ", ") + upper(col) + " " + std::to_string(c);
            }
            if (s.sass_opcodes.empty()) {
                sass_text = dtype == "f64" ? "no DMMA (DFMA not counted)" : "no matrix/FMA opcode counted";
                s.sass_note = "no " + std::string(dtype == "f64" ? "DMMA (and DFMA is not counted)"
                                                                  : "matrix or FMA opcode counted") +
                              " in " + rung;
            }
        }
        const DispatchVerdict dv = triangulate_dispatch(s);
        ladder_rows += "| " + md_cell(rung) + " | " + md_cell(dtype) + " | " +
                       shape_text(parse_int(t.cell(p.index, "m")), parse_int(t.cell(p.index, "n")),
                                  parse_int(t.cell(p.index, "k"))) +
                       " | " + format_rate(p.gflops) + " | " + ratio + " | " + md_cell(sass_text) + " | " +
                       clock_power_text(s.sm_clock_mhz, s.sustained_power_w) + " | " + md_cell(verdict_cell(dv)) + " | " +
                       md_cell(dv.reasoning) + " | " + md_cell(p.file->name) + " |\n";
    }

    if (probe_part.empty() && ladder_rows.empty()) return;
    md += "\n## Which unit executes each path\n\n"
          "Three independent signals per path, combined by `triangulate_dispatch` (src/probes/verdicts.cpp): "
          "(a) the rate against the scalar-FMA roofline of the same precision, measured by the throughput probe "
          "(FFMA for f32 and tf32, HFMA2 for f16 and fp8, HFMA2.BF16 for bf16, DFMA for f64; no scalar integer "
          "path is measured, so i8 has none); (b) the opcode in the SASS; (c) the power and SM clock recorded "
          "with the measurement: energy per flop against the scalar path's, else the clock under load against "
          "the light-load clock and the power limit. A ceiling above 1.10x the roofline cannot come from the "
          "CUDA cores. For the scalar paths themselves (a) and (c) compare a path with itself and only confirm. "
          "The SASS cell counts the expected opcode in the very kernel that measured the ceiling, where the "
          "run has a per-kernel SASS record (`*_sass_kernels.csv`, matched by the kernel symbol the probe "
          "writes into its detail), else in the probe's whole object (`throughput_ceilings`). Per kernel matters: "
          "a kernel whose loop the compiler emptied still holds the opcode somewhere; ptxas turns mma.sync e4m3 "
          "into F2FP unpacks and f16 HMMA on Hopper, and with loop-invariant operands it computed the product "
          "once, before the loop. Older SASS records count HGMMA, QGMMA, HMMA, IMMA, DMMA and FFMA only.\n";
    md += probe_part;
    if (!ladder_rows.empty())
        md += "\nLadder rungs (CUDA backend): the best verified rate of each rung and type, its SASS from the "
              "object named after the rung, the clock and power the ladder recorded with that row" +
              std::string(ref_file ? "; roofline from `" + md_cell(ref_file->name) + "`" : "; no scalar roofline measured") +
              ". A GEMM's rate is not a ceiling and its energy includes memory traffic.\n\n"
              "| rung | type | shape | rate | x scalar roofline | SASS | SM clock / power | verdict | reasoning | source |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n" +
              ladder_rows;
}

// ---- Accelerated rule on the throughput probe's ceilings ----

// The path a ceiling belongs to, across types: "mma.sync", "wgmma m64n256".
std::string path_family(const std::string& path) {
    const std::string p = lower(path);
    if (starts_with(p, "wgmma")) {
        const auto at = p.find(".m64n");
        if (at != std::string::npos) {
            std::size_t e = at + 5;
            while (e < p.size() && std::isdigit(static_cast<unsigned char>(p[e]))) ++e;
            return "wgmma m64n" + p.substr(at + 5, e - at - 5);
        }
        return "wgmma";
    }
    if (starts_with(p, "mma.sync")) return "mma.sync";
    return p;
}

std::string throughput_accel_rows(const std::vector<ResultFile>& probes) {
    const ResultFile* latest = latest_ceiling_run(probes);
    std::string rows;
    if (latest) {
        const ResultFile& f = *latest;
        const CsvTable& t = f.table;
        std::map<std::pair<std::string, std::string>, std::size_t> by_family;  // (family, type) -> row
        for (std::size_t i = 0; i < t.rows.size(); ++i)
            if (is_ceiling_row(t, i) && t.cell(i, "verified") == "1")
                by_family.emplace(std::make_pair(path_family(t.cell(i, "path")), t.cell(i, "dtype")), i);
        for (const auto& [key, i] : by_family) {
            if (!low_precision_types().count(key.second)) continue;
            const auto f16 = by_family.find({key.first, "f16"});
            if (f16 == by_family.end()) continue;
            double lo = 0, hi = 0;
            if (!rate_tflops(t.cell(i, "measured"), t.cell(i, "unit"), lo) ||
                !rate_tflops(t.cell(f16->second, "measured"), t.cell(f16->second, "unit"), hi))
                continue;
            const AcceleratedVerdict v = accelerated_rule(lo, hi);
            rows += "| " + md_cell(key.first) + " | " + key.second + " | " + md_cell(t.cell(i, "path")) + " " +
                    format_rate(lo * 1000) + " | " + md_cell(t.cell(f16->second, "path")) + " " + format_rate(hi * 1000) +
                    " | " + (std::isfinite(v.ratio) ? ratio_text(v.ratio) : "-") + " | " + v.label + " | " +
                    md_cell(f.name) + " |\n";
        }
    }
    return rows;
}

void render_ladder(std::string& md, const std::vector<ResultFile>& ladder, const std::string& probe_accel) {
    std::string accel, win;
    for (const ResultFile& f : ladder) {
        const CsvTable& t = f.table;
        for (const char* col : {"rung", "backend", "group", "dtype", "m", "n", "k", "status", "vendor", "gflops"})
            if (t.column(col) < 0) throw std::runtime_error(f.name + ": no column '" + std::string(col) + "'");
        std::map<LadderKey, Best> best_by_group;             // (group, shape, type)
        std::map<LadderKey, Best> best_own;                  // ("", shape, type), own CUDA rungs
        std::map<LadderKey, std::vector<Baseline>> vendors;  // ("", shape, type)
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            double g = 0;
            if (t.cell(i, "status") != "PASS" || !parse_double(t.cell(i, "gflops"), g) || g <= 0) continue;
            const long long m = parse_int(t.cell(i, "m")), n = parse_int(t.cell(i, "n")), k = parse_int(t.cell(i, "k"));
            const std::string& dtype = t.cell(i, "dtype");
            const std::string& rung = t.cell(i, "rung");
            Best& b = best_by_group[{t.cell(i, "group"), m, n, k, dtype}];
            if (g > b.gflops) b = {g, rung};
            const LadderKey key{"", m, n, k, dtype};
            if (t.cell(i, "vendor") == "1") {
                vendors[key].push_back({rung, g});
            } else if (t.cell(i, "backend") == "cuda") {
                Best& o = best_own[key];
                if (g > o.gflops) o = {g, rung};
            }
        }
        for (const auto& [key, b] : best_by_group) {
            if (!low_precision_types().count(key.dtype)) continue;
            const auto f16 = best_by_group.find({key.group, key.m, key.n, key.k, "f16"});
            const AcceleratedVerdict v = accelerated_rule(b.gflops, f16 == best_by_group.end() ? 0 : f16->second.gflops);
            accel += "| " + md_cell(key.group) + " | " + shape_text(key.m, key.n, key.k) + " | " + key.dtype + " | " +
                     md_cell(b.rung) + " " + format_rate(b.gflops) + " | " +
                     (f16 == best_by_group.end() ? "-" : md_cell(f16->second.rung) + " " + format_rate(f16->second.gflops)) +
                     " | " + (std::isfinite(v.ratio) ? ratio_text(v.ratio) : "-") + " | " + v.label + " | " + f.name +
                     " |\n";
        }
        for (const auto& [key, o] : best_own) {
            const auto vb = vendors.find(key);
            const WinVerdict v = win_rule(o.gflops, vb == vendors.end() ? std::vector<Baseline>{} : vb->second);
            double strongest = 0;
            if (vb != vendors.end())
                for (const auto& b : vb->second) strongest = std::max(strongest, b.rate);
            win += "| " + shape_text(key.m, key.n, key.k) + " | " + key.dtype + " | " + md_cell(o.rung) + " " +
                   format_rate(o.gflops) + " | " +
                   (v.strongest.empty() ? "-" : md_cell(v.strongest) + " " + format_rate(strongest)) + " | " +
                   (std::isfinite(v.ratio) ? ratio_text(v.ratio) : "-") + " | " + v.label + " | " + f.name + " |\n";
        }
    }
    if (!accel.empty() || !probe_accel.empty())
        md += "\n## Is a low-precision type accelerated, or only smaller?\n\n"
              "Rule: a low-precision type is *accelerated* only at >= 1.5x the fp16 rate of the same path; "
              "otherwise *footprint only*.\n";
    if (!accel.empty())
        md += "\nLadder: the best verified rung of the group against the group's best fp16 rung, same shape.\n\n"
              "| path (group) | shape | type | best rung | fp16 best rung | ratio | verdict | source |\n"
              "|---|---|---|---|---|---|---|---|\n" +
              accel;
    if (!probe_accel.empty())
        md += "\nThroughput probe: the sustained ceiling of one instruction against the f16 instruction of the same "
              "path (mma.sync; wgmma at the same N).\n\n"
              "| path | type | ceiling | fp16 ceiling | ratio | verdict | source |\n"
              "|---|---|---|---|---|---|---|\n" +
              probe_accel;
    if (!win.empty())
        md += "\n## Does a rigel kernel win?\n\n"
              "Rule: a kernel *wins* only at >= 1.10x the strongest baseline; here the baselines are the vendor "
              "library rows (cuBLAS, cuBLASLt) of the same shape and type.\n\n"
              "| shape | type | best own CUDA rung | strongest vendor row | ratio | verdict | source |\n"
              "|---|---|---|---|---|---|---|\n" +
              win;
}

void sort_files(std::vector<ResultFile>& files) {
    std::sort(files.begin(), files.end(), [](const ResultFile& a, const ResultFile& b) {
        return std::tie(a.name, a.sha256) < std::tie(b.name, b.sha256);
    });
}

}  // namespace

std::string md_cell(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '|')
            o += "\\|";
        else if (c == '\n' || c == '\r')
            o += ' ';
        else
            o += c;
    }
    return o;
}

ResultFile make_result_file(const std::string& name, const std::string& csv_text, const std::string& sidecar_text) {
    ResultFile f;
    f.name = name;
    f.sha256 = sha256_hex(csv_text);
    try {
        f.table = parse_csv(csv_text);
        if (!sidecar_text.empty()) {
            f.sidecar = parse_json(sidecar_text);
            f.has_sidecar = true;
        }
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(name + ": " + e.what());
    }
    return f;
}

FindingsInput load_results(const std::vector<std::filesystem::path>& dirs) {
    FindingsInput in;
    for (const auto& dir : dirs) {
        if (!std::filesystem::is_directory(dir))
            throw std::runtime_error("results folder " + dir.string() + " does not exist");
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            if (!entry.is_regular_file()) continue;
            const std::string fname = entry.path().filename().string();
            const bool probes = ends_with(fname, kProbesSuffix);
            const bool ladder = ends_with(fname, kLadderSuffix) ||
                                (ends_with(fname, ".csv") && fname.find(kLadderInfix) != std::string::npos);
            if (ends_with(fname, kSassKernelsSuffix)) {
                ResultFile f = make_result_file(fname, read_text_file(entry.path()), "");
                if (f.table.column("kernel") < 0)
                    throw std::runtime_error(fname + ": not a per-kernel SASS CSV (no column 'kernel')");
                in.sass_kernels.push_back(std::move(f));
                continue;
            }
            if (ends_with(fname, kSassSuffix)) {
                ResultFile f = make_result_file(fname, read_text_file(entry.path()), "");
                if (f.table.column("object") < 0)
                    throw std::runtime_error(fname + ": not a SASS opcode CSV (no column 'object')");
                in.sass.push_back(std::move(f));
                continue;
            }
            if (!probes && !ladder) continue;
            auto side = entry.path();
            side.replace_extension(".json");
            const std::string side_text = std::filesystem::exists(side) ? read_text_file(side) : std::string();
            ResultFile f = make_result_file(fname, read_text_file(entry.path()), side_text);
            if (probes) {
                for (const auto& col : probe_csv_header())
                    if (f.table.column(col) < 0)
                        throw std::runtime_error(fname + ": not a probes CSV (no column '" + col + "')");
                in.probes.push_back(std::move(f));
            } else {
                in.ladder.push_back(std::move(f));
            }
        }
    }
    if (in.probes.empty()) {
        std::string where;
        for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
        throw std::runtime_error("no *_probes.csv in " + where);
    }
    sort_files(in.probes);
    sort_files(in.ladder);
    sort_files(in.sass);
    sort_files(in.sass_kernels);
    return in;
}

std::string render_findings(const FindingsInput& in_unsorted) {
    FindingsInput in = in_unsorted;
    sort_files(in.probes);
    sort_files(in.ladder);
    sort_files(in.sass);
    sort_files(in.sass_kernels);

    std::string md = "# rigel findings\n\n"
                     "Generated by `rigel findings` from the result files listed below; do not edit by hand. "
                     "Each finding sits beside the documentation statement it confirms, fills in or contradicts.\n\n"
                     "## Sources\n\n"
                     "A finding measured by several runs is shown from the latest; the earlier runs stay listed here.\n\n"
                     "| file | sha256 | run id | commit | device | rows |\n|---|---|---|---|---|---|\n";
    for (const auto* list : {&in.probes, &in.ladder, &in.sass, &in.sass_kernels})
        for (const ResultFile& f : *list)
            md += "| " + md_cell(f.name) + " | `" + f.sha256 + "` | " +
                  md_cell(f.has_sidecar ? f.sidecar.text("run_id") : "") + " | " + md_cell(short_commit(f)) + " | " +
                  md_cell(device_of(f)) + " | " + std::to_string(f.table.rows.size()) + " |\n";

    // Questions from the sidecars; each probe is one group.
    std::map<std::string, std::string> question;
    struct Row {
        const ResultFile* file;
        std::size_t index;
    };
    std::map<std::string, std::vector<Row>> groups;
    std::map<std::string, int> relation_count;
    std::vector<Row> contradictions;
    // A finding measured by several runs is shown from the latest only (run
    // ids start with the UTC time); earlier runs stay listed under Sources.
    const auto finding_key = [](const CsvTable& t, std::size_t i) {
        return t.cell(i, "probe") + '\x1f' + t.cell(i, "path") + '\x1f' + t.cell(i, "dtype") + '\x1f' +
               t.cell(i, "quantity");
    };
    std::map<std::string, const ResultFile*> latest;
    for (const ResultFile& f : in.probes)
        for (std::size_t i = 0; i < f.table.rows.size(); ++i) {
            const ResultFile*& best = latest[finding_key(f.table, i)];
            if (!best || run_age(f) >= run_age(*best)) best = &f;
        }
    for (const ResultFile& f : in.probes) {
        if (f.has_sidecar)
            if (const JsonValue* q = f.sidecar.find("questions"))
                for (std::size_t i = 0; i < q->keys.size(); ++i)
                    if (q->items[i].kind == JsonValue::Kind::string && !question.count(q->keys[i]))
                        question[q->keys[i]] = q->items[i].string;
        for (std::size_t i = 0; i < f.table.rows.size(); ++i) {
            if (latest[finding_key(f.table, i)] != &f) continue;
            groups[f.table.cell(i, "probe")].push_back({&f, i});
            const std::string& rel = f.table.cell(i, "relation");
            ++relation_count[rel];
            if (rel == "contradicts") contradictions.push_back({&f, i});
        }
    }

    md += "\n## Summary\n\n";
    std::size_t total = 0;
    for (const auto& [rel, n] : relation_count) total += static_cast<std::size_t>(n);
    md += std::to_string(total) + " findings from " + std::to_string(groups.size()) + " probes:";
    bool first = true;
    for (const auto& rel : {"confirms", "fills_in", "contradicts", "not_available", "error"}) {
        const auto it = relation_count.find(rel);
        if (it == relation_count.end()) continue;
        md += std::string(first ? " " : ", ") + std::to_string(it->second) + " " + relation_words(rel);
        first = false;
    }
    for (const auto& [rel, n] : relation_count)
        if (rel != "confirms" && rel != "fills_in" && rel != "contradicts" && rel != "not_available" && rel != "error") {
            md += std::string(first ? " " : ", ") + std::to_string(n) + " '" + md_cell(rel) + "'";
            first = false;
        }
    md += ".\n";
    if (!contradictions.empty()) {
        md += "\nWhere the device contradicts the documentation:\n\n";
        for (const Row& r : contradictions) {
            const CsvTable& t = r.file->table;
            md += "- `" + md_cell(t.cell(r.index, "probe")) + "`: " + md_cell(t.cell(r.index, "quantity")) +
                  ": measured " + md_cell(t.cell(r.index, "measured")) + "; the documentation says: " +
                  md_cell(t.cell(r.index, "doc_statement")) + " (" + md_cell(t.cell(r.index, "doc_source")) + ")\n";
        }
    }

    for (const auto& [probe, rows] : groups) {
        const auto q = question.find(probe);
        md += "\n## " + md_cell(q == question.end() ? probe : q->second) + "\n\nProbe `" + md_cell(probe) + "`.\n\n";
        md += "| finding | path | type | measured | expected | relation | the documentation says | source | detail | "
              "run @ commit |\n|---|---|---|---|---|---|---|---|---|---|\n";
        for (const Row& r : rows) {
            const CsvTable& t = r.file->table;
            auto c = [&](const char* col) { return md_cell(t.cell(r.index, col)); };
            std::string measured = c("measured");
            if (!t.cell(r.index, "unit").empty() && !measured.empty()) measured += " " + c("unit");
            if (t.cell(r.index, "verified") != "1" && !measured.empty()) measured += " (unverified)";
            md += "| " + c("quantity") + " | " + c("path") + " | " + c("dtype") + " | " + measured + " | " +
                  c("expected") + " | " + relation_words(t.cell(r.index, "relation")) + " | " + c("doc_statement") +
                  " | " + c("doc_source") + " | " + c("detail") + " | " + c("run_id") + " @ " +
                  md_cell(short_commit(*r.file)) + " |\n";
        }
    }
    render_dispatch(md, in);
    render_ladder(md, in.ladder, throughput_accel_rows(in.probes));
    return md;
}

}  // namespace rigel
