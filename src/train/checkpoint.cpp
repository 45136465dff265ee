// Saving and loading training checkpoints (layout in checkpoint.hpp).
#include "train/checkpoint.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <span>
#include <stdexcept>
#include <system_error>

#include "core/hash.hpp"

namespace rigel::train {

static_assert(std::endian::native == std::endian::little, "rigel's checkpoints assume a little-endian host");

namespace {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& why) {
    throw std::invalid_argument("checkpoint " + quoted(path) + " " + why);
}

// rigel::hash64 of a byte string that arrives in pieces: the payload is never
// copied into one buffer (GPT-2's is 1.5 GB). A test holds the two equal.
class PayloadChecksum {
public:
    explicit PayloadChecksum(std::uint64_t total_bytes) : hash_(kSeed ^ (total_bytes * kGolden)) {}

    void add(std::span<const std::byte> bytes) {
        std::size_t i = 0;
        while (pending_count_ > 0 && i < bytes.size()) {
            pending_[pending_count_++] = bytes[i++];
            if (pending_count_ == 8) {
                absorb(pending_.data());
                pending_count_ = 0;
            }
        }
        for (; i + 8 <= bytes.size(); i += 8) absorb(bytes.data() + i);
        for (; i < bytes.size(); ++i) pending_[pending_count_++] = bytes[i];
    }

    std::uint64_t finish() const {
        std::uint64_t tail = 0;
        std::memcpy(&tail, pending_.data(), pending_count_);
        return mix64(hash_ ^ tail ^ pending_count_);
    }

private:
    // hash64's constants (core/hash.hpp).
    static constexpr std::uint64_t kSeed = 0x5249474548415348ull;
    static constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

    void absorb(const std::byte* word_bytes) {
        std::uint64_t word;
        std::memcpy(&word, word_bytes, 8);
        hash_ = mix64(hash_ ^ word) + kGolden;
    }

    std::uint64_t hash_;
    std::array<std::byte, 8> pending_{};
    std::size_t pending_count_ = 0;
};

// Fixed-size fields written to and read from a byte buffer in order.
class FieldWriter {
public:
    explicit FieldWriter(std::span<std::byte> out) : out_(out) {}
    template <class T>
    void put(T value) {
        std::memcpy(out_.data() + at_, &value, sizeof value);
        at_ += sizeof value;
    }
    std::size_t written() const { return at_; }

private:
    std::span<std::byte> out_;
    std::size_t at_ = 0;
};

class FieldReader {
public:
    explicit FieldReader(std::span<const std::byte> in) : in_(in) {}
    template <class T>
    T get() {
        T value;
        std::memcpy(&value, in_.data() + at_, sizeof value);
        at_ += sizeof value;
        return value;
    }

private:
    std::span<const std::byte> in_;
    std::size_t at_ = 0;
};

using FixedFields = std::array<std::byte, kCheckpointFixedFieldBytes>;
using Header = std::array<std::byte, kCheckpointHeaderBytes>;

// The payload's fixed fields as stored, with the sizes still unchecked.
struct StoredFields {
    ModelConfig config;
    std::int64_t step = 0;
    std::uint64_t parameter_count = 0;
    std::uint64_t first_moment_count = 0;
    std::uint64_t second_moment_count = 0;
    LoaderState loader;
    RngState rng;
    std::uint64_t options_bytes = 0;
};

FixedFields encode_fields(const Checkpoint& c) {
    FixedFields bytes{};
    FieldWriter w(bytes);
    for (int v : {c.config.layers, c.config.heads, c.config.channels, c.config.max_seq_len, c.config.vocab_size,
                  c.config.padded_vocab_size})
        w.put(std::int32_t{v});
    w.put(std::int64_t{c.step});
    w.put(std::uint64_t{c.parameters.size()});
    w.put(std::uint64_t{c.first_moment.size()});
    w.put(std::uint64_t{c.second_moment.size()});
    w.put(std::int64_t{c.loader.position});
    w.put(std::int64_t{c.loader.epoch});
    for (std::uint64_t word : c.rng.words) w.put(word);
    w.put(std::uint64_t{c.options.size()});
    if (w.written() != bytes.size()) throw std::logic_error("checkpoint fixed fields: layout and size disagree");
    return bytes;
}

StoredFields decode_fields(const FixedFields& bytes) {
    FieldReader r(bytes);
    StoredFields f;
    for (int* v : {&f.config.layers, &f.config.heads, &f.config.channels, &f.config.max_seq_len,
                   &f.config.vocab_size, &f.config.padded_vocab_size})
        *v = r.get<std::int32_t>();
    f.step = r.get<std::int64_t>();
    f.parameter_count = r.get<std::uint64_t>();
    f.first_moment_count = r.get<std::uint64_t>();
    f.second_moment_count = r.get<std::uint64_t>();
    f.loader.position = r.get<std::int64_t>();
    f.loader.epoch = r.get<std::int64_t>();
    for (std::uint64_t& word : f.rng.words) word = r.get<std::uint64_t>();
    f.options_bytes = r.get<std::uint64_t>();
    return f;
}

// True when the counts fill a payload of `payload_bytes` exactly, the three
// float arrays having one length.
bool sizes_agree(const StoredFields& f, std::uint64_t payload_bytes) {
    if (f.first_moment_count != f.parameter_count || f.second_moment_count != f.parameter_count) return false;
    const std::uint64_t after_fields = payload_bytes - kCheckpointFixedFieldBytes;
    if (f.parameter_count > after_fields / (3 * sizeof(float))) return false;
    return f.options_bytes == after_fields - 3 * sizeof(float) * f.parameter_count;
}

template <class T>
std::span<std::byte> writable_bytes_of(std::vector<T>& v) {
    return std::as_writable_bytes(std::span(v));
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
    const std::size_t count = checkpoint.parameters.size();
    if (checkpoint.first_moment.size() != count || checkpoint.second_moment.size() != count)
        throw std::invalid_argument("checkpoint " + quoted(path) + " was not saved: it has " + std::to_string(count) +
                                    " parameters but " + std::to_string(checkpoint.first_moment.size()) +
                                    " first and " + std::to_string(checkpoint.second_moment.size()) +
                                    " second moments, and AdamW keeps one of each per parameter.");

    const FixedFields fields = encode_fields(checkpoint);
    const std::array<std::span<const std::byte>, 5> payload{
        std::span<const std::byte>(fields), std::as_bytes(std::span(checkpoint.parameters)),
        std::as_bytes(std::span(checkpoint.first_moment)), std::as_bytes(std::span(checkpoint.second_moment)),
        std::as_bytes(std::span(checkpoint.options))};
    std::uint64_t payload_bytes = 0;
    for (const auto& piece : payload) payload_bytes += piece.size();
    PayloadChecksum checksum(payload_bytes);
    for (const auto& piece : payload) checksum.add(piece);

    Header header{};
    FieldWriter w(header);
    for (char c : kCheckpointMagic) w.put(c);
    w.put(kCheckpointVersion);
    w.put(payload_bytes);
    w.put(checksum.finish());

    std::array<std::span<const std::byte>, 6> pieces{std::span<const std::byte>(header)};
    std::copy(payload.begin(), payload.end(), pieces.begin() + 1);
    write_file_durably(path, pieces);
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) refuse(path, "does not exist.");
    if (!std::filesystem::is_regular_file(status)) refuse(path, "is not a regular file.");
    const std::uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) refuse(path, "cannot be read (" + ec.message() + ").");
    std::ifstream in(path, std::ios::binary);
    if (!in) refuse(path, "cannot be opened for reading.");
    auto read_into = [&](std::span<std::byte> out) {
        if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size())))
            refuse(path, "could not be read to its end (did it change while being read?).");
    };

    // The header.
    Header header{};
    read_into(std::span(header).first(std::min<std::uint64_t>(size, header.size())));
    if (size >= kCheckpointMagic.size() &&
        std::memcmp(header.data(), kCheckpointMagic.data(), kCheckpointMagic.size()) != 0)
        refuse(path, "is not a rigel checkpoint: it does not begin with the magic 'RIGELCKP'.");
    if (size < kCheckpointHeaderBytes)
        refuse(path, "is truncated: it has " + std::to_string(size) + " bytes, and its header alone needs " +
                         std::to_string(kCheckpointHeaderBytes) + ".");
    FieldReader h{std::span(header).subspan(kCheckpointMagic.size())};
    const auto version = h.get<std::uint64_t>();
    const auto payload_bytes = h.get<std::uint64_t>();
    const auto stored_checksum = h.get<std::uint64_t>();
    if (version != kCheckpointVersion)
        refuse(path, "has format version " + std::to_string(version) + ", and only version " +
                         std::to_string(kCheckpointVersion) + " is supported.");
    constexpr std::uint64_t kLargest = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t expected =
        payload_bytes > kLargest - kCheckpointHeaderBytes ? kLargest : kCheckpointHeaderBytes + payload_bytes;
    if (size < expected)
        refuse(path, "is truncated: it has " + std::to_string(size) + " bytes, and its header says " +
                         std::to_string(expected) + ".");
    if (size > expected)
        refuse(path, "has " + std::to_string(size) + " bytes, more than the " + std::to_string(expected) +
                         " its header says.");

    // The payload. Its sizes are checked before anything is allocated, and the
    // checksum decides whether sizes that disagree are damage or a bad writer.
    PayloadChecksum checksum(payload_bytes);
    auto refuse_if_corrupt = [&] {
        if (checksum.finish() != stored_checksum)
            refuse(path, "is corrupt: its payload does not match the checksum in its header.");
    };
    auto refuse_sizes = [&](const std::string& what) {
        // Hash what is left, so that damage is called damage.
        std::vector<std::byte> chunk(1 << 20);
        for (std::uint64_t left = size - static_cast<std::uint64_t>(in.tellg()); left > 0;) {
            const auto n = std::min<std::uint64_t>(left, chunk.size());
            read_into(std::span(chunk).first(n));
            checksum.add(std::span(chunk).first(n));
            left -= n;
        }
        refuse_if_corrupt();
        refuse(path, "holds sizes that do not agree: " + what + ".");
    };
    if (payload_bytes < kCheckpointFixedFieldBytes)
        refuse_sizes("its payload of " + std::to_string(payload_bytes) + " bytes is shorter than the " +
                     std::to_string(kCheckpointFixedFieldBytes) + " bytes of its fixed fields");
    FixedFields fields{};
    read_into(fields);
    checksum.add(fields);
    const StoredFields stored = decode_fields(fields);
    if (!sizes_agree(stored, payload_bytes))
        refuse_sizes(std::to_string(stored.parameter_count) + " parameters, " +
                     std::to_string(stored.first_moment_count) + " first and " +
                     std::to_string(stored.second_moment_count) + " second moments and " +
                     std::to_string(stored.options_bytes) + " bytes of options in a payload of " +
                     std::to_string(payload_bytes) + " bytes");

    Checkpoint c;
    c.config = stored.config;
    c.step = stored.step;
    c.loader = stored.loader;
    c.rng = stored.rng;
    const auto count = static_cast<std::size_t>(stored.parameter_count);
    c.parameters.resize(count);
    c.first_moment.resize(count);
    c.second_moment.resize(count);
    c.options.resize(static_cast<std::size_t>(stored.options_bytes));
    for (auto* v : {&c.parameters, &c.first_moment, &c.second_moment}) {
        read_into(writable_bytes_of(*v));
        checksum.add(std::as_bytes(std::span(*v)));
    }
    read_into(std::as_writable_bytes(std::span(c.options)));
    checksum.add(std::as_bytes(std::span(c.options)));
    refuse_if_corrupt();
    return c;
}

std::string check_compatible(const Checkpoint& checkpoint, const ModelConfig& expected) {
    struct Field {
        const char* name;
        int ModelConfig::*member;
        bool counted;  // "12 layers" rather than "max_seq_len 1024"
    };
    static constexpr Field kFields[] = {
        {"layers", &ModelConfig::layers, true},
        {"heads", &ModelConfig::heads, true},
        {"channels", &ModelConfig::channels, true},
        {"max_seq_len", &ModelConfig::max_seq_len, false},
        {"vocab_size", &ModelConfig::vocab_size, false},
        {"padded_vocab_size", &ModelConfig::padded_vocab_size, false},
    };
    for (const Field& f : kFields) {
        const int have = checkpoint.config.*f.member;
        const int want = expected.*f.member;
        if (have == want) continue;
        if (f.counted)
            return "checkpoint has " + std::to_string(have) + " " + f.name + ", the model " + std::to_string(want);
        return "checkpoint has " + std::string(f.name) + " " + std::to_string(have) + ", the model " +
               std::to_string(want);
    }
    return {};
}

}  // namespace rigel::train
