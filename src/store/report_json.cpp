// The report's figures as JSON and back (layout: docs/reports.md). Figures that ReportData keeps
// as 0 for "unknown" are null in JSON, so no reader mistakes them for a measured zero.
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "store/report.h"

namespace kevo::store {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "kevo-report";
constexpr int kVersion = 1;

json or_null(double v) { return v == 0 || !std::isfinite(v) ? json(nullptr) : json(v); }

// NaN is not JSON; nlohmann would write it as null anyway, this says so.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json series_json(const ReportSeries& s) {
  json evaluations = json::array(), best = json::array();
  for (const CurvePoint& p : s.points) {
    evaluations.push_back(p.evaluations);
    best.push_back(number(p.best));
  }
  json j = {{"task", s.task}, {"arm", s.arm}, {"seed", s.seed}, {"evaluations", evaluations},
            {"best", best}};
  if (!s.band.empty()) {
    json lower = json::array(), upper = json::array();
    for (const BandPoint& b : s.band) {
      lower.push_back(number(b.lower));
      upper.push_back(number(b.upper));
    }
    j["band"] = {{"lower", lower}, {"upper", upper}, {"label", s.band_label}};
  }
  return j;
}

json task_json(const TaskSummary& t) {
  json rows = json::array();
  for (const WorkloadRow& w : t.workloads)
    rows.push_back({{"workload", w.workload}, {"axes", w.axes}, {"best_ms", w.best_ms},
                    {"eager_ms", w.eager_ms}, {"compile_ms", or_null(w.compile_ms)},
                    {"floor_ms", or_null(w.floor_ms)}, {"speedup", w.speedup},
                    {"percent_of_floor", or_null(w.percent_of_floor)}, {"launches", w.launches},
                    {"weight", w.weight}, {"timed", w.timed}});
  json j = {{"task", t.task},
            {"runs", t.runs},
            {"evaluations", t.evaluations},
            {"unmeasured", t.unmeasured},
            {"duplicates", t.duplicates},
            {"best_fitness", or_null(t.best_fitness)},
            {"best_geometric_mean", or_null(t.best_geometric_mean)},
            {"best_speedup_vs_compile", or_null(t.best_vs_compile)},
            {"best_variant", t.best_variant},
            {"gpu_busy", or_null(t.gpu_busy)},
            {"workloads", rows}};
  if (t.screened > 0) {  // reports of campaigns without screening stay as they were
    j["screened"] = t.screened;
    j["fully_verified"] = t.evaluations - t.unmeasured - t.screened;
  }
  return j;
}

// ---- reading back: each error names the JSON path of what is wrong ------------------------

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw InputError({}, "report JSON " + where, what);  // where: a path such as $.tasks[0].runs
}

const json& member(const json& j, const std::string& where, const char* key) {
  if (!j.is_object()) bad(where, "expected an object");
  const auto it = j.find(key);
  if (it == j.end()) bad(where, std::string("missing \"") + key + "\"");
  return *it;
}

std::string text(const json& j, const std::string& where, const char* key) {
  const json& v = member(j, where, key);
  if (!v.is_string()) bad(where + "." + key, "expected a string");
  return v.get<std::string>();
}

int64_t integer(const json& v, const std::string& where) {
  if (!v.is_number_integer()) bad(where, "expected an integer");
  return v.get<int64_t>();
}

int64_t integer(const json& j, const std::string& where, const char* key) {
  return integer(member(j, where, key), where + "." + key);
}

// A number, or null read as `if_null`.
double real(const json& v, const std::string& where, double if_null) {
  if (v.is_null()) return if_null;
  if (!v.is_number()) bad(where, "expected a number or null");
  return v.get<double>();
}

double real(const json& j, const std::string& where, const char* key, double if_null = 0) {
  return real(member(j, where, key), where + "." + key, if_null);
}

const json& array(const json& j, const std::string& where, const char* key) {
  const json& v = member(j, where, key);
  if (!v.is_array()) bad(where + "." + key, "expected an array");
  return v;
}

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

ReportSeries series_from(const json& j, const std::string& where) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  ReportSeries s;
  s.task = text(j, where, "task");
  s.arm = text(j, where, "arm");
  s.seed = text(j, where, "seed");
  const json& evaluations = array(j, where, "evaluations");
  const json& best = array(j, where, "best");
  if (best.size() != evaluations.size()) bad(where + ".best", "not one per evaluation count");
  for (size_t i = 0; i < best.size(); ++i)
    s.points.push_back({integer(evaluations[i], at(where + ".evaluations", i)),
                        real(best[i], at(where + ".best", i), kNaN)});
  if (j.contains("band")) {
    const std::string bw = where + ".band";
    const json& band = j.at("band");
    const json& lower = array(band, bw, "lower");
    const json& upper = array(band, bw, "upper");
    if (lower.size() != best.size() || upper.size() != best.size()) bad(bw, "not one entry per point");
    for (size_t i = 0; i < best.size(); ++i)
      s.band.push_back({real(lower[i], at(bw + ".lower", i), kNaN), real(upper[i], at(bw + ".upper", i), kNaN)});
    s.band_label = text(band, bw, "label");
  }
  return s;
}

WorkloadRow workload_from(const json& j, const std::string& where) {
  WorkloadRow w;
  w.workload = static_cast<int32_t>(integer(j, where, "workload"));
  w.axes = text(j, where, "axes");
  w.best_ms = real(j, where, "best_ms");
  w.eager_ms = real(j, where, "eager_ms");
  w.compile_ms = real(j, where, "compile_ms");
  w.floor_ms = real(j, where, "floor_ms");
  w.speedup = real(j, where, "speedup");
  w.percent_of_floor = real(j, where, "percent_of_floor");
  // Reports before the workload mix have none of these: every workload timed, weight 1.
  if (j.contains("launches")) w.launches = static_cast<int32_t>(integer(j, where, "launches"));
  if (j.contains("weight")) w.weight = real(j, where, "weight");
  if (j.contains("timed")) {
    if (!j.at("timed").is_boolean()) bad(where + ".timed", "expected true or false");
    w.timed = j.at("timed").get<bool>();
  }
  return w;
}

TaskSummary task_from(const json& j, const std::string& where) {
  TaskSummary t;
  t.task = text(j, where, "task");
  t.runs = integer(j, where, "runs");
  t.evaluations = integer(j, where, "evaluations");
  t.unmeasured = integer(j, where, "unmeasured");
  t.duplicates = integer(j, where, "duplicates");
  if (j.contains("screened")) t.screened = integer(j, where, "screened");
  t.best_fitness = real(j, where, "best_fitness");
  if (j.contains("best_geometric_mean")) t.best_geometric_mean = real(j, where, "best_geometric_mean");
  t.best_vs_compile = real(j, where, "best_speedup_vs_compile");
  t.best_variant = text(j, where, "best_variant");
  t.gpu_busy = real(j, where, "gpu_busy");
  const json& rows = array(j, where, "workloads");
  for (size_t i = 0; i < rows.size(); ++i) t.workloads.push_back(workload_from(rows[i], at(where + ".workloads", i)));
  return t;
}

}  // namespace

json report_json(const ReportData& d) {
  json series = json::array(), tasks = json::array();
  for (const ReportSeries& s : d.series) series.push_back(series_json(s));
  for (const TaskSummary& t : d.tasks) tasks.push_back(task_json(t));
  return {{"format", kFormat},
          {"version", kVersion},
          {"campaign",
           {{"id", d.campaign_id},
            {"kevo_version", d.kevo_version},
            {"kevo_commit", d.kevo_commit},
            {"gpu", d.gpu},
            {"created", d.created},
            {"command", d.command}}},
          {"fitness", d.fitness},
          {"notes", d.notes},
          {"tasks", tasks},
          {"series", series}};
}

ReportData report_from_json(const json& j) {
  if (!j.is_object() || !j.contains("format") || j.at("format") != kFormat)
    bad("$", "not a kevo report (\"format\" is not \"kevo-report\")");
  if (integer(j, "$", "version") != kVersion)
    bad("$.version", "version " + member(j, "$", "version").dump() + " is not " + std::to_string(kVersion));
  ReportData d;
  const json& c = member(j, "$", "campaign");
  d.campaign_id = text(c, "$.campaign", "id");
  d.kevo_version = text(c, "$.campaign", "kevo_version");
  d.kevo_commit = text(c, "$.campaign", "kevo_commit");
  d.gpu = text(c, "$.campaign", "gpu");
  d.created = text(c, "$.campaign", "created");
  d.command = text(c, "$.campaign", "command");
  if (j.contains("fitness")) d.fitness = text(j, "$", "fitness");  // reports before it: none
  const json& notes = array(j, "$", "notes");
  for (size_t i = 0; i < notes.size(); ++i) {
    if (!notes[i].is_string()) bad(at("$.notes", i), "expected a string");
    d.notes.push_back(notes[i].get<std::string>());
  }
  const json& tasks = array(j, "$", "tasks");
  for (size_t i = 0; i < tasks.size(); ++i) d.tasks.push_back(task_from(tasks[i], at("$.tasks", i)));
  const json& series = array(j, "$", "series");
  for (size_t i = 0; i < series.size(); ++i) d.series.push_back(series_from(series[i], at("$.series", i)));
  return d;
}

}  // namespace kevo::store
