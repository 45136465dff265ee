// CSV and JSON writers, file-name claims, and the sidecar.
#include "harness/report_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "harness/interrupt.hpp"

namespace rigel {

namespace {

// Writes `content` to a new temporary file beside `path` and returns its name;
// removes it and throws on any failure.
std::string write_temp_beside(const std::filesystem::path& path, const std::string& content) {
    static int counter = 0;
    std::string tmp;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; ++tries) {
        tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    std::size_t done = 0;
    int err = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            err = n < 0 ? errno : EIO;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && !err) err = errno;
    if (err) {
        ::unlink(tmp.c_str());
        throw std::runtime_error("write failed: " + tmp + ": " + std::strerror(err));
    }
    return tmp;
}

void rename_or_remove(const std::string& tmp, const std::filesystem::path& path) {
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot rename " + tmp + " to " + path.string() + ": " + std::strerror(err));
    }
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
    const WriteGuard guard;
    rename_or_remove(write_temp_beside(path, content), path);
}

std::string claim_stem(const std::filesystem::path& dir, const std::string& base, const std::string& run_id,
                       const std::vector<std::string>& exts) {
    // Creates every name of `stem` or none: a name another run holds releases
    // the ones this call took.
    auto claim = [&](const std::string& stem) {
        std::vector<std::filesystem::path> made;
        for (const auto& e : exts) {
            const auto p = dir / (stem + e);
            const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd < 0) {
                const int err = errno;
                for (const auto& m : made) ::unlink(m.c_str());
                if (err == EEXIST) return false;
                throw std::runtime_error("cannot create " + p.string() + ": " + std::strerror(err));
            }
            ::close(fd);
            made.push_back(p);
        }
        return true;
    };
    if (claim(base)) return base;
    const std::string with_id = base + "_" + run_id;
    if (claim(with_id)) return with_id;
    for (int i = 2; i < 10000; ++i) {
        const std::string s = with_id + "_" + std::to_string(i);
        if (claim(s)) return s;
    }
    throw std::runtime_error("no free file name for " + (dir / base).string());
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

JsonObject& JsonObject::unsigned_integer(const std::string& key, std::uint64_t value) {
    members_.emplace_back(key, std::to_string(value));
    return *this;
}

JsonObject& JsonObject::members_of(const JsonObject& other) {
    members_.insert(members_.end(), other.members_.begin(), other.members_.end());
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

std::string sidecar_json(const Sidecar& s, const std::string& csv_name, std::size_t rows) {
    JsonObject env;
    for (const auto& [k, v] : s.env.facts) env.str(k, v);
    JsonObject o;
    o.str("run_id", s.run_id)
        .str("what", s.what)
        .str("csv", csv_name)
        .str("tool", "rigel")
        .str("tool_version", tool_version())
        .str("git_commit", s.git.commit)
        .boolean("git_dirty", s.git.dirty)
        .unsigned_integer("seed", s.seed)
        .str("suite", s.suite)
        .boolean("complete", s.complete)
        .boolean("interrupted", s.interrupted)
        .integer("rows", static_cast<long long>(rows))
        .members_of(s.details)
        .str("environment_hash", s.env.hash)
        .object("environment", env);
    return o.dump() + "\n";
}

ResultFiles::ResultFiles(const std::filesystem::path& dir, const std::string& base, const std::string& run_id) {
    const std::string stem = claim_stem(dir, base, run_id, {".csv", ".json"});
    csv_ = dir / (stem + ".csv");
    json_ = dir / (stem + ".json");
}

void ResultFiles::write(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        const Sidecar& side) const {
    const std::string csv_text = to_csv(header, rows);
    const std::string json_text = sidecar_json(side, csv_.filename().string(), rows.size());
    const WriteGuard guard;
    const std::string csv_tmp = write_temp_beside(csv_, csv_text);
    std::string json_tmp;
    try {
        json_tmp = write_temp_beside(json_, json_text);
    } catch (...) {
        ::unlink(csv_tmp.c_str());
        throw;
    }
    try {
        rename_or_remove(csv_tmp, csv_);
    } catch (...) {
        ::unlink(json_tmp.c_str());
        throw;
    }
    rename_or_remove(json_tmp, json_);
}

void ensure_writable_dir(const std::filesystem::path& dir) {
    if (dir.empty()) throw std::invalid_argument("the output folder's name is empty");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw std::runtime_error("output folder " + dir.string() + " cannot be created" +
                                 (ec ? ": " + ec.message() : ""));
    const auto probe = dir / (".rigel_write_check." + std::to_string(::getpid()));
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) throw std::runtime_error("output folder " + dir.string() + " is not writable: " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
}

}  // namespace rigel
