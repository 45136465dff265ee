#include "core/case_filter.hpp"

#include <algorithm>
#include <stdexcept>

namespace rigel {

std::vector<std::string> case_filter_texts(const std::string& filter) {
    std::vector<std::string> texts;
    for (std::size_t at = 0;;) {
        const std::size_t comma = filter.find(',', at);
        texts.push_back(filter.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (texts.back().empty())
            throw std::invalid_argument("--cases '" + filter + "' has an empty text between its commas");
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return texts;
}

bool name_matches(std::string_view name, const std::vector<std::string>& texts) {
    return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) { return name.find(t) != name.npos; });
}

}  // namespace rigel
