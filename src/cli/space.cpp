// `kevo space`: the design spaces a task lowers onto, their sizes, and rendered (and compiled)
// samples of their genomes. No GPU needed.
#include <fstream>
#include <iostream>
#include <random>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/candidate.h"
#include "core/task.h"
#include "eval/compile_pool.h"
#include "lower/kit.h"
#include "mutate/space.h"

namespace kevo::cli {

int cmd_space(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string task_path, out_dir;
  std::vector<std::string> archs;
  int sample = 0;
  int64_t seed = 1;
  opts.add_options()("task", po::value(&task_path)->required(), "task contract (JSON)")(
      "sample", po::value(&sample)->default_value(0), "render this many random legal genomes per space")(
      "compile", po::bool_switch(), "compile the samples with NVRTC (no GPU needed)")(
      "arch", po::value(&archs)->composing(), "target architecture for --compile, repeatable (default sm_90a)")(
      "seed", po::value(&seed)->default_value(1), "seed of the sampling")(
      "out", po::value(&out_dir), "write the rendered candidates (.cu) into this folder");
  po::positional_options_description pos;
  pos.add("task", 1);
  po::variables_map vm;
  if (int rc = parse_options("space", "TASK.json [--sample N [--compile --arch sm_90a]... [--out DIR]]", args, opts, pos, vm);
      rc >= 0)
    return rc;
  if (sample < 0 || sample > 1000000 || seed < 0) {
    std::cerr << "kevo space: --sample and --seed must be non-negative\n";
    return 2;
  }
  if (archs.empty()) archs.push_back("sm_90a");
  Task task;
  try {
    task = load_task(task_path);
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    return 2;
  }
  auto spaces = lower::lower(task);
  // The baseline's refusal, where it has one: what the generic family cannot lower yet.
  const std::string refusal = lower::generic_refusal(task);
  if (spaces.empty()) {
    std::cout << task.name << ": no template family serves this task yet (generic: " << refusal << ")\n";
    return 1;
  }
  std::cout << task.name << ": " << spaces.size() << " design space" << (spaces.size() == 1 ? "" : "s") << "\n";
  for (const auto& s : spaces) {
    int64_t legal = mutate::count_legal(*s);
    std::cout << "  " << s->id() << " (family " << s->manifest().family << "): " << s->description() << "\n    "
              << s->size() << " genomes";
    if (legal >= 0) {
      std::cout << ", " << legal << " legal for every workload";
    } else {
      constexpr int kDraws = 20000;
      std::cout << ", about " << static_cast<int64_t>(mutate::estimate_legal(*s, kDraws)) << " legal for every workload (from "
                << kDraws << " uniform draws)";
    }
    std::cout << "; knobs:";
    for (const auto& k : s->knobs()) {
      std::cout << " " << k.name << "{";
      for (size_t i = 0; i < k.values.size(); ++i) std::cout << (i ? "," : "") << k.values[i];
      std::cout << "}";
    }
    std::cout << "\n";
  }
  if (sample == 0) return 0;
  if (!out_dir.empty()) ::mkdir(out_dir.c_str(), 0755);

  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<eval::BuildRequest> requests;
  std::vector<std::string> labels;
  int bad = 0, rendered = 0;
  // Compiled samples are drawn per architecture, from the genomes legal there (the gemm family's
  // wgmma path is sm_90a's); without --compile, from every genome.
  const bool compile = vm["compile"].as<bool>();
  const std::vector<std::string> targets = compile ? archs : std::vector<std::string>{""};
  for (const std::string& target : targets) {
    auto arch_spaces = lower::lower(task, target);
    for (const auto& s : arch_spaces) {
      for (int i = 0; i < sample; ++i) {
        mutate::Genome g = s->random_genome(rng);
        ++rendered;
        std::string text = s->render(g);
        std::string name = g.to_string();
        Candidate c;
        try {
          c = parse_candidate(text, name + ".cu", task);
        } catch (const InputError& e) {
          std::cout << "  " << name << ": the rendered plan is invalid: " << e.what() << "\n";
          ++bad;
          continue;
        }
        if (!out_dir.empty()) {
          std::string file = s->id() + (target.empty() ? "" : "_" + target) + "_" + std::to_string(i) + ".cu";
          for (char& ch : file)
            if (ch == '/') ch = '_';
          std::ofstream(out_dir + "/" + file) << text;
        }
        if (!compile) continue;
        eval::BuildRequest r;
        r.source = c.source;
        r.name_expressions = c.kernel_names();
        r.arch = target;
        requests.push_back(std::move(r));
        labels.push_back(name + " " + target);
      }
    }
  }
  std::cout << "rendered " << rendered << " samples, " << bad << " with invalid plans\n";
  if (!requests.empty()) {
    eval::CompilePool pool(eval::CompilePoolConfig{});
    std::vector<eval::BuildResult> results = pool.build_all(requests);
    int failed = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].status == eval::BuildStatus::Ok) continue;
      if (failed++ < 10) std::cout << "  " << labels[i] << ": " << eval::to_string(results[i].status) << ": " << results[i].error << "\n";
    }
    std::cout << "compiled " << results.size() << ": " << results.size() - static_cast<size_t>(failed) << " ok, "
              << failed << " failed\n";
    bad += failed;
  }
  return bad ? 1 : 0;
}

}  // namespace kevo::cli
