// Token files (read and write), the deterministic DataLoader, and the atomic,
// durable file write shared with checkpoints.
#include "train/token_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "harness/interrupt.hpp"

namespace rigel::train {

// Both formats are little-endian and are read and written by copying memory.
static_assert(std::endian::native == std::endian::little, "rigel's training files assume a little-endian host");

namespace {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& why) {
    throw std::invalid_argument("token file " + quoted(path) + " " + why);
}

}  // namespace

std::uintmax_t token_file_size(const std::filesystem::path& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) refuse(path, "does not exist.");
    if (!std::filesystem::is_regular_file(status)) refuse(path, "is not a regular file.");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) refuse(path, "cannot be read (" + ec.message() + ").");
    return size;
}

namespace {

// write() all of `bytes`, retrying after a signal and after a short write.
int write_all(int fd, std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

std::string os_error(const std::string& what, int err) { return what + " (" + std::strerror(err) + ")"; }

}  // namespace

TokenFile read_token_file(const std::filesystem::path& path, int vocab_size) {
    if (vocab_size < 1 || vocab_size > 65536)
        refuse(path, "cannot be checked against a vocab_size of " + std::to_string(vocab_size) +
                         ", which must be 1 to 65536 for uint16 tokens.");
    const std::uintmax_t size = token_file_size(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) refuse(path, "cannot be opened for reading.");
    if (size < kTokenFileHeaderBytes)
        refuse(path, "has " + std::to_string(size) + " bytes, fewer than its " +
                         std::to_string(kTokenFileHeaderBytes) + "-byte header.");

    std::array<std::int32_t, kTokenFileHeaderInts> header{};
    if (!in.read(reinterpret_cast<char*>(header.data()), kTokenFileHeaderBytes))
        refuse(path, "could not be read to the end of its header.");
    if (header[0] != kTokenFileMagic)
        refuse(path, "has magic " + std::to_string(header[0]) + ", not " + std::to_string(kTokenFileMagic) +
                         ", so it is not a token file in llm.c's format.");
    if (header[1] != kTokenFileVersion)
        refuse(path, "has version " + std::to_string(header[1]) + ", and only version " +
                         std::to_string(kTokenFileVersion) + " is supported.");
    const std::int64_t count = header[2];
    if (count < 2) refuse(path, "holds " + std::to_string(count) + " tokens, and training needs at least 2.");
    const std::uintmax_t expected = kTokenFileHeaderBytes + 2 * static_cast<std::uintmax_t>(count);
    if (size != expected)
        refuse(path, "has " + std::to_string(size) + " bytes, but its header's " + std::to_string(count) +
                         " tokens make " + std::to_string(expected) + ".");

    TokenFile file{.path = path, .tokens = std::vector<std::uint16_t>(static_cast<std::size_t>(count))};
    if (!in.read(reinterpret_cast<char*>(file.tokens.data()), static_cast<std::streamsize>(2 * count)))
        refuse(path, "ended before its " + std::to_string(count) + " tokens were read.");
    const auto bad = std::find_if(file.tokens.begin(), file.tokens.end(),
                                  [&](std::uint16_t t) { return static_cast<int>(t) >= vocab_size; });
    if (bad != file.tokens.end())
        refuse(path, "holds token " + std::to_string(*bad) + " at position " +
                         std::to_string(bad - file.tokens.begin()) + ", outside the vocabulary of " +
                         std::to_string(vocab_size) + ".");
    return file;
}

void write_token_file(const std::filesystem::path& path, std::span<const std::uint16_t> tokens) {
    if (tokens.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw std::invalid_argument("token file " + quoted(path) + " cannot hold " + std::to_string(tokens.size()) +
                                    " tokens: its header counts them in an int32.");
    std::array<std::int32_t, kTokenFileHeaderInts> header{};
    header[0] = kTokenFileMagic;
    header[1] = kTokenFileVersion;
    header[2] = static_cast<std::int32_t>(tokens.size());
    const std::array<std::span<const std::byte>, 2> pieces{std::as_bytes(std::span(header)), std::as_bytes(tokens)};
    write_file_durably(path, pieces);
}

DataLoader::DataLoader(TokenFile file, int batch_size, int seq_len, LoaderState start)
    : file_(std::move(file)), batch_size_(batch_size), seq_len_(seq_len), state_(start) {
    if (batch_size < 1 || seq_len < 1)
        throw std::invalid_argument("a DataLoader needs a batch size and a sequence length of at least 1, not " +
                                    std::to_string(batch_size) + " and " + std::to_string(seq_len) + ".");
    const std::int64_t count = static_cast<std::int64_t>(file_.tokens.size());
    const std::int64_t needed = std::int64_t{batch_size} * seq_len + 1;
    if (count < needed)
        throw std::invalid_argument("token file " + quoted(file_.path) + " holds " + std::to_string(count) +
                                    " tokens, and a batch of " + std::to_string(batch_size) + " x " +
                                    std::to_string(seq_len) + " needs " + std::to_string(needed) + ".");
    if (start.position < 0 || start.epoch < 0 || start.position > count - needed)
        throw std::invalid_argument("loader state (position " + std::to_string(start.position) + ", epoch " +
                                    std::to_string(start.epoch) + ") does not fit token file " + quoted(file_.path) +
                                    " of " + std::to_string(count) + " tokens with batches of " +
                                    std::to_string(batch_size) + " x " + std::to_string(seq_len) + ".");
}

std::int64_t DataLoader::batches_per_epoch() const {
    return (static_cast<std::int64_t>(file_.tokens.size()) - 1) / (std::int64_t{batch_size_} * seq_len_);
}

void DataLoader::next_batch_into(std::span<std::int32_t> inputs, std::span<std::int32_t> targets) {
    const std::size_t batch_tokens = static_cast<std::size_t>(batch_size_) * static_cast<std::size_t>(seq_len_);
    if (inputs.size() != batch_tokens || targets.size() != batch_tokens)
        throw std::invalid_argument("a batch of " + std::to_string(batch_size_) + " x " + std::to_string(seq_len_) +
                                    " needs buffers of " + std::to_string(batch_tokens) + " tokens, not " +
                                    std::to_string(inputs.size()) + " and " + std::to_string(targets.size()) + ".");
    // Rows are consecutive, so the batch is one run of B*T+1 tokens.
    const std::uint16_t* run = file_.tokens.data() + state_.position;
    std::copy(run, run + batch_tokens, inputs.begin());
    std::copy(run + 1, run + batch_tokens + 1, targets.begin());

    // Advance now, so that the saved state always points at a batch that fits.
    state_.position += static_cast<std::int64_t>(batch_tokens);
    if (state_.position + static_cast<std::int64_t>(batch_tokens) + 1 > static_cast<std::int64_t>(file_.tokens.size())) {
        state_.position = 0;
        ++state_.epoch;
    }
}

Batch DataLoader::next_batch() {
    const std::size_t batch_tokens = static_cast<std::size_t>(batch_size_) * static_cast<std::size_t>(seq_len_);
    Batch batch{.inputs = std::vector<std::int32_t>(batch_tokens), .targets = std::vector<std::int32_t>(batch_tokens)};
    next_batch_into(batch.inputs, batch.targets);
    return batch;
}

void write_file_durably(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces) {
    // A second SIGINT/SIGTERM waits until the temporary file is renamed or removed.
    const WriteGuard guard;
    static std::atomic<unsigned> counter{0};
    std::string temp;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; ++tries) {
        temp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
        fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) throw std::runtime_error(os_error("cannot create a temporary file for " + quoted(path), errno) + ".");

    // Every failure from here on removes the temporary file.
    auto fail = [&](const std::string& what, int err) {
        ::unlink(temp.c_str());
        throw std::runtime_error(os_error("cannot write " + quoted(path) + ": " + what, err) + ".");
    };
    int err = 0;
    for (const auto& piece : pieces) {
        if ((err = write_all(fd, piece)) != 0) break;
    }
    if (err == 0 && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) fail("writing " + temp + " failed", err);
    if (::rename(temp.c_str(), path.c_str()) != 0) fail("renaming " + temp + " over it failed", errno);

    // The rename lives in the folder; sync it too, or a crash could forget it.
    const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const int dir_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) throw std::runtime_error(os_error("wrote " + quoted(path) + " but cannot open its folder to sync it", errno) + ".");
    const int sync_err = ::fsync(dir_fd) != 0 ? errno : 0;
    ::close(dir_fd);
    // Some file systems cannot sync a folder (EINVAL); the file itself is whole either way.
    if (sync_err != 0 && sync_err != EINVAL)
        throw std::runtime_error(os_error("wrote " + quoted(path) + " but cannot sync its folder", sync_err) + ".");
}

std::vector<std::int32_t> TokenRows::packed() const {
    std::vector<std::int32_t> out(rows);
    out.insert(out.end(), starts.begin(), starts.end());
    out.insert(out.end(), token_of.begin(), token_of.end());
    return out;
}

TokenRows group_rows_by_token(const std::vector<std::int32_t>& inputs) {
    TokenRows g;
    g.rows.resize(inputs.size());
    std::iota(g.rows.begin(), g.rows.end(), 0);
    // Stable: rows of one token stay in increasing n.
    std::stable_sort(g.rows.begin(), g.rows.end(), [&](std::int32_t a, std::int32_t b) { return inputs[a] < inputs[b]; });
    for (std::size_t i = 0; i < g.rows.size(); ++i) {
        const std::int32_t t = inputs[static_cast<std::size_t>(g.rows[i])];
        if (g.token_of.empty() || g.token_of.back() != t) {
            g.token_of.push_back(t);
            g.starts.push_back(static_cast<std::int32_t>(i));
        }
    }
    g.starts.push_back(static_cast<std::int32_t>(g.rows.size()));
    return g;
}

}  // namespace rigel::train
