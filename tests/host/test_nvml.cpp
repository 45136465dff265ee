// Host tests of the NVML sampler's pure parts: the clock-event mask decoded to
// words, and raw readings aggregated into the row's DeviceSample. The sampler
// itself is exercised wherever the test runs: without NVML it must say why and
// return invalid samples; with NVML it must return a reading.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "harness/nvml_sampler.hpp"

using namespace rigel;

namespace {

RawNvmlSample reading(double sm, double mem, double power, double temp, std::uint64_t mask) {
    RawNvmlSample s;
    s.sm_clock_mhz = sm;
    s.mem_clock_mhz = mem;
    s.power_w = power;
    s.temp_c = temp;
    s.clock_event_mask = mask;
    s.have_clock_events = true;
    return s;
}

}  // namespace

// The values NVML's header gives nvmlClocksEventReason* (and the older
// nvmlClocksThrottleReason* names).
TEST(ClockEvents, BitsAreNvmls) {
    EXPECT_EQ(clock_event::gpu_idle, 0x1u);
    EXPECT_EQ(clock_event::applications_clocks_setting, 0x2u);
    EXPECT_EQ(clock_event::sw_power_cap, 0x4u);
    EXPECT_EQ(clock_event::hw_slowdown, 0x8u);
    EXPECT_EQ(clock_event::sync_boost, 0x10u);
    EXPECT_EQ(clock_event::sw_thermal_slowdown, 0x20u);
    EXPECT_EQ(clock_event::hw_thermal_slowdown, 0x40u);
    EXPECT_EQ(clock_event::hw_power_brake_slowdown, 0x80u);
    EXPECT_EQ(clock_event::display_clock_setting, 0x100u);
    EXPECT_EQ(clock_event::throttling, 0x4u | 0x8u | 0x20u | 0x40u | 0x80u);
}

TEST(ClockEvents, DescribesMasks) {
    EXPECT_EQ(describe_clock_event_mask(0), "none");
    EXPECT_EQ(describe_clock_event_mask(0x4), "sw_power_cap");
    EXPECT_EQ(describe_clock_event_mask(0x4 | 0x8), "sw_power_cap+hw_slowdown");
    EXPECT_EQ(describe_clock_event_mask(0x80 | 0x1), "gpu_idle+hw_power_brake_slowdown");
    EXPECT_EQ(describe_clock_event_mask(0x1FF),
              "gpu_idle+applications_clocks_setting+sw_power_cap+hw_slowdown+sync_boost+sw_thermal_slowdown+"
              "hw_thermal_slowdown+hw_power_brake_slowdown+display_clock_setting");
    EXPECT_EQ(describe_clock_event_mask(0x20 | 0x200 | 0x1000), "sw_thermal_slowdown+0x1200");
    EXPECT_EQ(describe_clock_event_mask(0x8000000000000000ull), "0x8000000000000000");
}

TEST(Aggregate, NoSamplesIsInvalid) {
    const DeviceSample d = aggregate({});
    EXPECT_FALSE(d.valid);
    EXPECT_FALSE(d.throttled);
}

TEST(Aggregate, AllQuantitiesMissingIsInvalid) {
    RawNvmlSample empty;
    const DeviceSample d = aggregate({empty, empty});
    EXPECT_FALSE(d.valid);
    EXPECT_TRUE(std::isnan(d.sm_clock_mhz));
    EXPECT_TRUE(std::isnan(d.power_w));
}

TEST(Aggregate, MediansMeansMaximaAndOr) {
    const DeviceSample d = aggregate({
        reading(1980, 2619, 300, 40, 0x0),
        reading(1500, 2619, 690, 55, 0x4),
        reading(1410, 2619, 700, 61, 0x1),
    });
    EXPECT_TRUE(d.valid);
    EXPECT_DOUBLE_EQ(d.sm_clock_mhz, 1500);  // median, not mean (1630)
    EXPECT_DOUBLE_EQ(d.mem_clock_mhz, 2619);
    EXPECT_DOUBLE_EQ(d.power_w, (300.0 + 690 + 700) / 3);
    EXPECT_DOUBLE_EQ(d.power_max_w, 700);
    EXPECT_DOUBLE_EQ(d.temp_c, 61);
    EXPECT_EQ(d.clock_event_mask, 0x5u);
    EXPECT_TRUE(d.throttled);
}

TEST(Aggregate, EvenCountMedianIsMidpoint) {
    const DeviceSample d = aggregate({
        reading(1000, 1, 1, 1, 0),
        reading(2000, 1, 1, 1, 0),
        reading(1700, 1, 1, 1, 0),
        reading(1500, 1, 1, 1, 0),
    });
    EXPECT_DOUBLE_EQ(d.sm_clock_mhz, 1600);
}

TEST(Aggregate, MissingReadingsAreSkippedPerQuantity) {
    RawNvmlSample no_power = reading(1800, 2619, 0, 50, 0);
    no_power.power_w = RawNvmlSample::kMissing;
    no_power.temp_c = RawNvmlSample::kMissing;
    RawNvmlSample no_clock = reading(0, 2619, 400, 45, 0);
    no_clock.sm_clock_mhz = RawNvmlSample::kMissing;
    no_clock.have_clock_events = false;
    no_clock.clock_event_mask = 0x8;  // not read: must not count
    const DeviceSample d = aggregate({no_power, no_clock});
    EXPECT_TRUE(d.valid);
    EXPECT_DOUBLE_EQ(d.sm_clock_mhz, 1800);
    EXPECT_DOUBLE_EQ(d.power_w, 400);
    EXPECT_DOUBLE_EQ(d.power_max_w, 400);
    EXPECT_DOUBLE_EQ(d.temp_c, 45);
    EXPECT_EQ(d.clock_event_mask, 0u);
    EXPECT_FALSE(d.throttled);
}

TEST(Aggregate, OnlyPowerThermalAndSlowdownReasonsThrottle) {
    for (std::uint64_t bit : {clock_event::gpu_idle, clock_event::applications_clocks_setting, clock_event::sync_boost,
                              clock_event::display_clock_setting})
        EXPECT_FALSE(aggregate({reading(1, 1, 1, 1, bit)}).throttled) << describe_clock_event_mask(bit);
    for (std::uint64_t bit : {clock_event::sw_power_cap, clock_event::hw_slowdown, clock_event::sw_thermal_slowdown,
                              clock_event::hw_thermal_slowdown, clock_event::hw_power_brake_slowdown})
        EXPECT_TRUE(aggregate({reading(1, 1, 1, 1, bit)}).throttled) << describe_clock_event_mask(bit);
}

// Holds on any machine: without NVML the sampler says why and returns invalid
// samples (no error); with NVML a short sampling window returns a reading.
TEST(MedianOverBlocks, EachQuantityOverTheValidBlocks) {
    EXPECT_FALSE(median_over_blocks({}).valid);
    EXPECT_FALSE(median_over_blocks({DeviceSample{}}).valid);
    const auto block = [](double sm, double power, double power_max, double temp, std::uint64_t mask) {
        DeviceSample d;
        d.valid = true;
        d.sm_clock_mhz = sm;
        d.mem_clock_mhz = 3201;
        d.power_w = power;
        d.power_max_w = power_max;
        d.temp_c = temp;
        d.clock_event_mask = mask;
        return d;
    };
    const DeviceSample d = median_over_blocks({block(1500, 690, 700, 60, clock_event::sw_power_cap), DeviceSample{},
                                               block(1600, 650, 660, 64, 0), block(1550, 670, 705, 62, 0)});
    EXPECT_TRUE(d.valid);
    EXPECT_DOUBLE_EQ(d.sm_clock_mhz, 1550);  // the invalid block left out
    EXPECT_DOUBLE_EQ(d.mem_clock_mhz, 3201);
    EXPECT_DOUBLE_EQ(d.power_w, 670);
    EXPECT_DOUBLE_EQ(d.power_max_w, 705);
    EXPECT_DOUBLE_EQ(d.temp_c, 64);
    EXPECT_EQ(d.clock_event_mask, clock_event::sw_power_cap);
    EXPECT_TRUE(d.throttled);
}

TEST(NvmlSampler, SaysWhyOrSamples) {
    NvmlSampler sampler("");
    const std::string why = sampler.unavailable_reason();
    sampler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * NvmlSampler::kIntervalMs));
    const DeviceSample d = sampler.stop();
    if (why.empty()) {
        EXPECT_TRUE(d.valid);
        EXPECT_TRUE(std::isfinite(d.sm_clock_mhz));
        EXPECT_FALSE(sampler.describe().empty());
    } else {
        EXPECT_FALSE(d.valid);
        const auto facts = sampler.describe();
        ASSERT_EQ(facts.size(), 1u);
        EXPECT_EQ(facts[0].first, "nvml");
        EXPECT_EQ(facts[0].second, why);
    }
    EXPECT_FALSE(sampler.stop().valid);  // stop without start: nothing sampled
}
