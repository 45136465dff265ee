// A fresh folder for one test, made with mkdtemp so that two test runs at once
// (two build folders, ctest -j) never share it; removed with its contents when
// the test ends.
#pragma once
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace rigel::test {

class TempDir {
public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = "rigel_test_";
        if (info) name += std::string(info->test_suite_name()) + "_" + info->name() + "_";
        std::string tmpl = (std::filesystem::temp_directory_path() / (name + "XXXXXX")).string();
        if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

}  // namespace rigel::test
