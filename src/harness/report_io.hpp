// Writing results: a tidy CSV and its JSON provenance sidecar. A run claims its
// two file names atomically before it writes anything, so that nothing already
// in an output folder is replaced, whoever wrote it, and two runs into one
// folder each keep their own files; after that the run rewrites only its own
// pair, through temporary files, so the pair on disk always agrees.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/provenance.hpp"

namespace rigel {

// Writes `content` to `path` through a temporary file in the same folder, then
// renames it over `path`. Only for a path the caller owns (a claimed name, or a
// file the user named); the temporary file is removed on any failure.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// Claims a name stem in `dir`: creates an empty `stem + ext` for every ext with
// O_CREAT|O_EXCL, trying `base`, then `base_<run_id>`, `base_<run_id>_2`, ...,
// and returns the first stem whose names this call created, all of them. An
// existing file is never opened for writing, and two runs racing for one stem
// get two stems.
std::string claim_stem(const std::filesystem::path& dir, const std::string& base, const std::string& run_id,
                       const std::vector<std::string>& exts);

// RFC 4180 quoting where a cell needs it.
std::string csv_cell(const std::string& s);
std::string to_csv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

// A minimal JSON object builder: string, number and nested-object members, in
// insertion order.
class JsonObject {
public:
    JsonObject& str(const std::string& key, const std::string& value);
    JsonObject& num(const std::string& key, double value);
    JsonObject& integer(const std::string& key, long long value);
    JsonObject& unsigned_integer(const std::string& key, std::uint64_t value);
    JsonObject& boolean(const std::string& key, bool value);
    JsonObject& object(const std::string& key, const JsonObject& value);
    JsonObject& array_of_str(const std::string& key, const std::vector<std::string>& values);
    // Appends every member of `other`, in its order.
    JsonObject& members_of(const JsonObject& other);
    std::string dump(int indent = 0) const;
private:
    std::vector<std::pair<std::string, std::string>> members_;  // key, encoded value
};

std::string json_escape(const std::string& s);

// The sidecar's schema, one for every kind of run (ladder, probes): what the
// sidecar says of every run, plus `details` that only one kind records. The
// row count and the CSV's name are filled in by ResultFiles::write, from the
// rows it writes beside it.
struct Sidecar {
    std::string run_id;
    std::string what;           // "ladder" or "probes"
    GitState git;
    Environment env;
    std::uint64_t seed = 0;
    std::string suite;          // the named suite run (rigel ladder --suite); empty: options given one by one
    bool complete = false;      // the run reached its end
    bool interrupted = false;   // stopped early by SIGINT or SIGTERM
    JsonObject details;
};

// The sidecar as written beside `csv_name`, which holds `rows` data rows.
std::string sidecar_json(const Sidecar& s, const std::string& csv_name, std::size_t rows);

// One run's CSV and sidecar in an output folder. Constructing it claims
// <base>.csv and <base>.json (or a stem with the run id, see claim_stem).
class ResultFiles {
public:
    ResultFiles(const std::filesystem::path& dir, const std::string& base, const std::string& run_id);
    const std::filesystem::path& csv() const { return csv_; }
    const std::filesystem::path& json() const { return json_; }
    // Replaces both files with `rows` and their sidecar: both temporary files
    // are written first, then renamed, and an interrupt waits until both are
    // in place (harness/interrupt.hpp), so the sidecar's row count always
    // matches the CSV beside it.
    void write(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
               const Sidecar& side) const;
private:
    std::filesystem::path csv_, json_;
};

// Refuses an empty folder name; creates `dir` if needed and checks that a file
// can be written there; throws with a clear message otherwise. Writes nothing
// that stays.
void ensure_writable_dir(const std::filesystem::path& dir);

}  // namespace rigel
