// `kevo export` (the best kernel per task as a header) and `kevo report` (HTML with SVG curves,
// and the same figures as JSON) from a campaign file.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/candidate.h"
#include "core/error.h"
#include "search/general_export.h"
#include "search/results.h"
#include "store/campaign_file.h"
#include "store/export.h"
#include "store/export_dispatch.h"
#include "store/export_torch.h"
#include "store/llm_samples.h"
#include "store/report.h"

namespace kevo::cli {

namespace {

bool write_file(const std::string& path, const std::string& text, const std::string& cmd) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f.flush()) {
      std::cerr << "kevo " << cmd << ": cannot write " << path << ": " << std::strerror(errno) << "\n";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::cerr << "kevo " << cmd << ": cannot write " << path << ": " << std::strerror(errno) << "\n";
    return false;
  }
  return true;
}

// What export and report read of a campaign file: every table but the sources and checkpoints
// (the best variants' sources are read alone), so that a large file reads fast.
store::ReadOptions without_sources() {
  store::ReadOptions o;
  o.sources = store::ReadOptions::Sources::none;
  o.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
  return o;
}

// kevo export --samples: the trajectories of the llm policy, one completion per line.
int export_samples(const std::string& path, const std::string& file) {
  std::string text;
  size_t lines = 0;
  try {
    store::ReadOptions samples_only;
    samples_only.sources = store::ReadOptions::Sources::none;
    samples_only.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
    store::CampaignContents c = store::read_campaign(path, samples_only);
    text = store::samples_jsonl(c);
    for (char ch : text) lines += ch == '\n';
  } catch (const InputError& e) {
    std::cerr << "kevo export: " << e.what() << "\n";
    return 2;
  }
  if (file == "-") {
    std::cout << text;
    return 0;
  }
  if (!write_file(file, text, "export")) return 2;
  std::cout << file << ": " << lines << " completion" << (lines == 1 ? "" : "s") << " with their rewards\n";
  return 0;
}

// What a header's comment says of a best variant of campaign `c`.
store::ExportProvenance provenance_of(const store::CampaignContents& c, const search::BestVariant& b) {
  store::ExportProvenance p;
  p.speedup_eager = b.measurement->fitness;
  p.speedup_compile = b.measurement->speedup_vs_compile;
  p.gpu = b.measurement->gpu;
  p.date = c.created;
  p.kevo_version = c.kevo_version;
  p.kevo_commit = c.kevo_commit;
  p.campaign_id = c.campaign_id;
  p.variant = std::to_string(b.variant->id) + " " + b.description;
  for (const auto& w : b.measurement->workloads)
    if (w.status == "ok") p.validated_workloads.push_back(w.workload);
  return p;
}

// The workloads of two contracts name the same shapes (a dispatcher's buckets index both).
bool same_shapes(const Task& a, const Task& b) {
  if (a.workloads.size() != b.workloads.size() || a.axes.size() != b.axes.size()) return false;
  for (size_t i = 0; i < a.workloads.size(); ++i)
    if (a.workloads[i].axes != b.workloads[i].axes) return false;
  return true;
}

// kevo export A.h5 B.h5 ... --task T: per task, the best kernel of each campaign in one header; a
// validated workload runs the kernel measured fastest on it, other shapes (with --general) the
// first campaign's kernel, verified on unseen shapes. kevo export A.h5 --dispatch --task T: the
// same over one campaign's best kernel and, per timed workload, the variant measured fastest on it.
int export_dispatchers(const std::vector<std::string>& paths, const std::vector<std::string>& only, const std::string& out,
                       bool general, bool per_workload, search::ShapeVerifier& verifier) {
  if (only.empty()) {
    std::cerr << "kevo export: a dispatcher is per task: name it with --task\n";
    return 2;
  }
  std::vector<store::CampaignContents> files(paths.size());
  std::vector<std::vector<search::BestVariant>> best(paths.size());
  try {
    for (size_t i = 0; i < paths.size(); ++i) {
      files[i] = store::read_campaign(paths[i], without_sources());
      best[i] = search::best_variants(files[i], paths[i]);
      if (per_workload)
        for (const std::string& name : only)
          for (search::BestVariant& b : search::best_per_workload(files[i], paths[i], name))
            if (std::none_of(best[i].begin(), best[i].end(), [&](const search::BestVariant& x) { return x.variant == b.variant; }))
              best[i].push_back(std::move(b));
    }
  } catch (const InputError& e) {
    std::cerr << "kevo export: " << e.what() << "\n";
    return 2;
  }
  for (const std::string& name : only) {
    std::vector<store::DispatchKernel> kernels;
    std::vector<const search::BestVariant*> chosen;
    try {
      for (size_t i = 0; i < paths.size(); ++i)
        for (const search::BestVariant& b : best[i]) {
          if (b.task->name != name) continue;
          if (!chosen.empty() && !same_shapes(*chosen.front()->task, *b.task))
            throw InputError(Location{paths[i], 0, 0}, "export",
                             "task '" + name + "' has other workloads here than in " + paths.front());
          store::DispatchKernel k{parse_candidate(b.source, name + ".cu", *b.task), provenance_of(files[i], b), {}};
          if (general && kernels.empty()) k.shapes = verifier.verify(*b.task, k.candidate, *b.variant);
          kernels.push_back(std::move(k));
          chosen.push_back(&b);
        }
      if (kernels.empty()) throw InputError(Location{paths.front(), 0, 0}, "export", "no correct variant of task '" + name + "'");
      // Each validated workload to the kernel measured fastest on it.
      std::map<int, int> buckets;
      std::map<int, double> fastest;
      for (size_t k = 0; k < chosen.size(); ++k)
        for (const store::WorkloadRecord& w : chosen[k]->measurement->workloads) {
          if (w.status != "ok") continue;
          const double ms = w.median_ms > 0 ? w.median_ms : 1e300;  // checked, not timed: any kernel
          if (!fastest.count(w.workload) || ms < fastest[w.workload]) {
            fastest[w.workload] = ms;
            buckets[w.workload] = static_cast<int>(k);
          }
        }
      const Task& task = *chosen.front()->task;
      const std::string file = out + "/" + store::export_file_name(task);
      if (!write_file(file, store::export_dispatch_header(task, kernels, buckets), "export")) return 2;
      std::cout << file << ": " << name << ", a dispatcher over " << kernels.size() << " kernel"
                << (kernels.size() == 1 ? "" : "s") << ", " << buckets.size() << " validated bucket"
                << (buckets.size() == 1 ? "" : "s") << (general ? ", the first campaign's kernel for every other supported shape" : "")
                << "\n";
    } catch (const InputError& e) {
      std::cerr << "kevo export: " << name << ": " << e.what() << "\n";
      return 2;
    }
  }
  return 0;
}

struct ExportArgs {
  std::vector<std::string> paths;
  std::string out = "results", samples;
  std::vector<std::string> only;
  bool torch_extension = false, general = false, dispatch = false;
  int64_t seed = 1;
  std::string gpus = "all";
  std::vector<std::string> range_files;
  search::GeneralExportOptions general_options;
};

// The flags into `a`; -1 when they parse, else the exit status (help printed, or the error).
int parse_export_args(const std::vector<std::string>& args, ExportArgs& a) {
  po::options_description opts("options");
  search::GeneralExportOptions& go = a.general_options;
  opts.add_options()("campaign", po::value(&a.paths)->required()->composing(),
                     "the campaign file; several: one dispatcher header per --task over their best kernels")(
      "out", po::value(&a.out)->default_value("results"), "folder for the headers (created)")(
      "task", po::value(&a.only)->composing(), "export only this task (repeatable)")(
      "torch", po::bool_switch(&a.torch_extension),
      "beside each header, a PyTorch extension (TASK_torch.cu, its loader TASK_torch.py) and the contract (TASK.json)")(
      "samples", po::value(&a.samples), "instead of headers: the llm policy's completions with their rewards, as JSONL ('-': stdout)")(
      "general", po::bool_switch(&a.general),
      "headers that accept every shape inside the contract's axis ranges under the kernel's conditions, once the kernel "
      "passes on unseen shapes on this machine's GPU (without: the validated workloads only, no GPU needed)")(
      "dispatch", po::bool_switch(&a.dispatch),
      "one campaign: a dispatcher header per --task over its best kernel and, per timed workload, the variant measured "
      "fastest on it")(
      "verify-shapes", po::value(&go.draw.count)->default_value(24), "--general: unseen shapes to verify on")(
      "max-shape-bytes", po::value(&go.draw.max_bytes)->default_value(int64_t{2} << 30),
      "--general: inputs plus outputs of one unseen shape, at most")(
      "seed", po::value(&a.seed)->default_value(1), "--general: seed of the unseen shapes and their inputs")(
      "gpus", po::value(&a.gpus)->default_value("all"), "--general: GPUs to verify on: all, or a list like 0,1")(
      "ranges", po::value(&a.range_files)->composing(),
      "--general: a contract whose axis ranges (min, max, multiple_of) apply to its task in the campaign, which may "
      "have been recorded without them (repeatable)");
  po::positional_options_description pos;
  pos.add("campaign", -1);
  po::variables_map vm;
  return parse_options("export", "campaign.h5 [more.h5 ... --task T] [--out results/] [--torch] [--general] [--samples samples.jsonl]",
                       args, opts, pos, vm);
}

// --general's options checked and completed (the seed, the GPUs, the --ranges contracts); 0, or 2
// with the reason printed.
int complete_general_options(ExportArgs& a) {
  search::GeneralExportOptions& go = a.general_options;
  if (go.draw.count < 1 || go.draw.count > 10000 || go.draw.max_bytes < 1 || a.seed < 0) {
    std::cerr << "kevo export: --verify-shapes (1 to 10000), --max-shape-bytes and --seed need sane positive values\n";
    return 2;
  }
  go.draw.seed = static_cast<uint64_t>(a.seed);
  try {
    go.gpus = parse_gpus(a.gpus);
    for (const std::string& f : a.range_files) {
      Task t = load_task(f);
      go.ranges.emplace(t.name, std::move(t));
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "kevo export: " << e.what() << "\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "kevo export: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

bool make_out_folder(const std::string& out) {
  if (::mkdir(out.c_str(), 0755) == 0 || errno == EEXIST) return true;
  std::cerr << "kevo export: cannot create " << out << ": " << std::strerror(errno) << "\n";
  return false;
}

// The header of best variant b and (--torch) the files beside it: name, text. Throws InputError.
std::vector<std::pair<std::string, std::string>> exported_files(const store::CampaignContents& c, const search::BestVariant& b,
                                                                const ExportArgs& a, search::ShapeVerifier& verifier,
                                                                store::ExportShapes* shapes) {
  Candidate cand = parse_candidate(b.source, b.task->name + ".cu", *b.task);
  if (a.general) *shapes = verifier.verify(*b.task, cand, *b.variant);
  std::vector<std::pair<std::string, std::string>> files = {
      {store::export_file_name(*b.task), store::export_header(*b.task, cand, provenance_of(c, b), *shapes)}};
  if (!a.torch_extension) return files;
  const std::string h = store::export_file_name(*b.task);
  files.push_back({store::torch_source_file_name(*b.task), store::export_torch_source(*b.task, cand, h, shapes->general)});
  files.push_back({store::torch_loader_file_name(*b.task), store::export_torch_loader(*b.task, cand)});
  for (const store::TaskRecord& t : c.tasks)
    if (t.name == b.task->name) files.push_back({b.task->name + ".json", t.contract});
  files.push_back({b.task->name + ".cu", b.source});  // the candidate as measured: `kevo eval` re-times it
  return files;
}

void print_exported(const std::string& file, const search::BestVariant& b, const ExportArgs& a, const store::ExportShapes& shapes) {
  std::cout << file << ": " << b.task->name << ", " << b.description << ", " << b.measurement->fitness << "x over eager";
  if (a.general) std::cout << ", for every supported shape (verified on " << shapes.verified.size() << " unseen)";
  if (a.torch_extension) std::cout << " (and torch.ops.kevo." << store::torch_op_name(*b.task) << ")";
  if (b.measurement->speedup_vs_compile > 0) std::cout << ", " << b.measurement->speedup_vs_compile << "x over torch.compile";
  std::cout << "\n";
}

// One campaign: a header per task (those of --task) over its best variant.
int export_best(const ExportArgs& a, search::ShapeVerifier& verifier) {
  const std::string& path = a.paths.front();
  store::CampaignContents c;
  std::vector<search::BestVariant> best;
  try {
    c = store::read_campaign(path, without_sources());
    best = search::best_variants(c, path);
  } catch (const InputError& e) {
    std::cerr << "kevo export: " << e.what() << "\n";
    return 2;
  }
  if (!make_out_folder(a.out)) return 2;
  const std::set<std::string> named(a.only.begin(), a.only.end());
  std::set<std::string> wanted = named;  // named tasks not found yet
  int written = 0;
  for (const search::BestVariant& b : best) {
    if (!named.empty() && !named.count(b.task->name)) continue;
    wanted.erase(b.task->name);
    std::vector<std::pair<std::string, std::string>> files;
    store::ExportShapes shapes;  // --general: what the header accepts
    try {
      files = exported_files(c, b, a, verifier, &shapes);
    } catch (const InputError& e) {
      std::cerr << "kevo export: " << b.task->name << ": " << e.what() << "\n";
      return 2;
    }
    for (const auto& [name, text] : files)
      if (!write_file(a.out + "/" + name, text, "export")) return 2;
    print_exported(a.out + "/" + files.front().first, b, a, shapes);
    ++written;
  }
  for (const std::string& t : wanted) std::cerr << "kevo export: " << t << ": no correct variant in " << path << "\n";
  if (written == 0) {
    std::cerr << "kevo export: " << path << " holds no correct variant to export\n";
    return 1;
  }
  return 0;
}

}  // namespace

int cmd_export(const std::vector<std::string>& args) {
  ExportArgs a;
  if (int rc = parse_export_args(args, a); rc >= 0) return rc;
  if (!a.samples.empty()) return export_samples(a.paths.front(), a.samples);
  if (int rc = complete_general_options(a)) return rc;
  search::ShapeVerifier verifier(a.general_options);
  if (a.paths.size() == 1 && !a.dispatch) return export_best(a, verifier);
  if (a.torch_extension) {
    std::cerr << "kevo export: --torch exports one kernel per task: give one campaign, without --dispatch\n";
    return 2;
  }
  if (!make_out_folder(a.out)) return 2;
  return export_dispatchers(a.paths, a.only, a.out, a.general, a.dispatch, verifier);
}

int cmd_report(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string path, html, json, torch_baseline;
  opts.add_options()("campaign", po::value(&path)->required(), "the campaign file")(
      "html", po::value(&html), "write the report here (self-contained HTML with SVG plots)")(
      "json", po::value(&json)->implicit_value("-"), "the same figures as JSON, to this file or stdout")(
      "torch-baseline", po::value(&torch_baseline),
      "tools/torch_baseline.py report: torch.compile figures for the best variants measured without them");
  po::positional_options_description pos;
  pos.add("campaign", 1);
  po::variables_map vm;
  if (int rc = parse_options("report", "campaign.h5 [--html report.html] [--json [FILE]]", args, opts, pos, vm); rc >= 0)
    return rc;
  store::ReportData d;
  try {
    d = search::report_data(store::read_campaign(path, without_sources()), path);
    if (!torch_baseline.empty()) search::join_torch_baseline(d, torch_baseline);
  } catch (const InputError& e) {
    std::cerr << "kevo report: " << e.what() << "\n";
    return 2;
  }
  if (!html.empty() && !write_file(html, store::render_html(d), "report")) return 2;
  if (!json.empty()) {
    std::string text = store::report_json(d).dump(1) + "\n";
    if (json == "-") std::cout << text;
    else if (!write_file(json, text, "report")) return 2;
  }
  if (html.empty() && json.empty()) {
    for (const auto& t : d.tasks) {
      std::cout << t.task << ": " << t.evaluations << " evaluations, best " << t.best_fitness << "x over eager";
      if (t.best_vs_compile > 0) std::cout << ", " << t.best_vs_compile << "x over torch.compile";
      std::cout << (t.best_variant.empty() ? "" : " (" + t.best_variant + ")") << "\n";
    }
    for (const auto& n : d.notes) std::cout << "note: " << n << "\n";
  }
  return 0;
}

}  // namespace kevo::cli
