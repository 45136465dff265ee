// Training checkpoints: everything a run needs to continue bit for bit (the
// fp32 master parameters, AdamW's two moments, the step, the data loader's
// state, the options it ran with), saved atomically and checked on load. The
// layout has room for a random generator's state, but `rigel train run`
// writes zeros there: training draws no random numbers after the
// initialization (which the seed in the options fixes), so there is no
// generator state to continue.
//
// File layout (version 1), all little-endian:
//   header, 32 bytes: magic "RIGELCKP" (8 bytes), version (u64),
//                     payload size in bytes (u64), checksum of the payload (u64)
//   payload:          6 x i32 model config (layers, heads, channels, max_seq_len,
//                     vocab_size, padded_vocab_size), i64 step, u64 parameter
//                     count, u64 first-moment count, u64 second-moment count,
//                     i64 loader position, i64 loader epoch, 4 x u64 RNG state,
//                     u64 options size in bytes (112 bytes in all); then the
//                     parameters, first moments and second moments as f32, then
//                     the options text.
// The checksum is rigel::hash64 (core/hash.hpp) of the payload's bytes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/gpt2.hpp"
#include "train/token_file.hpp"

namespace rigel::train {

inline constexpr std::array<char, 8> kCheckpointMagic{'R', 'I', 'G', 'E', 'L', 'C', 'K', 'P'};
inline constexpr std::uint64_t kCheckpointVersion = 1;
inline constexpr std::size_t kCheckpointHeaderBytes = 32;
inline constexpr std::size_t kCheckpointFixedFieldBytes = 112;  // the payload before the float arrays

// The model a checkpoint belongs to (train/gpt2.hpp).
using ModelConfig = Gpt2Config;

// The state of a 256-bit generator such as xoshiro256: all zeros in the
// checkpoints of `rigel train run`, whose steps draw no random numbers.
struct RngState {
    std::array<std::uint64_t, 4> words{};
    bool operator==(const RngState&) const = default;
};

struct Checkpoint {
    ModelConfig config;
    std::int64_t step = 0;
    std::vector<float> parameters;     // fp32 master copy
    std::vector<float> first_moment;   // AdamW m, one per parameter
    std::vector<float> second_moment;  // AdamW v, one per parameter
    LoaderState loader;
    RngState rng;         // zeros from the training loop (see RngState)
    std::string options;  // the training options as JSON text, stored as given
};

// Writes `checkpoint` to `path` atomically and durably (write_file_durably):
// a run killed at any moment leaves the old checkpoint or the new one, never a
// torn file. Throws std::invalid_argument, before touching the disk, when a
// moment vector's length differs from the parameters'; std::runtime_error when
// the write fails.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

// Reads a checkpoint written by save_checkpoint, exactly. Throws
// std::invalid_argument, one sentence naming the file, when it is missing,
// truncated (with the size expected), has the wrong magic or an unsupported
// version, fails its checksum (corrupt), or holds sizes that do not agree.
Checkpoint load_checkpoint(const std::filesystem::path& path);

// Empty when the checkpoint's model config is `expected`; otherwise one
// sentence naming the first field that differs and both values, e.g.
// "checkpoint has 12 layers, the model 6".
std::string check_compatible(const Checkpoint& checkpoint, const ModelConfig& expected);

}  // namespace rigel::train
