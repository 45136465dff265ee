// Rendering FINDINGS.md. Determinism: files sorted by name (then digest),
// groups sorted by probe name, rows kept in the order their probe wrote them;
// nothing depends on the clock or on where the files lie.
#include "probes/findings_report.hpp"

#include <algorithm>
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

std::string rate_text(double gflops) {
    char buf[32];
    if (gflops >= 1000)
        std::snprintf(buf, sizeof buf, "%.1f Tflop/s", gflops / 1000);
    else
        std::snprintf(buf, sizeof buf, "%.2f Gflop/s", gflops);
    return buf;
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
    static const std::set<std::string> t{"e4m3", "e5m2", "e2m1", "i8"};
    return t;
}

void render_ladder(std::string& md, const std::vector<ResultFile>& ladder) {
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
                     md_cell(b.rung) + " " + rate_text(b.gflops) + " | " +
                     (f16 == best_by_group.end() ? "-" : md_cell(f16->second.rung) + " " + rate_text(f16->second.gflops)) +
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
                   rate_text(o.gflops) + " | " +
                   (v.strongest.empty() ? "-" : md_cell(v.strongest) + " " + rate_text(strongest)) + " | " +
                   (std::isfinite(v.ratio) ? ratio_text(v.ratio) : "-") + " | " + v.label + " | " + f.name + " |\n";
        }
    }
    if (!accel.empty())
        md += "\n## Is a low-precision type accelerated, or only smaller?\n\n"
              "Rule: a low-precision type is *accelerated* only at >= 1.5x the fp16 rate of the same path "
              "(best verified rung of the group, same shape); otherwise *footprint only*.\n\n"
              "| path (group) | shape | type | best rung | fp16 best rung | ratio | verdict | source |\n"
              "|---|---|---|---|---|---|---|---|\n" +
              accel;
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
            const bool probes = ends_with(fname, kProbesSuffix), ladder = ends_with(fname, kLadderSuffix);
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
    return in;
}

std::string render_findings(const FindingsInput& in_unsorted) {
    FindingsInput in = in_unsorted;
    sort_files(in.probes);
    sort_files(in.ladder);

    std::string md = "# rigel findings\n\n"
                     "Generated by `rigel findings` from the result files listed below; do not edit by hand. "
                     "Each finding sits beside the documentation statement it confirms, fills in or contradicts.\n\n"
                     "## Sources\n\n"
                     "| file | sha256 | run id | commit | device | rows |\n|---|---|---|---|---|---|\n";
    for (const auto* list : {&in.probes, &in.ladder})
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
    for (const ResultFile& f : in.probes) {
        if (f.has_sidecar)
            if (const JsonValue* q = f.sidecar.find("questions"))
                for (std::size_t i = 0; i < q->keys.size(); ++i)
                    if (q->items[i].kind == JsonValue::Kind::string && !question.count(q->keys[i]))
                        question[q->keys[i]] = q->items[i].string;
        for (std::size_t i = 0; i < f.table.rows.size(); ++i) {
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
    render_ladder(md, in.ladder);
    return md;
}

}  // namespace rigel
