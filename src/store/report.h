// The campaign report: plain figures (filled from a campaign file by the CLI) rendered as one
// self-contained HTML page with inline SVG plots, or as JSON. Layout: docs/reports.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kevo::store {

// One point of a best-so-far curve: after `evaluations` evaluations, the best fitness found
// (speedup over eager as the campaign's fitness defines it). A point whose best is not positive and finite means "no
// valid candidate yet" and is not drawn.
struct CurvePoint {
  int64_t evaluations = 0;
  double best = 0;
};

// An interval around a curve point, e.g. a 95% bootstrap interval over seeds.
struct BandPoint {
  double lower = 0;
  double upper = 0;
};

// One best-so-far curve: a run (seed = its seed as text) or an aggregate over runs ("mean").
struct ReportSeries {
  std::string task;
  std::string arm;                // "random", "learned", "learned-frozen", "llm", ...
  std::string seed;               // "42", or "mean" (any text) for an aggregate
  std::vector<CurvePoint> points; // in increasing evaluations
  std::vector<BandPoint> band;    // empty, or one per point
  std::string band_label;         // what the band is, e.g. "95% bootstrap interval over 5 seeds"
};

// The best candidate's figures on one workload. Times in milliseconds; 0 means unknown.
struct WorkloadRow {
  int32_t workload = 0;           // index into the task's workloads
  std::string axes;               // e.g. "B=4096 D=393216"
  double best_ms = 0;
  double eager_ms = 0;
  double compile_ms = 0;          // torch.compile; 0 when not measured
  // The least time the workload can take: the largest of the DRAM floor (bytes moved / measured
  // bandwidth), the compute floor and the plan's kernel launches times the least time a launch
  // takes (search/results.h); 0 when unknown.
  double floor_ms = 0;
  double speedup = 0;             // over eager, as measured
  double percent_of_floor = 0;    // floor_ms / best_ms * 100; 0 when unknown
  int32_t launches = 0;           // kernel launches and library calls of the plan; 0 when unknown
  double weight = 1;              // the contract's weight of the workload
  bool timed = true;              // false: checked for correctness only (no times)
};

// One task of the campaign, over all its runs.
struct TaskSummary {
  std::string task;
  int64_t runs = 0;
  int64_t evaluations = 0;
  int64_t unmeasured = 0;         // proposals a replay evaluator had no recording for
  int64_t duplicates = 0;
  int64_t screened = 0;           // screened out: measured cheaply, not verified fully (docs/evaluation.md#screening)
  double best_fitness = 0;        // the campaign's fitness (ReportData::fitness); 0 when no valid candidate
  double best_geometric_mean = 0; // the best's geometric mean of per-workload speedups; 0 when unknown
  double best_vs_compile = 0;     // the same best over torch.compile; 0 when unknown
  std::string best_variant;       // space and knobs, e.g. "reduce_rows{threads=256, vec=4}"
  double gpu_busy = 0;            // fraction 0..1 of wall time the GPUs measured; 0 when unknown
  std::vector<WorkloadRow> workloads;
};

struct ReportData {
  std::string campaign_id;
  std::string kevo_version;
  std::string kevo_commit;
  std::string gpu;
  std::string created;            // as stored in the campaign file, e.g. ISO 8601
  std::string command;            // the command line that ran the campaign
  std::string fitness;            // core/fitness.h's name of the fitness the file measured
  std::vector<ReportSeries> series;
  std::vector<TaskSummary> tasks;
  std::vector<std::string> notes; // free-form lines, e.g. "replay: 12 proposals had no recording"
};

// The whole report as one HTML file: no external scripts, styles or fonts; one plot per task
// (tasks in summary order, then tasks that only have series); every text escaped. The same data
// gives the same bytes. Throws std::invalid_argument when a band's size is not its curve's.
std::string render_html(const ReportData& data);

// One plot of best-so-far curves (all `series`, whatever their task) as a standalone SVG
// element: x = evaluations, y = best speedup over eager, log-scaled when the drawn values span
// a factor of 10 or more.
std::string render_svg_plot(const std::string& title, const std::vector<ReportSeries>& series);

// The same figures as JSON; report_from_json reads them back (InputError on a malformed one).
nlohmann::json report_json(const ReportData& data);
ReportData report_from_json(const nlohmann::json& j);

// Axis ticks at multiples of a 1-2-5 step (1, 2 or 5 times a power of ten), about
// `target` of them, the first at or below lo and the last at or above hi.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

}  // namespace kevo::store
