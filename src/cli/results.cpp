// `kevo export` (the best kernel per task as a header) and `kevo report` (HTML with SVG curves,
// and the same figures as JSON) from a campaign file.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/candidate.h"
#include "core/error.h"
#include "search/results.h"
#include "store/campaign_file.h"
#include "store/export.h"
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

}  // namespace

int cmd_export(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string path, out = "results", samples;
  std::vector<std::string> only;
  bool torch_extension = false;
  opts.add_options()("campaign", po::value(&path)->required(), "the campaign file")(
      "out", po::value(&out)->default_value("results"), "folder for the headers (created)")(
      "task", po::value(&only)->composing(), "export only this task (repeatable)")(
      "torch", po::bool_switch(&torch_extension),
      "beside each header, a PyTorch extension (TASK_torch.cu, its loader TASK_torch.py) and the contract (TASK.json)")(
      "samples", po::value(&samples), "instead of headers: the llm policy's completions with their rewards, as JSONL ('-': stdout)");
  po::positional_options_description pos;
  pos.add("campaign", 1);
  po::variables_map vm;
  if (int rc = parse_options("export", "campaign.h5 [--out results/] [--torch] [--samples samples.jsonl]", args, opts,
                             pos, vm);
      rc >= 0)
    return rc;
  if (!samples.empty()) return export_samples(path, samples);
  store::CampaignContents c;
  std::vector<search::BestVariant> best;
  try {
    c = store::read_campaign(path, without_sources());
    best = search::best_variants(c, path);
  } catch (const InputError& e) {
    std::cerr << "kevo export: " << e.what() << "\n";
    return 2;
  }
  if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) {
    std::cerr << "kevo export: cannot create " << out << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  std::set<std::string> wanted(only.begin(), only.end());
  int written = 0;
  for (const search::BestVariant& b : best) {
    if (!wanted.empty() && !wanted.count(b.task->name)) continue;
    wanted.erase(b.task->name);
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
    std::string header;
    std::vector<std::pair<std::string, std::string>> beside;  // the --torch files: name, text
    try {
      Candidate cand = parse_candidate(b.source, b.task->name + ".cu", *b.task);
      header = store::export_header(*b.task, cand, p);
      if (torch_extension) {
        const std::string h = store::export_file_name(*b.task);
        beside.push_back({store::torch_source_file_name(*b.task), store::export_torch_source(*b.task, cand, h)});
        beside.push_back({store::torch_loader_file_name(*b.task), store::export_torch_loader(*b.task, cand)});
        for (const store::TaskRecord& t : c.tasks)
          if (t.name == b.task->name) beside.push_back({b.task->name + ".json", t.contract});
        beside.push_back({b.task->name + ".cu", b.source});  // the candidate as measured: `kevo eval` re-times it
      }
    } catch (const InputError& e) {
      std::cerr << "kevo export: " << b.task->name << ": " << e.what() << "\n";
      return 2;
    }
    std::string file = out + "/" + store::export_file_name(*b.task);
    if (!write_file(file, header, "export")) return 2;
    for (const auto& [name, text] : beside)
      if (!write_file(out + "/" + name, text, "export")) return 2;
    std::cout << file << ": " << b.task->name << ", " << b.description << ", " << b.measurement->fitness
              << "x over eager";
    if (torch_extension) std::cout << " (and torch.ops.kevo." << store::torch_op_name(*b.task) << ")";
    if (b.measurement->speedup_vs_compile > 0) std::cout << ", " << b.measurement->speedup_vs_compile << "x over torch.compile";
    std::cout << "\n";
    ++written;
  }
  for (const std::string& t : wanted) std::cerr << "kevo export: " << t << ": no correct variant in " << path << "\n";
  if (written == 0) {
    std::cerr << "kevo export: " << path << " holds no correct variant to export\n";
    return 1;
  }
  return 0;
}

int cmd_report(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string path, html, json;
  opts.add_options()("campaign", po::value(&path)->required(), "the campaign file")(
      "html", po::value(&html), "write the report here (self-contained HTML with SVG plots)")(
      "json", po::value(&json)->implicit_value("-"), "the same figures as JSON, to this file or stdout");
  po::positional_options_description pos;
  pos.add("campaign", 1);
  po::variables_map vm;
  if (int rc = parse_options("report", "campaign.h5 [--html report.html] [--json [FILE]]", args, opts, pos, vm); rc >= 0)
    return rc;
  store::ReportData d;
  try {
    d = search::report_data(store::read_campaign(path, without_sources()), path);
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
