// A recursive-descent JSON parser. Numbers are read as double; \u escapes are
// decoded to UTF-8, surrogate pairs included.
#include "probes/json_read.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace rigel {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
    explicit Parser(std::string_view t) : t_(t) {}

    JsonValue document() {
        JsonValue v = value(0);
        skip_ws();
        if (i_ != t_.size()) fail("text after the value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("json offset " + std::to_string(i_) + ": " + what);
    }

    void skip_ws() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
    }

    bool literal(std::string_view word) {
        if (t_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }

    JsonValue value(int depth) {
        if (depth > kMaxDepth) fail("nested too deeply");
        skip_ws();
        if (i_ >= t_.size()) fail("unexpected end");
        JsonValue v;
        const char c = t_[i_];
        if (c == '{') {
            v.kind = JsonValue::Kind::object;
            ++i_;
            skip_ws();
            if (i_ < t_.size() && t_[i_] == '}') {
                ++i_;
                return v;
            }
            for (;;) {
                skip_ws();
                if (i_ >= t_.size() || t_[i_] != '"') fail("expected a key");
                v.keys.push_back(string());
                skip_ws();
                if (i_ >= t_.size() || t_[i_] != ':') fail("expected ':'");
                ++i_;
                v.items.push_back(value(depth + 1));
                skip_ws();
                if (i_ < t_.size() && t_[i_] == ',') {
                    ++i_;
                    continue;
                }
                if (i_ < t_.size() && t_[i_] == '}') {
                    ++i_;
                    return v;
                }
                fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            v.kind = JsonValue::Kind::array;
            ++i_;
            skip_ws();
            if (i_ < t_.size() && t_[i_] == ']') {
                ++i_;
                return v;
            }
            for (;;) {
                v.items.push_back(value(depth + 1));
                skip_ws();
                if (i_ < t_.size() && t_[i_] == ',') {
                    ++i_;
                    continue;
                }
                if (i_ < t_.size() && t_[i_] == ']') {
                    ++i_;
                    return v;
                }
                fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v.kind = JsonValue::Kind::string;
            v.string = string();
            return v;
        }
        if (literal("true")) {
            v.kind = JsonValue::Kind::boolean;
            v.boolean = true;
            return v;
        }
        if (literal("false")) {
            v.kind = JsonValue::Kind::boolean;
            return v;
        }
        if (literal("null")) return v;
        if (c == '-' || (c >= '0' && c <= '9')) {
            v.kind = JsonValue::Kind::number;
            v.number = number();
            return v;
        }
        fail(std::string("unexpected character '") + c + "'");
    }

    double number() {
        const std::size_t start = i_;
        if (t_[i_] == '-') ++i_;
        auto digits = [&] {
            const std::size_t d = i_;
            while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
            if (i_ == d) fail("expected a digit");
        };
        if (i_ < t_.size() && t_[i_] == '0')
            ++i_;
        else
            digits();
        if (i_ < t_.size() && t_[i_] == '.') {
            ++i_;
            digits();
        }
        if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
            ++i_;
            if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
            digits();
        }
        const std::string s(t_.substr(start, i_ - start));
        return std::strtod(s.c_str(), nullptr);
    }

    unsigned hex4() {
        if (i_ + 4 > t_.size()) fail("short \\u escape");
        unsigned u = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = t_[i_++];
            u <<= 4;
            if (h >= '0' && h <= '9') u |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f') u |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') u |= static_cast<unsigned>(h - 'A' + 10);
            else fail("bad \\u escape");
        }
        return u;
    }

    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string string() {
        ++i_;  // the opening quote
        std::string out;
        for (;;) {
            if (i_ >= t_.size()) fail("unterminated string");
            const char c = t_[i_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= t_.size()) fail("unterminated escape");
            const char e = t_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        if (t_.substr(i_, 2) != "\\u") fail("lone high surrogate");
                        i_ += 2;
                        const unsigned lo = hex4();
                        if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        fail("lone low surrogate");
                    }
                    utf8(out, cp);
                    break;
                }
                default: fail(std::string("bad escape \\") + e);
            }
        }
    }

    std::string_view t_;
    std::size_t i_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
    if (kind != Kind::object) return nullptr;
    for (std::size_t i = 0; i < keys.size(); ++i)
        if (keys[i] == key) return &items[i];
    return nullptr;
}

std::string JsonValue::text(std::string_view key) const {
    const JsonValue* v = find(key);
    if (!v) return {};
    switch (v->kind) {
        case Kind::string: return v->string;
        case Kind::boolean: return v->boolean ? "true" : "false";
        case Kind::number: {
            char buf[32];
            if (std::nearbyint(v->number) == v->number && std::fabs(v->number) < 1e15)
                std::snprintf(buf, sizeof buf, "%.0f", v->number);
            else
                std::snprintf(buf, sizeof buf, "%.17g", v->number);
            return buf;
        }
        default: return {};
    }
}

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

}  // namespace rigel
