// Small pieces of Hopper state as types, so that the kernels name them
// instead of repeating bit and ring arithmetic: the (stage, phase) position in
// an mbarrier ring, the wgmma shared-memory matrix descriptor, and the order
// in which a persistent kernel walks its output tiles. All are constexpr and
// compile as CUDA and as plain C++; tests/host/test_sm90_types.cpp runs them
// on the CPU.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "cuda/host_device.hpp"

namespace rigel::cuda::sm90 {

// -- the order of output tiles ------------------------------------------------
enum class Schedule : std::uint8_t { one_tile_per_cta, persistent_grouped, split_k };

// Output tile (row, column) of linear tile index `tile`: column-major, or
// (persistent_grouped) groups of group_m tile rows, each walked column by
// column, so that tiles running at the same time cover a group_m x (in flight
// / group_m) block. A cluster kernel walks tile-row groups of its pairs the
// same way (tiles_m then counts pairs).
template <Schedule S>
RIGEL_HOST_DEVICE constexpr void tile_coords(int tile, int tiles_m, int tiles_n, int group_m, int& tm, int& tn) {
    if constexpr (S != Schedule::persistent_grouped) {
        tm = tile % tiles_m;
        tn = tile / tiles_m;
    } else {
        const int per_group = group_m * tiles_n;
        const int first_m = tile / per_group * group_m;
        const int rows = tiles_m - first_m < group_m ? tiles_m - first_m : group_m;
        const int local = tile % per_group;
        tm = first_m + local % rows;
        tn = local / rows;
    }
}

// -- position in a ring of Stages mbarrier-guarded stages --------------------
// Stage s is used in rounds r = 0, 1, 2, ... (the r-th time the ring comes
// round); a wait on that use passes once the barrier's phase of parity r & 1
// has completed (PTX ISA "mbarrier", phase completion; try_wait.parity).
// advance() moves to the next stage and flips the phase on wrapping to 0.
//
// The consumer waits for its data on full[s] with parity r & 1: it starts at
// (0, 0). The producer waits for a free slot on empty[s] one phase behind: it
// starts at (0, 1), and a freshly initialized barrier counts its phase of
// parity 1 (the one before phase 0) as complete, so round 0 passes at once;
// round r > 0 passes when the consumers have released round r - 1. Producer
// and consumers walk the same sequence of uses, so their states stay in step.
template <int Stages>
class PipelineState {
public:
    static_assert(Stages >= 1, "a ring has at least one stage");
    static constexpr int kStages = Stages;

    RIGEL_HOST_DEVICE static constexpr PipelineState consumer_start() { return PipelineState(0, 0); }
    RIGEL_HOST_DEVICE static constexpr PipelineState producer_start() { return PipelineState(0, 1); }

    RIGEL_HOST_DEVICE constexpr int stage() const { return stage_; }
    RIGEL_HOST_DEVICE constexpr std::uint32_t phase() const { return phase_; }
    // The stage used just before this one (the last stage when this is 0).
    RIGEL_HOST_DEVICE constexpr int previous_stage() const { return stage_ == 0 ? Stages - 1 : stage_ - 1; }

    RIGEL_HOST_DEVICE constexpr void advance() {
        if (++stage_ == Stages) {
            stage_ = 0;
            phase_ ^= 1u;
        }
    }
    // n steps at once (n >= 0): the ping-pong consumers skip the other
    // warpgroup's k-tiles this way.
    RIGEL_HOST_DEVICE constexpr void advance(int n) {
        const int s = stage_ + n;
        phase_ ^= static_cast<std::uint32_t>((s / Stages) & 1);
        stage_ = s % Stages;
    }

private:
    RIGEL_HOST_DEVICE constexpr PipelineState(int stage, std::uint32_t phase) : stage_(stage), phase_(phase) {}
    int stage_;
    std::uint32_t phase_;
};

// -- wgmma shared-memory matrix descriptor -----------------------------------
// PTX ISA 9.0, wgmma "Matrix Descriptor Format" (9.7.15.5.1.2), 64 bits:
//   [0,14)  start address >> 4           [16,30) leading dimension byte offset >> 4
//   [32,46) stride dimension byte offset >> 4
//   [49,52) matrix base offset           [62,64) swizzle: 0 none, 1 128B, 2 64B, 3 32B
// Addresses and offsets are kept here in bytes; encode() keeps their bits
// [4,18), as the 14-bit fields do (shared memory ends below 2^18 bytes).
enum class Swizzle : std::uint8_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };

struct SmemDescriptor {
    std::uint32_t start_address = 0;         // shared-state-space byte address of the matrix
    std::uint32_t leading_byte_offset = 0;   // LBO: between core matrices along K (no swizzle), or atoms along K
    std::uint32_t stride_byte_offset = 0;    // SBO: between 8-row groups along M or N
    std::uint32_t base_offset = 0;           // 3 bits; 0 when swizzled tiles start on their pattern's boundary
    Swizzle swizzle = Swizzle::none;

    static constexpr int kStartShift = 0;
    static constexpr int kLeadingShift = 16;
    static constexpr int kStrideShift = 32;
    static constexpr int kBaseOffsetShift = 49;
    static constexpr int kSwizzleShift = 62;

    // A byte count as a 14-bit field: its bits [4,18).
    RIGEL_HOST_DEVICE static constexpr std::uint32_t field(std::uint32_t bytes) { return (bytes & 0x3FFFFu) >> 4; }

    // Built as the two 32-bit words the fields sit in, which is also what
    // keeps the kernels' machine code as it was before this type.
    RIGEL_HOST_DEVICE constexpr std::uint64_t encode() const {
        const std::uint32_t low = (field(start_address) << kStartShift) | (field(leading_byte_offset) << kLeadingShift);
        const std::uint32_t high = (field(stride_byte_offset) << (kStrideShift - 32)) |
                                   ((base_offset & 0x7u) << (kBaseOffsetShift - 32)) |
                                   ((static_cast<std::uint32_t>(swizzle) & 0x3u) << (kSwizzleShift - 32));
        return static_cast<std::uint64_t>(low) | (static_cast<std::uint64_t>(high) << 32);
    }

    // The bytes a 14-bit field at `shift` stands for.
    RIGEL_HOST_DEVICE static constexpr std::uint32_t field_bytes(std::uint64_t bits, int shift) {
        return static_cast<std::uint32_t>((bits >> shift) & 0x3FFFu) << 4;
    }

    RIGEL_HOST_DEVICE static constexpr SmemDescriptor decode(std::uint64_t bits) {
        return SmemDescriptor{.start_address = field_bytes(bits, kStartShift),
                              .leading_byte_offset = field_bytes(bits, kLeadingShift),
                              .stride_byte_offset = field_bytes(bits, kStrideShift),
                              .base_offset = static_cast<std::uint32_t>((bits >> kBaseOffsetShift) & 0x7u),
                              .swizzle = static_cast<Swizzle>((bits >> kSwizzleShift) & 0x3u)};
    }

    constexpr bool operator==(const SmemDescriptor&) const = default;
};

// A descriptor whose start address is `bytes` further on: the sum lands in the
// start-address field (bits [0,14)) as long as the address stays below 2^18,
// which shared memory does, so no other field changes. The sum is taken on the
// low 32-bit word alone (it cannot carry out of it), so that a kernel's k-loop
// adds one word per wgmma operand: as a 64-bit sum, ptxas carried into the high
// word and copied both words around it, about 12 instructions a wgmma.
RIGEL_HOST_DEVICE constexpr std::uint64_t desc_advance(std::uint64_t desc, int bytes) {
    const auto low = static_cast<std::uint32_t>(desc) + static_cast<std::uint32_t>(bytes >> 4);
    return (desc & 0xFFFFFFFF00000000ull) | low;
}

inline const char* swizzle_name(Swizzle s) {
    switch (s) {
        case Swizzle::none: return "none";
        case Swizzle::b128: return "128B";
        case Swizzle::b64: return "64B";
        case Swizzle::b32: return "32B";
    }
    return "?";
}

// One line with every field, for a debugger or a failing test:
// "start 0x00400 LBO 16 SBO 1024 base 0 swizzle 128B".
inline std::string to_string(const SmemDescriptor& d) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "start 0x%05x LBO %u SBO %u base %u swizzle %s", d.start_address,
                  d.leading_byte_offset, d.stride_byte_offset, d.base_offset, swizzle_name(d.swizzle));
    return buf;
}

}  // namespace rigel::cuda::sm90
