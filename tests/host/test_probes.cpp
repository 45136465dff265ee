// Host tests of the probes' framework: the verdict rules (accelerated, win,
// dispatch triangulation) with their boundaries, probe selection and
// isolation, the CSV rows, the no-overwrite writer, and the readers the
// findings report stands on (CSV, JSON, SHA-256).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "harness/report_io.hpp"
#include "probes/csv_read.hpp"
#include "probes/json_read.hpp"
#include "probes/probe.hpp"
#include "probes/probe_run.hpp"
#include "probes/sha256.hpp"
#include "probes/verdicts.hpp"

using namespace rigel;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::filesystem::path fresh_dir(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("rigel_test_probes_" + name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace

// --- accelerated rule ---------------------------------------------------------

TEST(AcceleratedRule, ExactlyOnePointFiveIsAccelerated) {
    const auto v = accelerated_rule(150.0, 100.0);
    EXPECT_TRUE(v.accelerated);
    EXPECT_EQ(v.label, "accelerated");
    EXPECT_DOUBLE_EQ(v.ratio, 1.5);
}

TEST(AcceleratedRule, QuotientRoundingDoesNotDecideTheBoundary) {
    ASSERT_LT(0.3 / 0.2, 1.5);  // the binary quotient falls just short
    EXPECT_TRUE(accelerated_rule(0.3, 0.2).accelerated);
}

TEST(AcceleratedRule, BelowOnePointFiveIsFootprintOnly) {
    for (double low : {149.99, 149.0, 100.0, 94.0}) {
        const auto v = accelerated_rule(low, 100.0);
        EXPECT_FALSE(v.accelerated) << low;
        EXPECT_EQ(v.label, "footprint only") << low;
    }
    EXPECT_FALSE(accelerated_rule(1.4999999, 1.0).accelerated);
}

TEST(AcceleratedRule, MissingRatesAreNotAvailable) {
    for (auto [lo, hi] : std::vector<std::pair<double, double>>{{0, 100}, {100, 0}, {kNan, 100}, {100, -1}}) {
        const auto v = accelerated_rule(lo, hi);
        EXPECT_FALSE(v.accelerated);
        EXPECT_EQ(v.label, "not available");
        EXPECT_TRUE(std::isnan(v.ratio));
    }
}

// --- win rule -----------------------------------------------------------------

TEST(WinRule, ExactlyOnePointOneZeroWinsAgainstTheStrongestBaseline) {
    const auto v = win_rule(110.0, {{"naive tiled", 20.0}, {"cuBLAS", 100.0}, {"mma.sync", 80.0}});
    EXPECT_TRUE(v.wins);
    EXPECT_EQ(v.label, "wins");
    EXPECT_EQ(v.strongest, "cuBLAS");
    EXPECT_NEAR(v.ratio, 1.10, 1e-12);
    ASSERT_LT(0.11 / 0.1, 1.1);  // binary rounding again
    EXPECT_TRUE(win_rule(0.11, {{"b", 0.1}}).wins);
}

TEST(WinRule, BelowOnePointOneZeroIsNoWin) {
    const auto v = win_rule(109.9, {{"cuBLAS", 100.0}, {"naive", 5.0}});
    EXPECT_FALSE(v.wins);
    EXPECT_EQ(v.label, "no win");
    // Beating a weak baseline by far does not count when a strong one exists.
    EXPECT_FALSE(win_rule(105.0, {{"naive", 10.0}, {"cuBLAS", 100.0}}).wins);
}

TEST(WinRule, UnmeasuredBaselinesAreIgnored) {
    EXPECT_TRUE(win_rule(120.0, {{"cuBLAS", 100.0}, {"missing", kNan}, {"zero", 0.0}}).wins);
    const auto none = win_rule(120.0, {{"missing", kNan}});
    EXPECT_EQ(none.label, "not available");
    EXPECT_FALSE(none.wins);
    EXPECT_EQ(win_rule(0.0, {{"cuBLAS", 100.0}}).label, "not available");
}

// --- dispatch triangulation ---------------------------------------------------

TEST(Triangulation, OpcodesNameTheirUnit) {
    EXPECT_EQ(unit_of_opcode("HGMMA.64x128x16.F32.BF16"), "tensor core (HGMMA)");
    EXPECT_EQ(unit_of_opcode("QGMMA.64x256x32.F32.E4M3.E4M3"), "tensor core (QGMMA)");
    EXPECT_EQ(unit_of_opcode("hmma.16816.f32.bf16"), "tensor core (HMMA, legacy warp path)");
    EXPECT_EQ(unit_of_opcode("FFMA"), "CUDA cores (FFMA)");
    EXPECT_EQ(unit_of_opcode("DMMA.8x8x4"), "tensor core (DMMA, fp64)");
    EXPECT_EQ(unit_of_opcode("LDS.128"), "");
    EXPECT_EQ(unit_of_opcode("HGMMAX"), "");  // whole mnemonics only
}

TEST(Triangulation, WgmmaPathWithAllSignalsAgreeing) {
    DispatchSignals s;
    s.measured_tflops = 620;
    s.scalar_fma_roofline_tflops = 67;
    s.sass_opcodes = {"LDS.128", "HGMMA.64x256x16.F32.BF16", "FFMA", "WARPGROUP.ARRIVE"};
    s.sustained_power_w = 690;
    s.power_limit_w = 700;
    s.sm_clock_mhz = 1500;
    s.max_sm_clock_mhz = 1980;
    const auto v = triangulate_dispatch(s);
    EXPECT_EQ(v.unit, "tensor core (HGMMA)");
    EXPECT_EQ(v.signals_available, 3);
    EXPECT_EQ(v.signals_agreeing, 3);
    EXPECT_TRUE(v.consistent);
    EXPECT_NE(v.reasoning.find("all available signals agree"), std::string::npos);
}

TEST(Triangulation, LegacyWarpPathOutranksItsFfma) {
    DispatchSignals s;
    s.sass_opcodes = {"FFMA", "HMMA.16816.F32.BF16", "IMAD"};
    s.measured_tflops = 350;
    s.scalar_fma_roofline_tflops = 67;
    const auto v = triangulate_dispatch(s);
    EXPECT_EQ(v.unit, "tensor core (HMMA, legacy warp path)");
    EXPECT_EQ(v.signals_available, 2);
    EXPECT_TRUE(v.consistent);
}

TEST(Triangulation, ScalarPathAtFullClock) {
    DispatchSignals s;
    s.sass_opcodes = {"FFMA", "LDS"};
    s.measured_tflops = 48;
    s.scalar_fma_roofline_tflops = 67;
    s.sm_clock_mhz = 1965;
    s.max_sm_clock_mhz = 1980;
    s.sustained_power_w = 420;
    s.power_limit_w = 700;
    const auto v = triangulate_dispatch(s);
    EXPECT_EQ(v.unit, "CUDA cores (FFMA)");
    EXPECT_EQ(v.signals_available, 3);
    EXPECT_TRUE(v.consistent);
}

TEST(Triangulation, MatrixOpcodeBelowTheScalarRooflineIsFlagged) {
    // RIGEL's finding on the M4 Max: a "matrix" path at 46 % of the scalar
    // roofline is no evidence of a dedicated unit.
    DispatchSignals s;
    s.sass_opcodes = {"HMMA.16816.F32"};
    s.measured_tflops = 0.46 * 67;
    s.scalar_fma_roofline_tflops = 67;
    const auto v = triangulate_dispatch(s);
    EXPECT_EQ(v.unit, "tensor core (HMMA, legacy warp path)");
    EXPECT_FALSE(v.consistent);
    EXPECT_EQ(v.signals_agreeing, 1);
    EXPECT_NE(v.reasoning.find("no evidence of a dedicated matrix unit"), std::string::npos);
}

TEST(Triangulation, CeilingBeyondTheRooflineWithoutMatrixOpcodes) {
    DispatchSignals s;
    s.measured_tflops = 300;
    s.scalar_fma_roofline_tflops = 67;
    EXPECT_EQ(triangulate_dispatch(s).unit, "tensor core (instruction not identified)");
    s.sass_opcodes = {"FFMA"};  // the listing misses the instruction doing the work
    const auto v = triangulate_dispatch(s);
    EXPECT_EQ(v.unit, "CUDA cores (FFMA)");
    EXPECT_FALSE(v.consistent);
}

TEST(Triangulation, NothingKnownIsUndetermined) {
    const auto v = triangulate_dispatch({});
    EXPECT_EQ(v.unit, "undetermined");
    EXPECT_FALSE(v.consistent);
    EXPECT_EQ(v.signals_available, 0);
}

TEST(Triangulation, PowerBoundaryIsInclusive) {
    DispatchSignals s;
    s.sass_opcodes = {"HGMMA.64x128x16.F32.F16"};
    s.sustained_power_w = 630;  // exactly 90 % of 700
    s.power_limit_w = 700;
    s.sm_clock_mhz = 1782;      // exactly 90 % of 1980
    s.max_sm_clock_mhz = 1980;
    const auto v = triangulate_dispatch(s);
    EXPECT_EQ(v.signals_available, 2);
    EXPECT_EQ(v.signals_agreeing, 2);
}

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
    EXPECT_EQ(probe_csv_header(),
              (std::vector<std::string>{"run_id", "probe", "path", "dtype", "quantity", "measured", "expected", "unit",
                                        "verified", "relation", "doc_statement", "doc_source", "detail"}));
}

TEST(ProbeRows, CsvRoundTripKeepsQuotesCommasAndLineBreaks) {
    ProbeContext ctx;
    const auto runs = run_probes(select_probes(kFake, "good"), ctx);
    const auto rows = probe_csv_rows(runs, "R");
    const CsvTable t = parse_csv(to_csv(probe_csv_header(), rows));
    ASSERT_EQ(t.rows.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(t.rows[i], rows[i]);
    EXPECT_EQ(t.cell(0, "doc_statement"), "satfinite, \"sign-preserved MAX_NORM\"");
    EXPECT_EQ(t.cell(0, "detail"), "seed 1, line\nbreak");
}

// --- writing without overwriting --------------------------------------------------

TEST(WriteFileNew, WritesOnceAndNeverReplaces) {
    const auto dir = fresh_dir("write");
    const auto p = dir / "a_probes.csv";
    write_file_new(p, "first\n");
    EXPECT_THROW(write_file_new(p, "second\n"), std::runtime_error);
    EXPECT_EQ(read_text_file(p), "first\n");
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
    EXPECT_EQ(files, 1) << "no temporary file may stay behind";
    std::filesystem::remove_all(dir);
}

TEST(WriteFileNew, FreeStemAvoidsEveryExtension) {
    const auto dir = fresh_dir("stem");
    EXPECT_EQ(free_stem(dir, "d_c_probes", "RUN", {".csv", ".json"}), "d_c_probes");
    std::ofstream(dir / "d_c_probes.json") << "{}";
    EXPECT_EQ(free_stem(dir, "d_c_probes", "RUN", {".csv", ".json"}), "d_c_probes_RUN");
    std::ofstream(dir / "d_c_probes_RUN.csv") << "x";
    EXPECT_EQ(free_stem(dir, "d_c_probes", "RUN", {".csv", ".json"}), "d_c_probes_RUN_2");
    std::filesystem::remove_all(dir);
}

// --- CSV reader -----------------------------------------------------------------

TEST(CsvReader, QuotedCellsAndLineEndings) {
    const CsvTable t = parse_csv("a,b,c\r\n1,\"x, y\",\"say \"\"hi\"\"\"\r\n\"multi\nline\",,\"\"\n\n");
    ASSERT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", "x, y", "say \"hi\""}));
    EXPECT_EQ(t.rows[1], (std::vector<std::string>{"multi\nline", "", ""}));
    EXPECT_EQ(t.column("c"), 2);
    EXPECT_EQ(t.column("z"), -1);
    EXPECT_EQ(t.cell(0, "b"), "x, y");
    EXPECT_EQ(t.cell(0, "z"), "");
}

TEST(CsvReader, NoTrailingNewlineAndEmptyLastCell) {
    const CsvTable t = parse_csv("a,b\n1,");
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", ""}));
}

TEST(CsvReader, MalformedInputIsRefusedWithItsLine) {
    for (const char* bad : {"a,b\n1,2,3\n", "a\n\"open\n", "a\nx\"y\n", "a\n\"q\"z\n"}) {
        try {
            parse_csv(bad);
            FAIL() << "accepted: " << bad;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("csv line"), std::string::npos) << e.what();
        }
    }
}

// --- JSON reader ------------------------------------------------------------------

TEST(JsonReader, ReadsWhatJsonObjectWrites) {
    JsonObject inner;
    inner.str("gpu_name", "NVIDIA H200").integer("sm", 132);
    JsonObject o;
    o.str("run_id", "20261129T130501Z-3fa9c2")
        .str("quote", "a \"b\" \\ c\nd\te")
        .num("x", 1.5)
        .integer("n", -42)
        .boolean("dirty", true)
        .array_of_str("probes", {"cvt_saturation", "fp8_gemm_overflow"})
        .object("environment", inner);
    const JsonValue v = parse_json(o.dump());
    EXPECT_EQ(v.text("run_id"), "20261129T130501Z-3fa9c2");
    EXPECT_EQ(v.text("quote"), "a \"b\" \\ c\nd\te");
    EXPECT_EQ(v.find("x")->number, 1.5);
    EXPECT_EQ(v.text("n"), "-42");
    EXPECT_EQ(v.text("dirty"), "true");
    ASSERT_EQ(v.find("probes")->items.size(), 2u);
    EXPECT_EQ(v.find("probes")->items[1].string, "fp8_gemm_overflow");
    EXPECT_EQ(v.find("environment")->text("gpu_name"), "NVIDIA H200");
    EXPECT_EQ(v.find("environment")->text("sm"), "132");
    EXPECT_EQ(v.find("absent"), nullptr);
    EXPECT_EQ(v.text("absent"), "");
}

TEST(JsonReader, UnicodeEscapes) {
    const JsonValue v = parse_json(R"({"s": "\u00e9\u20ac\ud83d\ude00", "e": [], "o": {}, "z": null})");
    EXPECT_EQ(v.text("s"), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    EXPECT_EQ(v.find("e")->kind, JsonValue::Kind::array);
    EXPECT_EQ(v.find("o")->kind, JsonValue::Kind::object);
    EXPECT_EQ(v.find("z")->kind, JsonValue::Kind::null);
}

TEST(JsonReader, MalformedInputIsRefused) {
    for (const char* bad : {"", "{", "{\"a\" 1}", "{\"a\": 1,}", "[1 2]", "\"open", "{\"a\": tru}", "01", "{} x",
                            "\"\\ud800\"", "\"a\nb\""})
        EXPECT_THROW(parse_json(bad), std::runtime_error) << bad;
}

// --- SHA-256 (FIPS 180-4 test vectors) -----------------------------------------

TEST(Sha256, KnownVectors) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // Lengths around the 55/56/64-byte padding edges differ from each other.
    EXPECT_NE(sha256_hex(std::string(55, 'x')), sha256_hex(std::string(56, 'x')));
    EXPECT_NE(sha256_hex(std::string(63, 'x')), sha256_hex(std::string(64, 'x')));
}
