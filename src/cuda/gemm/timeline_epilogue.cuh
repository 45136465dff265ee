// Timeline<Inner>: an epilogue policy of the ping-pong kernel that is Inner
// in every respect (the same staging, stages, stores and drain) and also
// records, per CTA, the SM's clock at the moments pingpong_kernel marks
// (sm90::TimelineEvent): for each tile of each consumer its turn, its first
// full stage, its last k-tile issued, its accumulators drained and its tile
// stored, and the cycles and k-tiles its main loop waited for a stage after
// the first (a stage not yet full when the consumer reached it); and per CTA
// its SM, its start and each consumer's end, on the clock and on the global
// timer, and the producer's first load. The probe "pingpong_timeline"
// (src/cuda/probes/throughput_pingpong_timeline.cu) reads them to say where a
// kernel's cycles go between tiles. One thread of each consumer writes them,
// once a tile; in the k-loop the timeline's kernel tests each stage before it
// waits (test_wait) and reads the clock around the waits that wait, so its
// main loop is a few instructions a k-tile longer than the library's. The
// kernels of the library's table are compiled without any of it.
#pragma once
#include <cstdint>

#include "cuda/hopper/pingpong_gemm.cuh"
#include "cuda/hopper/sm90.cuh"
#include "probes/throughput/pingpong_timeline.hpp"

namespace rigel::cuda::gemm_kernels {

// Where each word of a CTA's record lies (probes/throughput/pingpong_timeline.hpp), a word a tile for
// each sm90::TimelineEvent.
using TimelineLayout = probes::timeline::Layout;
static_assert(probes::timeline::kWords == static_cast<int>(sm90::TimelineEvent::starved_ktiles) + 1 &&
                  probes::timeline::kStarvedCycles == static_cast<int>(sm90::TimelineEvent::starved_cycles) &&
                  probes::timeline::kStored == static_cast<int>(sm90::TimelineEvent::stored),
              "the record's words in the kernel's order of events");


template <class Inner>
struct Timeline : Inner {
    struct Params : Inner::Params {
        std::uint64_t* events = nullptr;  // grid x TimelineLayout::cta_words(slots) words
        int slots = 0;                    // tiles recorded per consumer; later ones are not
    };
    static constexpr bool kTimeline = true;

    // Thread 0, before the kernel's barriers are set up.
    static __device__ __forceinline__ void mark_start(const Params& p) {
        if (threadIdx.x != 0) return;
        std::uint64_t* const w = p.events + blockIdx.x * TimelineLayout::cta_words(p.slots);
        w[0] = sm90::sm_id();
        w[1] = sm90::global_timer_ns();
        w[2] = sm90::sm_clock();
    }
    // The producer thread, as it is about to issue its first load.
    static __device__ __forceinline__ void mark_producer(const Params& p) {
        p.events[blockIdx.x * TimelineLayout::cta_words(p.slots) + 3] = sm90::sm_clock();
    }
    // The first thread of the consumer warpgroup; a tile past `slots` is counted, not recorded. A clock
    // event records the clock, a count (starved_*) `value`.
    static __device__ __forceinline__ void mark(const Params& p, int consumer, int tile, int event,
                                                std::uint64_t value) {
        if (threadIdx.x % sm90::kWarpgroup != 0 || tile >= p.slots) return;
        p.events[TimelineLayout::event_word(static_cast<int>(blockIdx.x), consumer, tile, event, p.slots)] =
            event < static_cast<int>(sm90::TimelineEvent::starved_cycles) ? sm90::sm_clock() : value;
    }
    static __device__ __forceinline__ void mark_end(const Params& p, int consumer, int tiles) {
        if (threadIdx.x % sm90::kWarpgroup != 0) return;
        std::uint64_t* const w =
            p.events + TimelineLayout::consumer_base(static_cast<int>(blockIdx.x), consumer, p.slots);
        w[0] = sm90::sm_clock();
        w[1] = sm90::global_timer_ns();
        w[2] = static_cast<std::uint64_t>(tiles);
    }
};

}  // namespace rigel::cuda::gemm_kernels
