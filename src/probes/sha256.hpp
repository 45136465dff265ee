// SHA-256 (FIPS 180-4), for naming the exact CSVs a report was made from.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace rigel {

// Lower-case hex digest of the bytes.
std::string sha256_hex(std::string_view bytes);
std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace rigel
