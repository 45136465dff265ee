// The `--cases TEXT,...` filter of rigel's verify and bench commands (GEMM
// and attention alike): a case runs when its name contains one of the
// comma-separated texts.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace rigel {

// The filter's texts; std::invalid_argument, in one sentence, for an empty
// text between its commas.
std::vector<std::string> case_filter_texts(const std::string& filter);
// Whether `name` contains one of `texts`.
bool name_matches(std::string_view name, const std::vector<std::string>& texts);

}  // namespace rigel
