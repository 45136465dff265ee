// CSV and JSON writers.
#include "harness/report_io.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace rigel {

namespace {

// Writes content to a temporary file beside `path`; returns its name.
std::string write_temp_beside(const std::filesystem::path& path, const std::string& content) {
    const auto tmp = path.string() + ".tmp." + std::to_string(::getpid());
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp);
    f << content;
    f.flush();
    if (!f) {
        f.close();
        std::filesystem::remove(tmp);
        throw std::runtime_error("write failed: " + tmp);
    }
    return tmp;
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
    const std::string tmp = write_temp_beside(path, content);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp);
        throw std::runtime_error("cannot rename " + tmp + " to " + path.string() + ": " + ec.message());
    }
}

std::string csv_cell(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + "\"";
}

std::string to_csv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    std::ostringstream out;
    auto line = [&](const std::vector<std::string>& cells) {
        for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << csv_cell(cells[i]);
        out << "\n";
    };
    line(header);
    for (const auto& r : rows) {
        if (r.size() != header.size()) throw std::logic_error("csv row width differs from header");
        line(r);
    }
    return out.str();
}

std::string json_escape(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            case '\r': o += "\\r"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    o += buf;
                } else {
                    o += static_cast<char>(c);
                }
        }
    }
    return o + "\"";
}

JsonObject& JsonObject::str(const std::string& key, const std::string& value) {
    members_.emplace_back(key, json_escape(value));
    return *this;
}

JsonObject& JsonObject::num(const std::string& key, double value) {
    if (!std::isfinite(value)) {
        members_.emplace_back(key, "null");
        return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    members_.emplace_back(key, buf);
    return *this;
}

JsonObject& JsonObject::integer(const std::string& key, long long value) {
    members_.emplace_back(key, std::to_string(value));
    return *this;
}

JsonObject& JsonObject::boolean(const std::string& key, bool value) {
    members_.emplace_back(key, value ? "true" : "false");
    return *this;
}

JsonObject& JsonObject::object(const std::string& key, const JsonObject& value) {
    members_.emplace_back(key, value.dump());
    return *this;
}

JsonObject& JsonObject::array_of_str(const std::string& key, const std::vector<std::string>& values) {
    std::string a = "[";
    for (std::size_t i = 0; i < values.size(); ++i) a += (i ? ", " : "") + json_escape(values[i]);
    members_.emplace_back(key, a + "]");
    return *this;
}

std::string JsonObject::dump(int indent) const {
    const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
    std::string o = "{\n";
    for (std::size_t i = 0; i < members_.size(); ++i) {
        std::string v = members_[i].second;
        // Re-indent nested objects.
        std::string nested;
        for (char c : v) {
            nested += c;
            if (c == '\n') nested += pad;
        }
        o += pad + json_escape(members_[i].first) + ": " + nested + (i + 1 < members_.size() ? ",\n" : "\n");
    }
    return o + std::string(static_cast<std::size_t>(indent), ' ') + "}";
}

void write_file_new(const std::filesystem::path& path, const std::string& content) {
    if (std::filesystem::exists(path)) throw std::runtime_error(path.string() + " exists; rigel never overwrites a result");
    const std::string tmp = write_temp_beside(path, content);
    // link() fails if the name appeared meanwhile: no window in which a result is replaced.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        std::filesystem::remove(tmp);
        throw std::runtime_error("cannot create " + path.string() + ": " + std::strerror(err) +
                                 (err == EEXIST ? " (rigel never overwrites a result)" : ""));
    }
    std::filesystem::remove(tmp);
}

void ensure_writable_dir(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw std::runtime_error("output folder " + dir.string() + " cannot be created" +
                                 (ec ? ": " + ec.message() : ""));
    const auto probe = dir / (".rigel_write_check." + std::to_string(::getpid()));
    {
        std::ofstream f(probe);
        if (!f) throw std::runtime_error("output folder " + dir.string() + " is not writable");
    }
    std::filesystem::remove(probe);
}

}  // namespace rigel
