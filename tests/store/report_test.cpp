// The report renderer: the HTML and its SVG plots parse, user text is escaped, curves land where
// their figures say, degenerate data draws no NaN, and the JSON gives the figures back.
#include "store/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <sys/wait.h>

#include "core/error.h"

namespace kevo::store {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

ReportSeries curve(const std::string& task, const std::string& arm, const std::string& seed,
                   std::vector<CurvePoint> points) {
  ReportSeries s;
  s.task = task;
  s.arm = arm;
  s.seed = seed;
  s.points = std::move(points);
  return s;
}

// Two tasks: per-seed curves, a mean with a band, unknown figures, notes.
ReportData sample() {
  ReportData d;
  d.campaign_id = "c-2024-07-01-a";
  d.kevo_version = "0.1.0";
  d.kevo_commit = "83ba692";
  d.gpu = "NVIDIA H200";
  d.created = "2024-07-01T12:00:00Z";
  d.command = "kevo search tasks/softmax_rows.json --arms random,learned --seeds 2";
  d.notes = {"replay: 12 proposals had no recording"};
  d.fitness = "weighted_time_v1";
  d.series.push_back(curve("softmax_rows", "random", "1", {{1, 0.02}, {40, 0.4}, {120, 1.1}, {400, 1.9}}));
  d.series.push_back(curve("softmax_rows", "random", "2", {{1, 0.0}, {10, 0.05}, {200, 1.5}, {400, 1.6}}));
  ReportSeries mean = curve("softmax_rows", "random", "mean", {{100, 0.8}, {200, 1.3}, {300, 1.6}, {400, 1.75}});
  mean.band = {{0.5, 1.0}, {1.1, 1.5}, {1.4, 1.8}, {1.6, 1.9}};
  mean.band_label = "95% bootstrap interval over 2 seeds";
  d.series.push_back(mean);
  d.series.push_back(curve("rms_norm", "learned", "7", {{1, 1.2}, {50, 1.3}, {90, 1.45}}));

  TaskSummary t;
  t.task = "softmax_rows";
  t.runs = 2;
  t.evaluations = 800;
  t.unmeasured = 12;
  t.duplicates = 31;
  t.best_fitness = 1.9;
  t.best_vs_compile = 1.25;
  t.best_variant = "reduce_rows{threads=256, vec=4, single_pass=1}";
  t.gpu_busy = 0.83;
  t.workloads = {{0, "B=4096 D=393216", 3.1, 5.9, 4.0, 2.9, 1.903, 93.5, 1, 4.0, true},
                 {1, "B=16 D=16384", 0.0102, 0.0194, 0, 0, 1.902, 0, 1, 1.0, true},
                 {2, "B=3 D=17", 0, 0, 0, 0.001, 0, 0, 1, 1.0, false}};
  d.tasks.push_back(t);
  TaskSummary r;
  r.task = "rms_norm";
  r.runs = 1;
  r.evaluations = 90;
  r.best_fitness = 1.45;
  r.best_variant = "normalize_rows{threads=128}";
  r.workloads = {{0, "B=8 D=4096", 0.005, 0.00725, 0, 0.004, 1.45, 80.0}};
  d.tasks.push_back(r);
  return d;
}

struct Checked {
  int status = -1;
  std::string out;
};

// Runs tests/store/check_html.py on `text` (written to a file): well-formed SVG and nesting.
Checked check_with_python(const std::string& text, const std::string& name) {
  const std::string path = ::testing::TempDir() + "kevo_report_" + name + "_" + std::to_string(getpid()) + ".html";
  std::ofstream(path, std::ios::binary) << text;
  const std::string cmd = std::string(kPython) + " " + KEVO_SOURCE_ROOT + "/tests/store/check_html.py " + path + " 2>&1";
  Checked c;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return c;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) c.out.append(buf.data(), n);
  const int raw = pclose(p);
  c.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  std::remove(path.c_str());
  return c;
}

#define SKIP_WITHOUT_PYTHON()                                                          \
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is absent: the XML and HTML " \
                                                  "checks need Python's standard library"

struct Pt {
  double x, y;
};

std::vector<Pt> parse_points(const std::string& attr) {
  std::vector<Pt> pts;
  std::istringstream in(attr);
  std::string pair;
  while (in >> pair) {
    const size_t comma = pair.find(',');
    pts.push_back({std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1))});
  }
  return pts;
}

// The `points` of every element `<tag class="cls" ...>` in `svg`.
std::vector<std::vector<Pt>> shapes(const std::string& svg, const std::string& tag, const std::string& cls) {
  std::vector<std::vector<Pt>> out;
  const std::regex re("<" + tag + " class=\"" + cls + "\" points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(parse_points((*it)[1]));
  return out;
}

struct Frame {
  double x0, y0, x1, y1;
};

Frame frame_of(const std::string& svg) {
  std::smatch m;
  const std::regex re(R"re(<rect class="frame" x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)")re");
  EXPECT_TRUE(std::regex_search(svg, m, re)) << svg;
  if (m.empty()) return {0, 0, 0, 0};
  const double x = std::stod(m[1]), y = std::stod(m[2]);
  return {x, y, x + std::stod(m[3]), y + std::stod(m[4])};
}

void expect_inside(const std::vector<Pt>& pts, const Frame& f) {
  for (const Pt& p : pts) {
    EXPECT_GE(p.x, f.x0 - 1e-9);
    EXPECT_LE(p.x, f.x1 + 1e-9);
    EXPECT_GE(p.y, f.y0 - 1e-9);
    EXPECT_LE(p.y, f.y1 + 1e-9);
  }
}

void expect_no_nan(const std::string& text) {
  for (const char* bad : {"nan", "NaN", "inf", "Inf"}) EXPECT_EQ(text.find(bad), std::string::npos) << bad;
}

TEST(Report, HtmlNestsAndEverySvgIsWellFormedXml) {
  SKIP_WITHOUT_PYTHON();
  const Checked c = check_with_python(render_html(sample()), "sample");
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_EQ(c.out, "ok: 2 svg\n");  // one plot per task
}

TEST(Report, TheCheckerCatchesWhatItLooksFor) {
  SKIP_WITHOUT_PYTHON();
  const std::string ok = render_html(sample());
  std::string unclosed = ok;
  unclosed.replace(unclosed.find("</table>"), 8, "");
  EXPECT_NE(check_with_python(unclosed, "unclosed").status, 0);
  std::string bad_svg = ok;
  bad_svg.replace(bad_svg.find("/>", bad_svg.find("<polyline")), 2, ">");
  EXPECT_NE(check_with_python(bad_svg, "bad_svg").status, 0);
  std::string amp = ok;
  amp.replace(amp.find("<h1>") + 4, 0, "R&D ");
  EXPECT_NE(check_with_python(amp, "amp").status, 0);
}

TEST(Report, StandaloneSvgPlotIsWellFormedXml) {
  SKIP_WITHOUT_PYTHON();
  const ReportData d = sample();
  const Checked c = check_with_python(render_svg_plot("softmax_rows", d.series), "plot");
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_EQ(c.out, "ok: 1 svg\n");
}

TEST(Report, HtmlIsSelfContained) {
  const std::string html = render_html(sample());
  for (const char* external : {"<script", "<link", "src=", "url(", "@import", "<img", "<iframe"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  const std::regex href("href=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), href); it != std::sregex_iterator(); ++it)
    EXPECT_EQ((*it)[1].str().rfind("#task-", 0), 0u) << (*it)[0];
  EXPECT_NE(html.find("id=\"task-1\""), std::string::npos);
  EXPECT_NE(html.find("id=\"task-2\""), std::string::npos);
}

TEST(Report, ShowsTheFigures) {
  const std::string html = render_html(sample());
  for (const char* figure : {"NVIDIA H200", "83ba692", "replay: 12 proposals had no recording",
                             "1.900\xC3\x97", "1.250\xC3\x97", "83.0%", "B=4096 D=393216", "3.1000",
                             "0.0102", "93.5%", "95% bootstrap interval over 2 seeds",
                             "random, seed 1", "random, mean", "learned, seed 7"})
    EXPECT_NE(html.find(figure), std::string::npos) << figure;
}

TEST(Report, EscapesUserText) {
  ReportData d = sample();
  const std::string nasty = "a<b&\"c\"";
  for (ReportSeries& s : d.series)
    if (s.task == "softmax_rows") s.task = nasty;
  d.tasks[0].task = nasty;
  d.tasks[0].best_variant = "x<y>&'z'";
  d.series[0].arm = "<i>arm</i>";
  d.notes.push_back("<script>alert(1)</script>");
  d.command = "kevo search 'a&b' \"<c>\"";
  const std::string html = render_html(d);
  for (const char* raw : {"a<b", "<b&", "&\"c", "x<y", "<i>", "<script>", "'a&b'", "<c>"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  EXPECT_NE(html.find("a&lt;b&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(html.find("x&lt;y&gt;&amp;&#39;z&#39;"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  SKIP_WITHOUT_PYTHON();
  const Checked c = check_with_python(html, "escaped");
  EXPECT_EQ(c.status, 0) << c.out;
}

TEST(Report, ControlCharactersAndInvalidUtf8CannotBreakTheXml) {
  ReportData d = sample();
  for (ReportSeries& s : d.series) s.task = "bad\x01\x1b[0m\xff\xc3(";
  d.tasks.clear();
  d.series[0].arm = "r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93";  // valid UTF-8 passes through
  const std::string html = render_html(d);
  EXPECT_NE(html.find("r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93"), std::string::npos);
  EXPECT_EQ(html.find('\x01'), std::string::npos);
  EXPECT_EQ(html.find('\xff'), std::string::npos);
  SKIP_WITHOUT_PYTHON();
  const Checked c = check_with_python(html, "bytes");
  EXPECT_EQ(c.status, 0) << c.out;
}

TEST(Report, CurvesMapMonotonicallyInsideTheFrame) {
  for (bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "log scale" : "linear scale");
    std::vector<CurvePoint> pts;
    for (int i = 0; i < 30; ++i) pts.push_back({i * 17 + 3, (wide ? 0.01 : 1.0) + 0.1 * i * i / 29.0 * (wide ? 30 : 1)});
    const std::string svg = render_svg_plot("t", {curve("t", "random", "1", pts)});
    EXPECT_EQ(svg.find("log scale") != std::string::npos, wide);
    const auto lines = shapes(svg, "polyline", "curve");
    ASSERT_EQ(lines.size(), 1u);
    const std::vector<Pt>& line = lines[0];
    ASSERT_GE(line.size(), pts.size());
    expect_inside(line, frame_of(svg));
    for (size_t i = 1; i < line.size(); ++i) {
      EXPECT_GE(line[i].x, line[i - 1].x) << i;  // evaluations grow to the right
      EXPECT_LE(line[i].y, line[i - 1].y) << i;  // better is higher, SVG's y points down
      EXPECT_TRUE(line[i].x == line[i - 1].x || line[i].y == line[i - 1].y) << "a step is level or upright";
    }
    EXPECT_LT(line.back().y, line.front().y);
    EXPECT_GT(line.back().x, line.front().x);
  }
}

TEST(Report, EqualFiguresLandOnEqualCoordinates) {
  const std::string svg = render_svg_plot(
      "t", {curve("t", "a", "1", {{0, 1.0}, {100, 2.0}}), curve("t", "b", "2", {{0, 2.0}, {100, 1.0}})});
  const auto lines = shapes(svg, "polyline", "curve");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_DOUBLE_EQ(lines[0].front().x, lines[1].front().x);
  EXPECT_DOUBLE_EQ(lines[0].back().x, lines[1].back().x);
  EXPECT_DOUBLE_EQ(lines[0].front().y, lines[1].back().y);  // both at 1.0
  EXPECT_DOUBLE_EQ(lines[0].back().y, lines[1].front().y);  // both at 2.0
}

TEST(Report, BandIsATranslucentPolygonAroundItsCurve) {
  const ReportData d = sample();
  const std::string with = render_svg_plot("t", {d.series[2]});
  const auto bands = shapes(with, "polygon", "band");
  ASSERT_EQ(bands.size(), 1u);
  expect_inside(bands[0], frame_of(with));
  EXPECT_NE(with.find("fill-opacity=\"0.18\""), std::string::npos);
  const auto line = shapes(with, "polyline", "curve").at(0);
  double top = 1e9, bottom = -1e9;
  for (const Pt& p : bands[0]) top = std::min(top, p.y), bottom = std::max(bottom, p.y);
  for (const Pt& p : line) {
    EXPECT_GE(p.y, top);
    EXPECT_LE(p.y, bottom);
  }
  EXPECT_TRUE(shapes(render_svg_plot("t", {d.series[0]}), "polygon", "band").empty());
}

TEST(Report, BandOfTheWrongSizeIsRefused) {
  ReportSeries s = sample().series[2];
  s.band.pop_back();
  EXPECT_THROW(render_svg_plot("t", {s}), std::invalid_argument);
}

TEST(Report, EmptyAndDegenerateSeriesDrawNoNaN) {
  SKIP_WITHOUT_PYTHON();
  const std::vector<std::vector<ReportSeries>> cases = {
      {},
      {curve("t", "random", "1", {})},
      {curve("t", "random", "1", {{5, 1.3}})},
      {curve("t", "random", "1", {{0, 0.0}, {9, -1.0}, {12, NAN}, {20, INFINITY}})},
      {curve("t", "random", "1", {{0, 2.0}, {0, 2.0}, {0, 2.0}})},
      {curve("t", "random", "1", {{3, 1e-9}, {4, 1e9}})},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string svg = render_svg_plot("t", cases[i]);
    expect_no_nan(svg);
    const Checked c = check_with_python(svg, "degenerate" + std::to_string(i));
    EXPECT_EQ(c.status, 0) << c.out;
    for (const auto& line : shapes(svg, "polyline", "curve")) expect_inside(line, frame_of(svg));
  }
  EXPECT_NE(render_svg_plot("t", cases[0]).find("no valid candidate yet"), std::string::npos);
  EXPECT_NE(render_svg_plot("t", cases[2]).find("<circle class=\"curve\""), std::string::npos);
  ReportSeries nan_band = curve("t", "random", "mean", {{1, 1.0}, {2, 1.5}});
  nan_band.band = {{NAN, NAN}, {1.2, 1.8}};
  expect_no_nan(render_svg_plot("t", {nan_band}));
  ReportData empty;
  const std::string html = render_html(empty);
  expect_no_nan(html);
  EXPECT_EQ(check_with_python(html, "empty").status, 0);
}

TEST(Report, SameDataSameBytes) {
  EXPECT_EQ(render_html(sample()), render_html(sample()));
  EXPECT_EQ(report_json(sample()).dump(), report_json(sample()).dump());
}

TEST(Report, ManySeriesGetDistinctStrokes) {
  std::vector<ReportSeries> many;
  for (int i = 0; i < 24; ++i) many.push_back(curve("t", "random", std::to_string(i), {{0, 1.0}, {10, 1.0 + i * 0.01}}));
  const std::string svg = render_svg_plot("t", many);
  const std::regex stroke(R"re(<polyline class="curve" points="[^"]*" fill="none" (stroke="[^"]*" stroke-width="[^"]*"(?: stroke-dasharray="[^"]*")?))re");
  std::set<std::string> styles;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), stroke); it != std::sregex_iterator(); ++it)
    styles.insert((*it)[1]);
  EXPECT_EQ(styles.size(), 24u);
}

TEST(NiceTicks, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(nice_ticks(0, 1000), (std::vector<double>{0, 200, 400, 600, 800, 1000}));
  EXPECT_EQ(nice_ticks(0.93, 1.37, 5), (std::vector<double>{0.9, 1.0, 1.1, 1.2, 1.3, 1.4}));
  const double ranges[][2] = {{0, 1}, {0, 7}, {0, 13}, {0.05, 3.2}, {1.2, 1.21}, {-4, 9}, {0, 123456}, {1e-6, 3e-6}, {5, 5}};
  for (const auto& r : ranges) {
    SCOPED_TRACE(std::to_string(r[0]) + ".." + std::to_string(r[1]));
    const std::vector<double> t = nice_ticks(r[0], r[1]);
    ASSERT_GE(t.size(), 3u);
    EXPECT_LE(t.size(), 12u);
    EXPECT_LE(t.front(), r[0]);
    EXPECT_GE(t.back(), r[1]);
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6)
        << mantissa;
    for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], step, step * 1e-9);
  }
}

TEST(Report, TickLabelsAreRound) {
  const std::string log = render_svg_plot("t", {curve("t", "a", "1", {{1, 0.03}, {500, 4.2}})});
  for (const char* label : {">0.02<", ">0.05<", ">0.1<", ">0.2<", ">0.5<", ">1<", ">2<", ">5<", ">500<"})
    EXPECT_NE(log.find(label), std::string::npos) << label;
  const std::string lin = render_svg_plot("t", {curve("t", "a", "1", {{1, 1.05}, {3, 1.42}})});
  for (const char* label : {">1.1<", ">1.4<", ">0<", ">1<", ">3<"}) EXPECT_NE(lin.find(label), std::string::npos) << label;
  EXPECT_EQ(lin.find(">0.5<"), std::string::npos) << "evaluations are whole numbers";
}

TEST(Report, ShowsTheFitnessAndHowEachWorkloadCounts) {
  const std::string html = render_html(sample());
  for (const char* figure : {"<th>Fitness</th>", "weighted_time_v1: the time saved over the weighted mix",
                             "<th>Weight</th>", "<td>4</td>", "checked, not timed", "<th>Launches</th>",
                             "<th>Its geometric mean</th>"})
    EXPECT_NE(html.find(figure), std::string::npos) << figure;
  ReportData old = sample();
  old.fitness = "";  // a campaign file before the fitness was recorded
  EXPECT_NE(render_html(old).find("geometric_mean_v0: the geometric mean"), std::string::npos);
}

// A campaign that screened says how many candidates were screened out and how many verified
// fully; a report of one that did not has neither column, as before screening.
TEST(Report, ShowsTheScreenedAndFullyVerifiedCounts) {
  const std::string plain = render_html(sample());
  EXPECT_EQ(plain.find("Screened out"), std::string::npos);
  EXPECT_FALSE(report_json(sample())["tasks"][0].contains("screened"));
  ReportData d = sample();
  d.tasks[0].screened = 600;  // of 800 evaluations, 12 unmeasured
  const std::string html = render_html(d);
  EXPECT_NE(html.find("<th>Screened out</th><th>Fully verified</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>800</td><td>600</td><td>188</td><td>12</td>"), std::string::npos);
  const nlohmann::json j = report_json(d);
  EXPECT_EQ(j["tasks"][0]["screened"], 600);
  EXPECT_EQ(j["tasks"][0]["fully_verified"], 188);
  EXPECT_EQ(report_from_json(j).tasks[0].screened, 600);
  EXPECT_EQ(report_from_json(j).tasks[1].screened, 0);
}

TEST(ReportJson, ReportsBeforeTheWorkloadMixStillRead) {
  nlohmann::json j = report_json(sample());
  j.erase("fitness");
  for (auto& t : j["tasks"]) {
    t.erase("best_geometric_mean");
    for (auto& w : t["workloads"]) w.erase("launches"), w.erase("weight"), w.erase("timed");
  }
  const ReportData back = report_from_json(j);
  EXPECT_EQ(back.fitness, "");
  EXPECT_TRUE(back.tasks[0].workloads[2].timed);
  EXPECT_EQ(back.tasks[0].workloads[0].weight, 1.0);
  EXPECT_EQ(back.tasks[0].workloads[0].launches, 0);
}

TEST(ReportJson, RoundTripsTheFigures) {
  ReportData d = sample();
  d.series[1].points[0].best = NAN;  // no valid candidate yet: null in JSON
  const nlohmann::json j = report_json(d);
  const ReportData back = report_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(report_json(back), j);

  EXPECT_EQ(back.campaign_id, d.campaign_id);
  EXPECT_EQ(back.command, d.command);
  EXPECT_EQ(back.notes, d.notes);
  ASSERT_EQ(back.series.size(), d.series.size());
  for (size_t i = 0; i < d.series.size(); ++i) {
    ASSERT_EQ(back.series[i].points.size(), d.series[i].points.size());
    for (size_t k = 0; k < d.series[i].points.size(); ++k) {
      EXPECT_EQ(back.series[i].points[k].evaluations, d.series[i].points[k].evaluations);
      const double a = back.series[i].points[k].best, b = d.series[i].points[k].best;
      EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << i << "," << k;
    }
    EXPECT_EQ(back.series[i].band.size(), d.series[i].band.size());
  }
  EXPECT_EQ(back.series[2].band[1].upper, 1.5);
  EXPECT_EQ(back.series[2].band_label, d.series[2].band_label);
  ASSERT_EQ(back.tasks.size(), 2u);
  EXPECT_EQ(back.tasks[0].best_variant, d.tasks[0].best_variant);
  EXPECT_EQ(back.tasks[0].gpu_busy, 0.83);
  EXPECT_EQ(back.tasks[0].workloads[0].percent_of_floor, 93.5);
  EXPECT_EQ(back.tasks[0].workloads[1].best_ms, 0.0102);
  EXPECT_EQ(back.fitness, "weighted_time_v1");
  EXPECT_EQ(back.tasks[0].workloads[0].weight, 4.0);
  EXPECT_EQ(back.tasks[0].workloads[0].launches, 1);
  EXPECT_FALSE(back.tasks[0].workloads[2].timed);
  EXPECT_EQ(render_html(back), render_html(report_from_json(j)));
}

TEST(ReportJson, UnknownFiguresAreNull) {
  const nlohmann::json j = report_json(sample());
  EXPECT_EQ(j["format"], "kevo-report");
  EXPECT_EQ(j["version"], 1);
  EXPECT_TRUE(j["tasks"][0]["workloads"][1]["compile_ms"].is_null());
  EXPECT_TRUE(j["tasks"][0]["workloads"][1]["floor_ms"].is_null());
  EXPECT_TRUE(j["tasks"][1]["best_speedup_vs_compile"].is_null());
  EXPECT_TRUE(j["tasks"][1]["gpu_busy"].is_null());
  EXPECT_EQ(j["tasks"][0]["workloads"][0]["compile_ms"], 4.0);
  EXPECT_EQ(j["series"][0]["evaluations"], nlohmann::json({1, 40, 120, 400}));
  EXPECT_FALSE(j["series"][0].contains("band"));
  EXPECT_EQ(j["series"][2]["band"]["lower"][0], 0.5);
}

TEST(ReportJson, MalformedJsonNamesThePath) {
  nlohmann::json j = report_json(sample());
  j["tasks"][1]["workloads"][0].erase("eager_ms");
  try {
    report_from_json(j);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("$.tasks[1].workloads[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("eager_ms"), std::string::npos) << e.what();
  }
  nlohmann::json k = report_json(sample());
  k["series"][2]["band"]["upper"].erase(0);
  EXPECT_THROW(report_from_json(k), InputError);
  EXPECT_THROW(report_from_json(nlohmann::json{{"format", "other"}}), InputError);
  EXPECT_THROW(report_from_json(nlohmann::json::array()), InputError);
}

}  // namespace
}  // namespace kevo::store
