// Writing results: tidy CSV and the JSON provenance sidecar, both atomically
// (a temporary file, then rename), so an interrupted run never damages what an
// earlier run wrote.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace rigel {

// Writes `content` to `path` through a temporary file in the same folder.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
// The same, but refuses (throws) when `path` already exists: results are never replaced.
void write_file_new(const std::filesystem::path& path, const std::string& content);

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
    JsonObject& boolean(const std::string& key, bool value);
    JsonObject& object(const std::string& key, const JsonObject& value);
    JsonObject& array_of_str(const std::string& key, const std::vector<std::string>& values);
    std::string dump(int indent = 0) const;
private:
    std::vector<std::pair<std::string, std::string>> members_;  // key, encoded value
};

std::string json_escape(const std::string& s);

// Creates `dir` if needed and checks that a file can be written there; throws
// with a clear message otherwise. Writes nothing that stays.
void ensure_writable_dir(const std::filesystem::path& dir);

}  // namespace rigel
