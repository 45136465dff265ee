// Reading the tidy CSVs rigel writes (RFC 4180): quoted cells may hold commas,
// quotes (doubled) and line breaks.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rigel {

struct CsvTable {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;  // each as wide as the header
    // Index of a column, or -1.
    int column(std::string_view name) const;
    // The cell of `row` under `name`; empty when there is no such column.
    const std::string& cell(std::size_t row, std::string_view name) const;
};

// Throws std::runtime_error naming the line on malformed input: a quote inside
// an unquoted cell, text after a closing quote, an unterminated quote, or a
// record whose width differs from the header's. Blank lines are skipped.
CsvTable parse_csv(std::string_view text);
CsvTable read_csv_file(const std::filesystem::path& path);

std::string read_text_file(const std::filesystem::path& path);

}  // namespace rigel
