// FINDINGS.md, rendered from committed results alone (no GPU): every probe
// finding beside the documentation statement it confirms, fills in or
// contradicts, grouped by the question its probe asks; and, from ladder CSVs,
// the accelerated and win verdicts. The output is a pure function of the
// input files: sorted, no clock, no machine paths.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "probes/csv_read.hpp"
#include "probes/json_read.hpp"

namespace rigel {

struct ResultFile {
    std::string name;     // file name, e.g. 2026-11-29_3fa9c2e_probes.csv
    std::string sha256;   // of the CSV's bytes
    CsvTable table;
    bool has_sidecar = false;
    JsonValue sidecar;    // <stem>.json beside the CSV
};

struct FindingsInput {
    std::vector<ResultFile> probes;  // *_probes.csv, sorted by name
    std::vector<ResultFile> ladder;  // *_ladder.csv and *_ladder_<suffix>.csv, sorted by name
    // *_sass.csv (object,hgmma,qgmma,hmma,imma,dmma,ffma: opcode counts per
    // compiled source file), sorted by name. <stem>_sass.csv belongs to the
    // probes and ladder files of the same <stem> (date_commit).
    std::vector<ResultFile> sass;
    // *_sass_kernels.csv (object,kernel,<opcode counts>: the same counts per
    // kernel symbol), matched to the probes file of the same <stem>.
    std::vector<ResultFile> sass_kernels;
};

// Builds a ResultFile from text (the CSV is parsed, its SHA-256 taken; an
// empty sidecar text means none). Throws on malformed CSV or JSON.
ResultFile make_result_file(const std::string& name, const std::string& csv_text, const std::string& sidecar_text);

// Every *_probes.csv, *_ladder*.csv and *_sass.csv directly in the folders, with their
// sidecars. Throws std::runtime_error if a folder is missing or no probes CSV
// is found; a probes CSV missing a required column is an error too.
FindingsInput load_results(const std::vector<std::filesystem::path>& dirs);

// Sections, in order: sources, summary, one per probe, "Which unit executes
// each path" (dispatch triangulation of every throughput-probe ceiling and of
// every CUDA ladder rung), the accelerated verdicts (ladder and throughput
// probe), the win verdicts.
std::string render_findings(const FindingsInput& in);

// Markdown table cell: '|' escaped, line breaks flattened.
std::string md_cell(const std::string& s);

}  // namespace rigel
