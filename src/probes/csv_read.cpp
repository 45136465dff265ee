// An RFC 4180 reader: a small state machine over the characters.
#include "probes/csv_read.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rigel {

int CsvTable::column(std::string_view name) const {
    for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) return static_cast<int>(i);
    return -1;
}

const std::string& CsvTable::cell(std::size_t row, std::string_view name) const {
    static const std::string empty;
    const int c = column(name);
    if (c < 0 || row >= rows.size()) return empty;
    return rows[row][static_cast<std::size_t>(c)];
}

CsvTable parse_csv(std::string_view text) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string cell;
    bool quoted = false;       // inside a quoted cell
    bool was_quoted = false;   // the current cell was quoted (and closed)
    bool cell_started = false; // any character of the current record seen
    std::size_t line = 1, record_line = 1;
    auto fail = [&](const std::string& what) {
        throw std::runtime_error("csv line " + std::to_string(line) + ": " + what);
    };
    auto end_cell = [&] {
        record.push_back(std::move(cell));
        cell.clear();
        was_quoted = false;
    };
    auto end_record = [&] {
        end_cell();
        const bool blank = record.size() == 1 && record[0].empty() && !cell_started;
        if (!blank) {
            if (!records.empty() && record.size() != records.front().size())
                throw std::runtime_error("csv line " + std::to_string(record_line) + ": " +
                                         std::to_string(record.size()) + " cells, the header has " +
                                         std::to_string(records.front().size()));
            records.push_back(std::move(record));
        }
        record.clear();
        cell_started = false;
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    cell += '"';
                    ++i;
                } else {
                    quoted = false;
                    was_quoted = true;
                }
            } else {
                if (c == '\n') ++line;
                cell += c;
            }
            continue;
        }
        if (c == ',') {
            cell_started = true;
            end_cell();
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            end_record();
            ++line;
            record_line = line;
        } else if (c == '"') {
            if (!cell.empty() || was_quoted) fail("a quote inside an unquoted cell");
            quoted = true;
            cell_started = true;
        } else {
            if (was_quoted) fail("text after a closing quote");
            cell += c;
            cell_started = true;
        }
    }
    if (quoted) fail("unterminated quoted cell");
    if (cell_started || !cell.empty() || !record.empty()) end_record();

    CsvTable t;
    if (records.empty()) return t;
    t.header = std::move(records.front());
    t.rows.assign(std::make_move_iterator(records.begin() + 1), std::make_move_iterator(records.end()));
    return t;
}

std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

CsvTable read_csv_file(const std::filesystem::path& path) {
    try {
        return parse_csv(read_text_file(path));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path.string() + ": " + e.what());
    }
}

}  // namespace rigel
