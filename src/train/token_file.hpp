// Training data on disk: token files in llm.c's format, a loader that cuts them
// into batches in a fixed order that can be saved and resumed exactly, and the
// atomic, durable file write that token files and checkpoints share.
//
// Token file format (llm.c's, so its files work here too): a header of 256
// little-endian int32, header[0] = 20240520 (magic), header[1] = 1 (version),
// header[2] = N (token count), the rest zero; then N little-endian uint16 tokens.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace rigel::train {

inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int32_t kTokenFileVersion = 1;
inline constexpr std::size_t kTokenFileHeaderInts = 256;
inline constexpr std::size_t kTokenFileHeaderBytes = kTokenFileHeaderInts * sizeof(std::int32_t);

struct TokenFile {
    std::filesystem::path path;
    std::vector<std::uint16_t> tokens;
};

// Reads a whole token file. Throws std::invalid_argument, one sentence naming
// the file, when it is missing or unreadable, shorter than the header, has the
// wrong magic or an unsupported version, holds fewer than 2 tokens, has a size
// other than header + 2N bytes, or holds a token >= vocab_size (1..65536).
TokenFile read_token_file(const std::filesystem::path& path, int vocab_size);

// The size of `path` in bytes; throws std::invalid_argument, one sentence naming the file, when it is
// missing, not a regular file or unreadable (what read_token_file says first). Commands call it on
// their token files before asking for a device, so that a wrong path is an error on any machine.
std::uintmax_t token_file_size(const std::filesystem::path& path);

// Writes `tokens` as a token file, atomically (write_file_durably). Throws
// std::invalid_argument for more tokens than the header's int32 count holds,
// std::runtime_error when the write fails.
void write_token_file(const std::filesystem::path& path, std::span<const std::uint16_t> tokens);

// Where a DataLoader stands: the first token of the next batch, and how many
// times it has wrapped around to the start of the file.
struct LoaderState {
    std::int64_t position = 0;
    std::int64_t epoch = 0;
    bool operator==(const LoaderState&) const = default;
};

// One batch: batch_size rows of seq_len tokens, row-major. targets[i] is the
// token that follows inputs[i] in the file.
struct Batch {
    std::vector<std::int32_t> inputs;
    std::vector<std::int32_t> targets;
};

// A batch's rows grouped by token, for the embedding's backward pass without
// atomics (the deterministic mode): the rows n with inputs[n] == token_of[u]
// are rows[starts[u] .. starts[u + 1]), in increasing n; the distinct tokens
// in increasing order.
struct TokenRows {
    std::vector<std::int32_t> rows, starts, token_of;
    // rows, starts and token_of one after another: one upload
    // (cuda::train::token_rows_in reads it back as three arrays).
    std::vector<std::int32_t> packed() const;
};
TokenRows group_rows_by_token(const std::vector<std::int32_t>& inputs);

// Cuts a token file into batches in a fixed order, like llm.c's loader: batch k
// of an epoch starts at token k*B*T, its row r at k*B*T + r*T, and the targets
// are the inputs shifted by one token. When the next batch would need a token
// past the end, the loader goes back to the start and the epoch counts up; so an
// epoch is (N-1) / (B*T) batches and the last few tokens of the file are unused.
class DataLoader {
public:
    // Throws std::invalid_argument when B or T < 1, when the file holds fewer
    // than B*T+1 tokens, or when `start` does not fit the file (a state saved
    // by a loader over this file, with the same B*T, always fits).
    DataLoader(TokenFile file, int batch_size, int seq_len, LoaderState start = {});

    Batch next_batch();
    // The same into caller-owned buffers of batch_size * seq_len elements each
    // (pinned host memory, for instance); throws std::invalid_argument otherwise.
    void next_batch_into(std::span<std::int32_t> inputs, std::span<std::int32_t> targets);

    // The state before the next batch; a DataLoader constructed at it yields the
    // same batches from here on.
    LoaderState state() const { return state_; }
    int batch_size() const { return batch_size_; }
    int seq_len() const { return seq_len_; }
    std::int64_t batches_per_epoch() const;
    const TokenFile& file() const { return file_; }

private:
    TokenFile file_;
    int batch_size_;
    int seq_len_;
    LoaderState state_;
};

// Writes the concatenation of `pieces` to `path` so that a process killed at
// any moment leaves either the old file (or none) or the whole new one: a
// temporary file in the same folder is written, flushed to disk with fsync and
// renamed over `path`, then the folder is synced so the rename itself lasts.
// On failure the temporary file is removed and std::runtime_error names the
// step that failed; an existing file at `path` is never touched then.
void write_file_durably(const std::filesystem::path& path, std::span<const std::span<const std::byte>> pieces);

}  // namespace rigel::train
