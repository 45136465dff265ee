// Reading the JSON sidecars rigel writes: a small, strict parser (RFC 8259)
// into a tree of values.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace rigel {

struct JsonValue {
    enum class Kind { null, boolean, number, string, array, object };
    Kind kind = Kind::null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<JsonValue> items;    // array elements, or object values
    std::vector<std::string> keys;   // object keys, parallel to items

    // The member `key` of an object, or nullptr.
    const JsonValue* find(std::string_view key) const;
    // The member `key` as text: strings as they are, numbers and booleans
    // written out; "" when absent or null.
    std::string text(std::string_view key) const;
};

// Throws std::runtime_error naming the offset on malformed input.
JsonValue parse_json(std::string_view text);

}  // namespace rigel
