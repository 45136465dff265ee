// Host tests of the probes' framework: probe selection and isolation, the CSV
// rows (the writer that never overwrites is tested in test_core.cpp). The verdict rules and the findings report
// live in reproduce/ and are tested in tests/python.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "harness/report_io.hpp"
#include "probes/probe.hpp"
#include "probes/probe_run.hpp"

using namespace rigel;

// --- relations, selection, isolation, rows -------------------------------------

TEST(DocRelationNames, RoundTrip) {
    for (DocRelation r : {DocRelation::confirms, DocRelation::fills_in, DocRelation::contradicts,
                          DocRelation::not_available}) {
        const auto back = parse_doc_relation(name(r));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(*back, r);
    }
    EXPECT_EQ(name(DocRelation::fills_in), "fills_in");
    EXPECT_FALSE(parse_doc_relation("error").has_value());
}

namespace {

std::vector<Finding> two_findings(const ProbeContext& ctx) {
    Finding a;
    a.path = "cvt.rn.satfinite.e4m3x2.f32";
    a.dtype = "e4m3";
    a.quantity = "fp32 1e6 -> e4m3";
    a.measured = "0x7E (448)";
    a.expected = "0x7E (448)";
    a.verified = true;
    a.relation = DocRelation::confirms;
    a.doc_statement = "satfinite, \"sign-preserved MAX_NORM\"";
    a.doc_source = "PTX ISA 9.0, cvt";
    a.detail = "seed " + std::to_string(ctx.seed) + ", line\nbreak";
    Finding b = a;
    b.probe = "explicit_name";
    b.relation = DocRelation::fills_in;
    b.verified = false;
    return {a, b};
}
std::vector<Finding> throws(const ProbeContext&) { throw std::runtime_error("cudaMalloc failed: out of memory"); }
std::vector<Finding> nothing(const ProbeContext&) { return {}; }

constexpr Probe kFake[] = {
    {"good", "does it work?", two_findings},
    {"broken", "does it throw?", throws},
    {"empty", "does it say anything?", nothing},
};

}  // namespace

TEST(ProbeSelection, AllAndOneAndUnknown) {
    EXPECT_EQ(select_probes(kFake, "all").size(), 3u);
    const auto one = select_probes(kFake, "broken");
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0]->name, "broken");
    try {
        select_probes(kFake, "brokn");
        FAIL() << "an unknown name must throw";
    } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("brokn"), std::string::npos);
        EXPECT_NE(msg.find("good, broken, empty"), std::string::npos);
    }
}

TEST(ProbeRunner, AFailingProbeBecomesAnErrorRowAndTheOthersRun) {
    ProbeContext ctx;
    ctx.seed = 7;
    std::vector<std::string> progress;
    ctx.progress = [&](const std::string& s) { progress.push_back(s); };
    const auto runs = run_probes(select_probes(kFake, "all"), ctx);
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_TRUE(runs[0].error.empty());
    EXPECT_EQ(runs[0].findings.size(), 2u);
    EXPECT_EQ(runs[0].findings[0].probe, "good");           // filled in from the registry
    EXPECT_EQ(runs[0].findings[1].probe, "explicit_name");  // kept
    EXPECT_EQ(runs[1].error, "cudaMalloc failed: out of memory");
    EXPECT_FALSE(runs[2].error.empty());
    EXPECT_EQ(count_errors(runs), 2);
    EXPECT_FALSE(progress.empty());

    const auto rows = probe_csv_rows(runs, "RUN1");
    ASSERT_EQ(rows.size(), 4u);
    const auto header = probe_csv_header();
    for (const auto& r : rows) EXPECT_EQ(r.size(), header.size());
    EXPECT_EQ(rows[0][0], "RUN1");
    EXPECT_EQ(rows[0][8], "1");
    EXPECT_EQ(rows[0][9], "confirms");
    EXPECT_EQ(rows[1][9], "fills_in");
    EXPECT_EQ(rows[1][8], "0");
    EXPECT_EQ(rows[2][1], "broken");
    EXPECT_EQ(rows[2][8], "0");
    EXPECT_EQ(rows[2][9], "error");
    EXPECT_EQ(rows[2][12], "cudaMalloc failed: out of memory");

    const std::string table = probe_summary_table(runs);
    EXPECT_NE(table.find("fp32 1e6 -> e4m3"), std::string::npos);  // the fills_in row is listed
    EXPECT_NE(table.find("(1 findings confirm the documentation"), std::string::npos);
    EXPECT_NE(table.find("probe failed"), std::string::npos);
    EXPECT_EQ(table.find("line\nbreak"), std::string::npos);
}

TEST(ProbeRows, HeaderIsTheTidySchema) {
    // reproduce/findings.py reads these names (PROBE_COLUMNS, PROBE_TYPED_COLUMNS).
    EXPECT_EQ(probe_csv_header(),
              (std::vector<std::string>{"run_id", "probe", "path", "dtype", "quantity", "measured", "expected", "unit",
                                        "verified", "relation", "doc_statement", "doc_source", "detail", "value",
                                        "sm_clock_mhz", "power_w", "power_max_w", "temp_c", "clock_event_mask",
                                        "kernel", "swept", "model_block", "model_frac_bits", "model_out_frac_bits",
                                        "model_align", "model_out", "model_c", "model_exp_rule", "model_lowering",
                                        "model_single_ok", "model_single_n", "model_chain_ok", "model_chain_n"}));
}

namespace {

std::vector<Finding> one_ceiling(const ProbeContext&) {
    Finding f;
    f.path = "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16";
    f.dtype = "f16";
    f.quantity = "sustained throughput ceiling";
    f.measured = "864.8";
    f.unit = "Tflop/s";
    f.verified = true;
    f.detail = "SM clock 1755 MHz (median): words for the reader only";
    f.value = 864.81234567;
    f.sm_clock_mhz = 1755;
    f.power_w = 654.25;
    f.power_max_w = 690.5;
    f.temp_c = 61;
    f.clock_event_mask = 0x4;
    f.kernel = "_ZN5rigel6probes17wgmma_tput_kernelILi256EEEvPKhS3_S3_xPdPi";
    f.swept = 17;
    Finding unmeasured = f;  // a row that sampled nothing leaves the typed cells empty
    unmeasured.value = unmeasured.sm_clock_mhz = unmeasured.power_w = Finding::kNotMeasured;
    unmeasured.power_max_w = unmeasured.temp_c = Finding::kNotMeasured;
    unmeasured.clock_event_mask.reset();
    unmeasured.kernel.clear();
    unmeasured.swept = Finding::kNotMeasured;
    return {f, unmeasured};
}

constexpr Probe kCeiling[] = {{"throughput", "how fast?", one_ceiling}};

}  // namespace

TEST(ProbeRows, MeasuredNumbersHaveTypedColumns) {
    const auto rows = probe_csv_rows(run_probes(select_probes(kCeiling, "all"), ProbeContext{}), "R");
    const auto header = probe_csv_header();
    ASSERT_EQ(rows.size(), 2u);
    const auto cell = [&](std::size_t row, const std::string& col) {
        const auto at = std::find(header.begin(), header.end(), col);
        return at == header.end() ? std::string("no such column") : rows[row][std::size_t(at - header.begin())];
    };
    EXPECT_EQ(cell(0, "value"), "864.812");
    EXPECT_EQ(cell(0, "sm_clock_mhz"), "1755");
    EXPECT_EQ(cell(0, "power_w"), "654.25");
    EXPECT_EQ(cell(0, "power_max_w"), "690.5");
    EXPECT_EQ(cell(0, "temp_c"), "61");
    EXPECT_EQ(cell(0, "clock_event_mask"), "0000000000000004");
    EXPECT_EQ(cell(0, "kernel"), "_ZN5rigel6probes17wgmma_tput_kernelILi256EEEvPKhS3_S3_xPdPi");
    EXPECT_EQ(cell(0, "swept"), "17");
    for (const char* col :
         {"value", "sm_clock_mhz", "power_w", "power_max_w", "temp_c", "clock_event_mask", "kernel", "swept"})
        EXPECT_EQ(cell(1, col), "") << col;
}

TEST(ProbeRows, TheSummaryTableCountsASweepsRowsInsteadOfListingThem) {
    const std::string table = probe_summary_table(run_probes(select_probes(kCeiling, "all"), ProbeContext{}));
    EXPECT_NE(table.find("(1 rows of a sweep; see the CSV)"), std::string::npos) << table;
    const auto first = table.find("sustained throughput ceiling");
    ASSERT_NE(first, std::string::npos) << table;  // the row outside the sweep is listed
    EXPECT_EQ(table.find("sustained throughput ceiling", first + 1), std::string::npos) << table;
}

TEST(ProbeRows, CsvQuotesCommasQuotesAndLineBreaks) {
    // RFC 4180, as reproduce/findings.py reads it with Python's csv module.
    ProbeContext ctx;
    const auto runs = run_probes(select_probes(kFake, "good"), ctx);
    const std::string csv = to_csv(probe_csv_header(), probe_csv_rows(runs, "R"));
    EXPECT_NE(csv.find(",\"satfinite, \"\"sign-preserved MAX_NORM\"\"\","), std::string::npos) << csv;
    EXPECT_NE(csv.find(",\"seed 1, line\nbreak\""), std::string::npos) << csv;
    EXPECT_NE(csv.find("\nR,good,cvt.rn.satfinite.e4m3x2.f32,e4m3,fp32 1e6 -> e4m3,0x7E (448),0x7E (448),,1,confirms,"),
              std::string::npos)
        << csv;
}

