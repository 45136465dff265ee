// Host tests of the training I/O: token files, the DataLoader's order and
// resumption, and checkpoints (exact round trips, atomic saves, and every way a
// damaged file must be refused).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "temp_dir.hpp"
#include "train/checkpoint.hpp"
#include "train/token_file.hpp"

using namespace rigel::train;
using rigel::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<std::byte> bytes(chars.size());
    std::transform(chars.begin(), chars.end(), bytes.begin(), [](char c) { return static_cast<std::byte>(c); });
    return bytes;
}

void write_bytes(const fs::path& path, std::span<const std::byte> bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << path;
}

template <class T>
void put_at(std::vector<std::byte>& bytes, std::size_t offset, T value) {
    std::memcpy(bytes.data() + offset, &value, sizeof value);
}

template <class T>
T get_at(const std::vector<std::byte>& bytes, std::size_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

// A token file built byte by byte, independently of write_token_file: a header
// of 256 int32 (magic, version, count) and the tokens as uint16.
std::vector<std::byte> token_file_bytes(std::int32_t magic, std::int32_t version, std::int32_t count,
                                        const std::vector<std::uint16_t>& tokens) {
    std::vector<std::byte> bytes(kTokenFileHeaderBytes + 2 * tokens.size());
    put_at(bytes, 0, magic);
    put_at(bytes, 4, version);
    put_at(bytes, 8, count);
    for (std::size_t i = 0; i < tokens.size(); ++i) put_at(bytes, kTokenFileHeaderBytes + 2 * i, tokens[i]);
    return bytes;
}

// The message of the std::invalid_argument `call` throws; fails the test when
// it throws nothing or something else.
template <class Call>
std::string refusal_of(Call&& call) {
    try {
        call();
    } catch (const std::invalid_argument& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected std::invalid_argument, got: " << e.what();
        return {};
    }
    ADD_FAILURE() << "expected std::invalid_argument, nothing was thrown";
    return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One sentence that names the file: the path appears, the text ends with its
// only full stop (paths in these tests hold no ". ").
void expect_one_sentence_naming(const std::string& message, const fs::path& path) {
    EXPECT_TRUE(contains(message, path.string())) << message;
    ASSERT_FALSE(message.empty());
    EXPECT_EQ(message.back(), '.') << message;
    EXPECT_FALSE(contains(message, ". ")) << message;
}

std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::uint16_t> counting_tokens(std::size_t count) {
    std::vector<std::uint16_t> tokens(count);
    for (std::size_t i = 0; i < count; ++i) tokens[i] = static_cast<std::uint16_t>(i);
    return tokens;
}

TokenFile make_token_file(std::vector<std::uint16_t> tokens) { return TokenFile{.path = "memory", .tokens = std::move(tokens)}; }

std::vector<std::int32_t> iota_from(std::int32_t first, std::size_t count) {
    std::vector<std::int32_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = first + static_cast<std::int32_t>(i);
    return v;
}

// Random fp32 bit patterns without NaN, plus the edge values a byte-exact
// format must keep: both zeros, the smallest and largest denormals, infinities.
std::vector<float> random_floats(std::size_t count, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::vector<float> v;
    v.reserve(count + 8);
    for (float edge : {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                       std::bit_cast<float>(0x007fffffu), std::numeric_limits<float>::max(),
                       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
        v.push_back(edge);
    while (v.size() < count) {
        const auto bits = static_cast<std::uint32_t>(gen());
        // Every fourth value a denormal: exponent bits cleared.
        const std::uint32_t pattern = (v.size() % 4 == 0) ? (bits & 0x807fffffu) : bits;
        const float f = std::bit_cast<float>(pattern);
        if (f != f) continue;  // NaN
        v.push_back(f);
    }
    v.resize(count);
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Checkpoint sample_checkpoint(std::size_t parameter_count, std::string options = "{\"lr\": 0.0006, \"batch\": 4}") {
    Checkpoint c;
    c.config = ModelConfig{.layers = 12, .heads = 12, .channels = 768, .max_seq_len = 1024, .vocab_size = 50257,
                           .padded_vocab_size = 50304};
    c.step = 123456789012345;
    c.parameters = random_floats(parameter_count, 1);
    c.first_moment = random_floats(parameter_count, 2);
    c.second_moment = random_floats(parameter_count, 3);
    c.loader = LoaderState{.position = 4096, .epoch = 3};
    c.rng = RngState{.words = {0x0123456789abcdefull, 0xfedcba9876543210ull, 1, 0xffffffffffffffffull}};
    c.options = std::move(options);
    return c;
}

void expect_same_checkpoint(const Checkpoint& a, const Checkpoint& b) {
    EXPECT_EQ(a.config, b.config);
    EXPECT_EQ(a.step, b.step);
    EXPECT_TRUE(same_bits(a.parameters, b.parameters));
    EXPECT_TRUE(same_bits(a.first_moment, b.first_moment));
    EXPECT_TRUE(same_bits(a.second_moment, b.second_moment));
    EXPECT_EQ(a.loader, b.loader);
    EXPECT_EQ(a.rng, b.rng);
    EXPECT_EQ(a.options, b.options);
}

// The checkpoint layout's payload offsets (checkpoint.hpp), for tests that
// rewrite a field and then re-seal the file with a correct checksum.
constexpr std::size_t kPayload = kCheckpointHeaderBytes;
constexpr std::size_t kParameterCountAt = kPayload + 24 + 8;
constexpr std::size_t kFirstMomentCountAt = kParameterCountAt + 8;
constexpr std::size_t kOptionsBytesAt = kPayload + kCheckpointFixedFieldBytes - 8;

void reseal(std::vector<std::byte>& file) {
    put_at(file, 16, std::uint64_t{file.size() - kPayload});
    put_at(file, 24, rigel::hash64(file.data() + kPayload, file.size() - kPayload));
}

}  // namespace

// ---------------------------------------------------------------- token files

TEST(TrainTokenFile, RoundTripsAndWritesLlmcLayout) {
    TempDir dir;
    const auto tokens = std::vector<std::uint16_t>{50256, 0, 1, 65535, 1234, 7};
    write_token_file(dir / "t.bin", tokens);
    const auto bytes = read_bytes(dir / "t.bin");
    EXPECT_EQ(bytes, token_file_bytes(20240520, 1, 6, tokens));
    // Little-endian on disk: 20240520 = 0x0134D888.
    EXPECT_EQ(bytes[0], std::byte{0x88});
    EXPECT_EQ(bytes[3], std::byte{0x01});
    const TokenFile file = read_token_file(dir / "t.bin", 65536);
    EXPECT_EQ(file.tokens, tokens);
    EXPECT_EQ(file.path, dir / "t.bin");
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"t.bin"});
}

TEST(TrainTokenFile, ReadsAFileWrittenByHand) {
    TempDir dir;
    const auto tokens = counting_tokens(300);
    write_bytes(dir / "hand.bin", token_file_bytes(20240520, 1, 300, tokens));
    EXPECT_EQ(read_token_file(dir / "hand.bin", 300).tokens, tokens);
}

TEST(TrainTokenFile, RefusesMissingFileAndFolder) {
    TempDir dir;
    std::string why = refusal_of([&] { read_token_file(dir / "absent.bin", 256); });
    expect_one_sentence_naming(why, dir / "absent.bin");
    EXPECT_TRUE(contains(why, "does not exist")) << why;
    why = refusal_of([&] { read_token_file(dir.path(), 256); });
    expect_one_sentence_naming(why, dir.path());
    EXPECT_TRUE(contains(why, "not a regular file")) << why;
}

TEST(TrainTokenFile, RefusesBadHeaders) {
    TempDir dir;
    const auto tokens = counting_tokens(10);
    struct Case {
        std::string name;
        std::vector<std::byte> bytes;
        std::string says;
    };
    std::vector<Case> cases = {
        {"empty.bin", {}, "has 0 bytes, fewer than its 1024-byte header"},
        {"short.bin", std::vector<std::byte>(1023), "has 1023 bytes, fewer than its 1024-byte header"},
        {"magic.bin", token_file_bytes(20240521, 1, 10, tokens), "has magic 20240521, not 20240520"},
        {"version.bin", token_file_bytes(20240520, 2, 10, tokens), "has version 2, and only version 1"},
        {"one.bin", token_file_bytes(20240520, 1, 1, {5}), "holds 1 tokens, and training needs at least 2"},
        {"zero.bin", token_file_bytes(20240520, 1, 0, {}), "holds 0 tokens"},
        {"negative.bin", token_file_bytes(20240520, 1, -5, {}), "holds -5 tokens"},
        {"long.bin", token_file_bytes(20240520, 1, 9, tokens), "has 1044 bytes, but its header's 9 tokens make 1042"},
        {"short_body.bin", token_file_bytes(20240520, 1, 11, tokens),
         "has 1044 bytes, but its header's 11 tokens make 1046"},
    };
    auto odd = token_file_bytes(20240520, 1, 10, tokens);
    odd.push_back(std::byte{0});
    cases.push_back({"odd.bin", odd, "has 1045 bytes, but its header's 10 tokens make 1044"});
    for (const auto& c : cases) {
        write_bytes(dir / c.name, c.bytes);
        const std::string why = refusal_of([&] { read_token_file(dir / c.name, 256); });
        expect_one_sentence_naming(why, dir / c.name);
        EXPECT_TRUE(contains(why, c.says)) << c.name << ": " << why;
    }
}

TEST(TrainTokenFile, RefusesTokensOutsideTheVocabulary) {
    TempDir dir;
    write_token_file(dir / "t.bin", std::vector<std::uint16_t>{1, 2, 255, 256, 300, 4});
    EXPECT_NO_THROW(read_token_file(dir / "t.bin", 301));
    const std::string why = refusal_of([&] { read_token_file(dir / "t.bin", 256); });
    expect_one_sentence_naming(why, dir / "t.bin");
    EXPECT_TRUE(contains(why, "holds token 256 at position 3, outside the vocabulary of 256")) << why;
    for (int bad_vocab : {0, -1, 65537}) {
        const std::string bad = refusal_of([&] { read_token_file(dir / "t.bin", bad_vocab); });
        EXPECT_TRUE(contains(bad, "vocab_size of " + std::to_string(bad_vocab))) << bad;
    }
}

TEST(TrainTokenFile, FailedWriteLeavesExistingFileAndNoTemporary) {
    TempDir dir;
    write_token_file(dir / "keep.bin", counting_tokens(50));
    const auto before = read_bytes(dir / "keep.bin");
    // A folder that does not exist, and a path that is a folder with a file in it.
    EXPECT_THROW(write_token_file(dir / "no_such_folder" / "t.bin", counting_tokens(5)), std::runtime_error);
    fs::create_directory(dir / "taken");
    write_token_file(dir / "taken" / "inside.bin", counting_tokens(5));
    EXPECT_THROW(write_token_file(dir / "taken", counting_tokens(5)), std::runtime_error);
    EXPECT_EQ(read_bytes(dir / "keep.bin"), before);
    EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"keep.bin", "taken"}));
    EXPECT_EQ(names_in(dir / "taken"), std::vector<std::string>{"inside.bin"});
    // A successful write replaces the file whole.
    write_token_file(dir / "keep.bin", counting_tokens(7));
    EXPECT_EQ(read_token_file(dir / "keep.bin", 256).tokens, counting_tokens(7));
    EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"keep.bin", "taken"}));
}

// ---------------------------------------------------------------- the loader

TEST(TrainDataLoader, YieldsConsecutiveWindowsAndWraps) {
    TempDir dir;
    // 21 tokens, batches of 2 x 4: batches at 0 and 8, then 16 + 9 > 21 wraps.
    write_token_file(dir / "t.bin", counting_tokens(21));
    DataLoader loader(read_token_file(dir / "t.bin", 256), 2, 4);
    EXPECT_EQ(loader.batches_per_epoch(), 2);
    EXPECT_EQ(loader.state(), (LoaderState{0, 0}));

    const Batch b0 = loader.next_batch();
    EXPECT_EQ(b0.inputs, iota_from(0, 8));  // row 0: 0..3, row 1: 4..7
    EXPECT_EQ(b0.targets, iota_from(1, 8));
    EXPECT_EQ(loader.state(), (LoaderState{8, 0}));

    const Batch b1 = loader.next_batch();
    EXPECT_EQ(b1.inputs, iota_from(8, 8));
    EXPECT_EQ(b1.targets, iota_from(9, 8));  // the last target, 16, is the 17th token
    EXPECT_EQ(loader.state(), (LoaderState{0, 1}));

    const Batch b2 = loader.next_batch();
    EXPECT_EQ(b2.inputs, b0.inputs);
    EXPECT_EQ(b2.targets, b0.targets);
    EXPECT_EQ(loader.state(), (LoaderState{8, 1}));
    loader.next_batch();
    EXPECT_EQ(loader.state(), (LoaderState{0, 2}));
}

TEST(TrainDataLoader, AFileOfOneBatchWrapsEveryBatch) {
    DataLoader loader(make_token_file(counting_tokens(13)), 3, 4);
    EXPECT_EQ(loader.batches_per_epoch(), 1);
    for (int k = 1; k <= 3; ++k) {
        const Batch b = loader.next_batch();
        EXPECT_EQ(b.inputs, iota_from(0, 12));
        EXPECT_EQ(b.targets, iota_from(1, 12));
        EXPECT_EQ(loader.state(), (LoaderState{0, k}));
    }
}

TEST(TrainDataLoader, RowsAreConsecutiveRunsOfT) {
    std::mt19937 gen(7);
    std::vector<std::uint16_t> tokens(500);
    for (auto& t : tokens) t = static_cast<std::uint16_t>(gen() % 50257);
    const int B = 3, T = 7;
    DataLoader loader(make_token_file(tokens), B, T);
    for (int k = 0; k < 40; ++k) {
        const std::int64_t start = loader.state().position;
        const Batch b = loader.next_batch();
        for (int r = 0; r < B; ++r)
            for (int t = 0; t < T; ++t) {
                const auto at = static_cast<std::size_t>(start + r * T + t);
                ASSERT_EQ(b.inputs[static_cast<std::size_t>(r * T + t)], tokens[at]);
                ASSERT_EQ(b.targets[static_cast<std::size_t>(r * T + t)], tokens[at + 1]);
            }
    }
}

TEST(TrainDataLoader, RestoredStateContinuesWithTheSameBatches) {
    std::mt19937 gen(11);
    std::vector<std::uint16_t> tokens(1000);
    for (auto& t : tokens) t = static_cast<std::uint16_t>(gen() % 50257);
    DataLoader original(make_token_file(tokens), 3, 7);  // 47 batches an epoch
    std::vector<Batch> batches;
    std::vector<LoaderState> states;
    for (int k = 0; k < 150; ++k) {
        states.push_back(original.state());
        batches.push_back(original.next_batch());
    }
    EXPECT_EQ(original.state().epoch, 3);
    for (std::size_t k : {0u, 1u, 46u, 47u, 48u, 100u, 120u}) {
        DataLoader resumed(make_token_file(tokens), 3, 7, states[k]);
        for (std::size_t j = k; j < k + 30 && j < batches.size(); ++j) {
            EXPECT_EQ(resumed.state(), states[j]);
            const Batch b = resumed.next_batch();
            ASSERT_EQ(b.inputs, batches[j].inputs) << "resumed at " << k << ", batch " << j;
            ASSERT_EQ(b.targets, batches[j].targets) << "resumed at " << k << ", batch " << j;
        }
    }
}

TEST(TrainDataLoader, RefusesBadShapesFilesAndStates) {
    std::string why = refusal_of([] { DataLoader(make_token_file(counting_tokens(100)), 0, 4); });
    EXPECT_TRUE(contains(why, "at least 1, not 0 and 4")) << why;
    why = refusal_of([] { DataLoader(make_token_file(counting_tokens(100)), 2, -1); });
    EXPECT_TRUE(contains(why, "not 2 and -1")) << why;

    why = refusal_of([] { DataLoader(make_token_file(counting_tokens(8)), 2, 4); });
    EXPECT_TRUE(contains(why, "holds 8 tokens, and a batch of 2 x 4 needs 9")) << why;
    EXPECT_TRUE(contains(why, "memory")) << why;
    EXPECT_NO_THROW(DataLoader(make_token_file(counting_tokens(9)), 2, 4));

    // States that do not fit 21 tokens in batches of 8: the last batch start is 12.
    EXPECT_NO_THROW(DataLoader(make_token_file(counting_tokens(21)), 2, 4, LoaderState{12, 0}));
    for (LoaderState bad : {LoaderState{13, 0}, LoaderState{-1, 0}, LoaderState{0, -1}, LoaderState{1000000, 0}}) {
        why = refusal_of([&] { DataLoader(make_token_file(counting_tokens(21)), 2, 4, bad); });
        EXPECT_TRUE(contains(why, "does not fit token file")) << why;
    }

    DataLoader loader(make_token_file(counting_tokens(21)), 2, 4);
    std::vector<std::int32_t> inputs(8), targets(7);
    why = refusal_of([&] { loader.next_batch_into(inputs, targets); });
    EXPECT_TRUE(contains(why, "needs buffers of 8 tokens, not 8 and 7")) << why;
    EXPECT_EQ(loader.state(), (LoaderState{0, 0}));  // a refused call does not advance
}

// ---------------------------------------------------------------- checkpoints

TEST(TrainCheckpoint, RoundTripIsBitExact) {
    TempDir dir;
    std::string options = "{\"lr\": 6e-4,\n \"note\": \"bytes kept as given\"}";
    options.push_back('\0');
    options += "\xff after a zero byte";
    const Checkpoint saved = sample_checkpoint(1001, options);
    save_checkpoint(dir / "a.ckpt", saved);
    const Checkpoint loaded = load_checkpoint(dir / "a.ckpt");
    expect_same_checkpoint(saved, loaded);
    EXPECT_EQ(check_compatible(loaded, saved.config), "");
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"a.ckpt"});

    const Checkpoint empty = sample_checkpoint(0, "");
    save_checkpoint(dir / "empty.ckpt", empty);
    expect_same_checkpoint(empty, load_checkpoint(dir / "empty.ckpt"));
}

TEST(TrainCheckpoint, LayoutAndChecksumAreAsDocumented) {
    TempDir dir;
    // Every length mod 8 of parameters and options, so the checksum's pieces
    // split 8-byte words at every offset; it must equal hash64 of the payload.
    for (std::size_t count : {0u, 1u, 2u, 3u, 5u, 17u}) {
        for (std::size_t options_bytes = 0; options_bytes < 9; ++options_bytes) {
            const Checkpoint c = sample_checkpoint(count, std::string(options_bytes, 'x'));
            save_checkpoint(dir / "c.ckpt", c);
            const auto file = read_bytes(dir / "c.ckpt");
            const std::size_t payload = kCheckpointFixedFieldBytes + 12 * count + options_bytes;
            ASSERT_EQ(file.size(), kCheckpointHeaderBytes + payload);
            EXPECT_EQ(std::memcmp(file.data(), "RIGELCKP", 8), 0);
            EXPECT_EQ(get_at<std::uint64_t>(file, 8), 1u);
            EXPECT_EQ(get_at<std::uint64_t>(file, 16), payload);
            EXPECT_EQ(get_at<std::uint64_t>(file, 24), rigel::hash64(file.data() + kPayload, payload))
                << count << " parameters, " << options_bytes << " option bytes";
            EXPECT_EQ(get_at<std::int32_t>(file, kPayload), 12);                   // layers
            EXPECT_EQ(get_at<std::int32_t>(file, kPayload + 20), 50304);           // padded_vocab_size
            EXPECT_EQ(get_at<std::int64_t>(file, kPayload + 24), c.step);
            EXPECT_EQ(get_at<std::uint64_t>(file, kParameterCountAt), count);
            EXPECT_EQ(get_at<std::uint64_t>(file, kOptionsBytesAt), options_bytes);
            if (count > 0) {
                EXPECT_EQ(get_at<float>(file, kPayload + kCheckpointFixedFieldBytes), c.parameters[0]);
            }
        }
    }
}

TEST(TrainCheckpoint, ResumesTheLoaderExactly) {
    TempDir dir;
    std::mt19937 gen(5);
    std::vector<std::uint16_t> tokens(777);
    for (auto& t : tokens) t = static_cast<std::uint16_t>(gen() % 50257);
    write_token_file(dir / "train.bin", tokens);
    DataLoader original(read_token_file(dir / "train.bin", 50257), 4, 16);
    for (int k = 0; k < 30; ++k) original.next_batch();

    Checkpoint c = sample_checkpoint(10);
    c.loader = original.state();
    save_checkpoint(dir / "c.ckpt", c);
    DataLoader resumed(read_token_file(dir / "train.bin", 50257), 4, 16, load_checkpoint(dir / "c.ckpt").loader);
    for (int k = 0; k < 40; ++k) {
        const Batch a = original.next_batch();
        const Batch b = resumed.next_batch();
        ASSERT_EQ(a.inputs, b.inputs) << k;
        ASSERT_EQ(a.targets, b.targets) << k;
    }
    EXPECT_EQ(original.state(), resumed.state());
}

TEST(TrainCheckpoint, RefusesMissingFileAndFolder) {
    TempDir dir;
    std::string why = refusal_of([&] { load_checkpoint(dir / "absent.ckpt"); });
    expect_one_sentence_naming(why, dir / "absent.ckpt");
    EXPECT_TRUE(contains(why, "does not exist")) << why;
    why = refusal_of([&] { load_checkpoint(dir.path()); });
    EXPECT_TRUE(contains(why, "not a regular file")) << why;
}

TEST(TrainCheckpoint, RefusesEveryTruncation) {
    TempDir dir;
    save_checkpoint(dir / "full.ckpt", sample_checkpoint(9, "{\"a\": 1}"));
    const auto full = read_bytes(dir / "full.ckpt");
    const fs::path cut = dir / "cut.ckpt";
    for (std::size_t length = 0; length < full.size(); ++length) {
        write_bytes(cut, std::span(full).first(length));
        const std::string why = refusal_of([&] { load_checkpoint(cut); });
        ASSERT_TRUE(contains(why, "is truncated: it has " + std::to_string(length) + " bytes")) << why;
        if (length < kCheckpointHeaderBytes) {
            EXPECT_TRUE(contains(why, "its header alone needs 32")) << why;
        } else {
            EXPECT_TRUE(contains(why, "its header says " + std::to_string(full.size()))) << why;
        }
        expect_one_sentence_naming(why, cut);
    }
}

TEST(TrainCheckpoint, RefusesWrongMagicVersionAndTrailingBytes) {
    TempDir dir;
    save_checkpoint(dir / "good.ckpt", sample_checkpoint(4));
    const auto good = read_bytes(dir / "good.ckpt");

    auto magic = good;
    magic[7] = std::byte{'Q'};
    write_bytes(dir / "magic.ckpt", magic);
    std::string why = refusal_of([&] { load_checkpoint(dir / "magic.ckpt"); });
    expect_one_sentence_naming(why, dir / "magic.ckpt");
    EXPECT_TRUE(contains(why, "is not a rigel checkpoint")) << why;
    // A token file is not a checkpoint either, and 8 bytes are enough to say so.
    write_token_file(dir / "tokens.bin", counting_tokens(4));
    EXPECT_TRUE(contains(refusal_of([&] { load_checkpoint(dir / "tokens.bin"); }), "not a rigel checkpoint"));
    write_bytes(dir / "short.ckpt", std::span(magic).first(8));
    EXPECT_TRUE(contains(refusal_of([&] { load_checkpoint(dir / "short.ckpt"); }), "not a rigel checkpoint"));

    auto version = good;
    put_at(version, 8, std::uint64_t{2});
    write_bytes(dir / "version.ckpt", version);
    why = refusal_of([&] { load_checkpoint(dir / "version.ckpt"); });
    expect_one_sentence_naming(why, dir / "version.ckpt");
    EXPECT_TRUE(contains(why, "has format version 2, and only version 1 is supported")) << why;

    auto longer = good;
    longer.push_back(std::byte{0});
    write_bytes(dir / "long.ckpt", longer);
    why = refusal_of([&] { load_checkpoint(dir / "long.ckpt"); });
    expect_one_sentence_naming(why, dir / "long.ckpt");
    EXPECT_TRUE(contains(why, "has " + std::to_string(good.size() + 1) + " bytes, more than the " +
                                  std::to_string(good.size()) + " its header says")) << why;

    // A payload size near 2^64 must not wrap around.
    auto huge = good;
    put_at(huge, 16, std::numeric_limits<std::uint64_t>::max() - 3);
    write_bytes(dir / "huge.ckpt", huge);
    EXPECT_TRUE(contains(refusal_of([&] { load_checkpoint(dir / "huge.ckpt"); }), "is truncated"));
}

TEST(TrainCheckpoint, RefusesEveryFlippedByte) {
    TempDir dir;
    save_checkpoint(dir / "good.ckpt", sample_checkpoint(6, "{}"));
    const auto good = read_bytes(dir / "good.ckpt");
    const fs::path damaged = dir / "damaged.ckpt";
    for (std::size_t at = 0; at < good.size(); ++at) {
        for (std::byte flip : {std::byte{0x01}, std::byte{0x80}}) {
            auto bytes = good;
            bytes[at] ^= flip;
            write_bytes(damaged, bytes);
            const std::string why = refusal_of([&] { load_checkpoint(damaged); });
            ASSERT_FALSE(why.empty()) << "a flip at byte " << at << " was accepted";
            expect_one_sentence_naming(why, damaged);
            // The checksum catches every flip in the payload and in the stored checksum.
            if (at >= 24) {
                EXPECT_TRUE(contains(why, "is corrupt")) << at << ": " << why;
            }
        }
    }
}

TEST(TrainCheckpoint, RefusesSizesThatDoNotAgree) {
    TempDir dir;
    save_checkpoint(dir / "good.ckpt", sample_checkpoint(5, "{}"));
    const auto good = read_bytes(dir / "good.ckpt");
    auto expect_sizes_refused = [&](std::vector<std::byte> bytes, const std::string& says) {
        reseal(bytes);
        write_bytes(dir / "bad.ckpt", bytes);
        const std::string why = refusal_of([&] { load_checkpoint(dir / "bad.ckpt"); });
        expect_one_sentence_naming(why, dir / "bad.ckpt");
        EXPECT_TRUE(contains(why, "holds sizes that do not agree")) << why;
        EXPECT_TRUE(contains(why, says)) << why;
    };
    // A first moment longer than the parameters.
    auto bytes = good;
    put_at(bytes, kFirstMomentCountAt, std::uint64_t{6});
    expect_sizes_refused(bytes, "5 parameters, 6 first and 5 second moments");
    // Counts that agree but overrun the payload, including one that would
    // overflow 12 * count.
    bytes = good;
    for (std::uint64_t count : {std::uint64_t{6}, std::uint64_t{1} << 62}) {
        for (std::size_t field = 0; field < 3; ++field) put_at(bytes, kParameterCountAt + 8 * field, count);
        expect_sizes_refused(bytes, std::to_string(count) + " parameters");
    }
    // Options one byte longer than the payload holds.
    bytes = good;
    put_at(bytes, kOptionsBytesAt, std::uint64_t{3});
    expect_sizes_refused(bytes, "3 bytes of options");
    // A payload shorter than the fixed fields.
    bytes = std::vector<std::byte>(good.begin(), good.begin() + kPayload + 50);
    expect_sizes_refused(bytes, "its payload of 50 bytes is shorter than the 112 bytes of its fixed fields");
}

TEST(TrainCheckpoint, RefusedSaveLeavesTheOldCheckpoint) {
    TempDir dir;
    const fs::path path = dir / "run.ckpt";
    save_checkpoint(path, sample_checkpoint(20));
    const auto before = read_bytes(path);

    Checkpoint mismatched = sample_checkpoint(21);
    mismatched.first_moment.pop_back();
    std::string why = refusal_of([&] { save_checkpoint(path, mismatched); });
    expect_one_sentence_naming(why, path);
    EXPECT_TRUE(contains(why, "has 21 parameters but 20 first and 21 second moments")) << why;
    mismatched = sample_checkpoint(21);
    mismatched.second_moment.push_back(1.0f);
    why = refusal_of([&] { save_checkpoint(path, mismatched); });
    EXPECT_TRUE(contains(why, "21 first and 22 second moments")) << why;

    // Failures of the write itself: a folder that does not exist, and a path
    // that is a folder (the temporary file is written, the rename fails).
    EXPECT_THROW(save_checkpoint(dir / "missing" / "run.ckpt", sample_checkpoint(3)), std::runtime_error);
    fs::create_directory(dir / "folder");
    write_token_file(dir / "folder" / "inside.bin", counting_tokens(3));
    EXPECT_THROW(save_checkpoint(dir / "folder", sample_checkpoint(3)), std::runtime_error);

    EXPECT_EQ(read_bytes(path), before);
    EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"folder", "run.ckpt"}));
    EXPECT_EQ(names_in(dir / "folder"), std::vector<std::string>{"inside.bin"});
}

TEST(TrainCheckpoint, SaveReplacesTheOldCheckpointWhole) {
    TempDir dir;
    const fs::path path = dir / "run.ckpt";
    save_checkpoint(path, sample_checkpoint(100));
    Checkpoint next = sample_checkpoint(7, "{\"step\": 2}");
    next.step = 2;
    next.parameters[3] = -0.0f;
    save_checkpoint(path, next);
    expect_same_checkpoint(next, load_checkpoint(path));
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"run.ckpt"});
}

TEST(TrainCheckpoint, CheckCompatibleNamesTheFirstDifference) {
    const Checkpoint c = sample_checkpoint(1);
    EXPECT_EQ(check_compatible(c, c.config), "");
    struct Case {
        int ModelConfig::*field;
        int value;
        std::string says;
    };
    const std::vector<Case> cases = {
        {&ModelConfig::layers, 6, "checkpoint has 12 layers, the model 6"},
        {&ModelConfig::heads, 8, "checkpoint has 12 heads, the model 8"},
        {&ModelConfig::channels, 512, "checkpoint has 768 channels, the model 512"},
        {&ModelConfig::max_seq_len, 256, "checkpoint has max_seq_len 1024, the model 256"},
        {&ModelConfig::vocab_size, 50304, "checkpoint has vocab_size 50257, the model 50304"},
        {&ModelConfig::padded_vocab_size, 50257, "checkpoint has padded_vocab_size 50304, the model 50257"},
    };
    for (const auto& k : cases) {
        ModelConfig model = c.config;
        model.*k.field = k.value;
        EXPECT_EQ(check_compatible(c, model), k.says);
    }
    ModelConfig several = c.config;
    several.channels = 1;
    several.vocab_size = 2;
    EXPECT_EQ(check_compatible(c, several), "checkpoint has 768 channels, the model 1");
}

TEST(TokenRows, GroupsEachTokensRowsInIncreasingOrder) {
    const std::vector<std::int32_t> inputs{5, 3, 5, 50256, 3, 5, 0};
    const TokenRows g = group_rows_by_token(inputs);
    EXPECT_EQ(g.token_of, (std::vector<std::int32_t>{0, 3, 5, 50256}));
    EXPECT_EQ(g.starts, (std::vector<std::int32_t>{0, 1, 3, 6, 7}));
    EXPECT_EQ(g.rows, (std::vector<std::int32_t>{6, 1, 4, 0, 2, 5, 3}));
    const TokenRows none = group_rows_by_token({});
    EXPECT_TRUE(none.rows.empty());
    EXPECT_TRUE(none.token_of.empty());
    EXPECT_EQ(none.starts, (std::vector<std::int32_t>{0}));
}

TEST(TokenRows, PackedIsTheThreeArraysInOrder) {
    const TokenRows g = group_rows_by_token({7, 2, 7});
    EXPECT_EQ(g.packed(), (std::vector<std::int32_t>{1, 0, 2, 0, 1, 3, 2, 7}));
}
