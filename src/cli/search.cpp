// `kevo run`, `kevo ablate`, `kevo resume` and `kevo sweep`: campaigns, ablations and sweeps, on
// the GPU or replayed, with a live progress line.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/campaign_progress.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/error.h"
#include "eval/cuda_driver.h"
#include "policy/arms.h"
#include "search/ablation.h"
#include "search/campaign.h"
#include "evaluators/evaluator.h"
#include "search/results.h"
#include "search/sweep.h"
#include "search/train.h"
#include "store/campaign_file.h"

namespace kevo::cli {

namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Files as given; a folder stands for the .h5 files in it (sorted).
std::vector<std::string> expand_replay(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& g : given) {
    if (!is_dir(g)) {
      out.push_back(g);
      continue;
    }
    std::vector<std::string> found;
    if (DIR* d = ::opendir(g.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 3 && n.compare(n.size() - 3, 3, ".h5") == 0) found.push_back(g + "/" + n);
      }
      ::closedir(d);
    }
    if (found.empty()) throw InputError(Location{g, 0, 0}, "--replay", "holds no .h5 file");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

struct EvaluatorFlags {
  std::vector<std::string> replay;
  std::string fallback_replay, gpus = "all", torch_baseline, cache_dir;
  int trials = 2, compile_workers = 0, simulate_gpus = 0;
  double max_seconds = 2, sim_eval_seconds = 0;
  uint64_t seed = 1;

  // Settings a campaign file keeps, unless given again on the command line.
  void take_stored(const search::CampaignConfig& c, const po::variables_map& vm) {
    if (!vm.count("replay")) replay = c.replay;
    if (vm["trials"].defaulted()) trials = c.trials;
    if (vm["max-seconds"].defaulted()) max_seconds = c.max_seconds;
    if (!vm.count("torch-baseline")) torch_baseline = c.torch_baseline;
    seed = c.seed;
  }
  void store(search::CampaignConfig& c) const {
    c.trials = trials;
    c.max_seconds = max_seconds;
    c.torch_baseline = torch_baseline;
  }

  void add(po::options_description& o) {
    o.add_options()("replay", po::value(&replay)->composing(),
                    "answer from recorded measurements (a campaign or sweep file, or a folder of them); repeatable")(
        "fallback-replay", po::value(&fallback_replay),
        "where there is no GPU, replay from this file or folder instead (and say so)")(
        "gpus", po::value(&gpus)->default_value("all"), "GPUs to measure on: all, or a list like 0,1")(
        "trials", po::value(&trials)->default_value(2), "correctness trials per workload, each on fresh inputs")(
        "max-seconds", po::value(&max_seconds)->default_value(2), "timing repetitions per workload, at most (s)")(
        "torch-baseline", po::value(&torch_baseline), "tools/torch_baseline.py report: adds torch.compile figures")(
        "cache-dir", po::value(&cache_dir), "CUBIN cache folder")(
        "compile-workers", po::value(&compile_workers)->default_value(0), "NVRTC compile workers (0: one per core)")(
        "simulate-gpus", po::value(&simulate_gpus)->default_value(0),
        "measure the engine on this many simulated GPUs: compiled as on the GPU, answered from --replay's "
        "recordings after the time an evaluation holds its GPU")(
        "sim-eval-seconds", po::value(&sim_eval_seconds)->default_value(0),
        "with --simulate-gpus: how long each evaluation holds its GPU (0: as long as its recording took)");
  }

  // The evaluator these flags ask for; `note` says plainly when the fallback replay was taken.
  std::unique_ptr<evaluators::VariantEvaluator> make(std::vector<std::string>& replay_used, std::string& note) {
    if (trials < 1 || trials > 1000 || !(max_seconds > 0))
      throw InputError(Location{}, "--trials", "--trials and --max-seconds need sane positive values");
    if (compile_workers < 0 || compile_workers > 1024)
      throw InputError(Location{}, "--compile-workers", "give 0 (one per core) to 1024");
    if (simulate_gpus != 0) {
      evaluators::SimulationConfig sc;
      sc.gpus = simulate_gpus;
      replay_used = replay.empty() ? replay : expand_replay(replay);
      sc.replay = replay_used;
      sc.eval_seconds = sim_eval_seconds;
      sc.trials = trials;
      sc.compile_workers = compile_workers;
      sc.cache_dir = cache_dir;
      return evaluators::make_simulated_evaluator(sc);
    }
    if (sim_eval_seconds != 0)
      throw InputError(Location{}, "--sim-eval-seconds", "only with --simulate-gpus");
    std::vector<int> gpu_list;
    try {
      gpu_list = parse_gpus(gpus);
    } catch (const std::invalid_argument& e) {
      throw InputError(Location{}, "", e.what());
    }
    if (replay.empty() && !fallback_replay.empty() && !eval::cuda_driver_status().available) {
      replay = {fallback_replay};
      note = "no GPU here (" + eval::cuda_driver_status().error + "): replaying the measurements recorded in " +
             fallback_replay + " instead of measuring";
    }
    if (!replay.empty()) {
      replay_used = expand_replay(replay);
      return evaluators::make_replay_evaluator(replay_used);
    }
    evaluators::GpuEvaluatorConfig g;
    g.trials = trials;
    g.seed = seed;
    g.max_seconds = max_seconds;
    g.gpus = gpu_list;
    g.torch_baseline = torch_baseline;
    g.cache_dir = cache_dir;
    g.compile_workers = compile_workers;
    return evaluators::make_gpu_evaluator(g);
  }
};

std::string join_args(const std::string& cmd, const std::vector<std::string>& args) {
  std::string s = "kevo " + cmd;
  for (const auto& a : args) s += " " + a;
  return s;
}

// What the summary after a campaign reads of its file: the runs and generations, the runs' best
// variants alone, and (campaigns of the llm arm, which are small) the completions.
store::CampaignContents read_for_summary(const std::string& path) {
  store::ReadOptions o;
  o.sources = store::ReadOptions::Sources::none;
  o.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
  o.search_tables = false;
  store::CampaignContents c = store::read_campaign(path, o);
  if (std::any_of(c.runs.begin(), c.runs.end(), [](const store::RunRecord& r) { return policy::arm_uses_llm(r.arm); })) {
    o.search_tables = true;
    return store::read_campaign(path, o);
  }
  std::set<int64_t> best;
  for (const auto& r : c.runs)
    if (const store::GenerationRecord* last = search::last_generation(c, r.id); last && last->best_variant >= 0)
      best.insert(last->best_variant);
  c.variants = store::read_variants(path, best);
  return c;
}

void summary(const store::CampaignContents& c, const evaluators::VariantEvaluator& ev) {
  if (::isatty(STDERR_FILENO)) std::cerr << "\n";
  for (const auto& run : c.runs) {
    const store::GenerationRecord* last = search::last_generation(c, run.id);
    std::cout << run.task << ": ";
    if (!last) {
      std::cout << "no generation completed\n";
      continue;
    }
    std::cout << last->evaluations << " evaluations";
    if (last->unmeasured) std::cout << " (" << last->unmeasured << " had no recording: counted as unmeasured)";
    if (last->duplicates) std::cout << ", " << last->duplicates << " duplicates recognised";
    if (last->best_variant >= 0) {
      for (const auto& v : c.variants)
        if (v.id == last->best_variant) {
          std::cout << "; best " << fmt("%.3f", last->best_fitness) << "x over eager: variant " << v.id << " ";
          if (v.space.empty()) {
            std::cout << "(free-form, " << v.op << ")";
            continue;
          }
          std::cout << v.space << "{";
          for (size_t i = 0; i < v.genome.size(); ++i) std::cout << (i ? "," : "") << v.genome[i];
          std::cout << "}";
        }
    } else {
      std::cout << "; no correct variant yet";
    }
    std::cout << "\n";
  }
  if (!c.llm_samples.empty()) {
    std::map<std::string, int64_t> by_status;
    int64_t tokens = 0;
    for (const auto& s : c.llm_samples) {
      by_status[s.status]++;
      tokens += s.prompt_tokens + s.completion_tokens;
    }
    std::cout << "llm: " << c.llm_samples.size() << " samples (";
    bool first = true;
    for (const auto& [status, n] : by_status) {
      std::cout << (first ? "" : ", ") << n << " " << status;
      first = false;
    }
    std::cout << "), " << tokens << " tokens; `kevo export --samples` writes them as JSONL\n";
  }
  if (!c.generations.empty()) {
    const auto& g = c.generations.back();
    if (g.gpus > 0 && g.wall_seconds > 0)
      std::cout << "GPU busy " << fmt("%.1f", 100 * g.gpu_busy_seconds / (g.wall_seconds * g.gpus)) << "% of "
                << duration(g.wall_seconds) << " on " << ev.describe() << "\n";
  }
}

// Where the engine's time went (GPU and simulated evaluators): evaluations per minute, each GPU's
// busy share, this process's CPU time per evaluation, the loop's thread and the build pipeline.
void engine_summary(const evaluators::VariantEvaluator& ev, const search::Progress& last) {
  const evaluators::EngineFigures f = ev.figures();
  if (f.busy_seconds.empty() || !(last.elapsed_seconds > 0)) return;
  long jobs = 0;
  double busy = 0;
  std::string per_gpu;
  for (size_t k = 0; k < f.busy_seconds.size(); ++k) {
    jobs += k < f.jobs.size() ? f.jobs[k] : 0;
    busy += f.busy_seconds[k];
    per_gpu += (k ? " " : "") + fmt("%.1f", 100 * f.busy_seconds[k] / last.elapsed_seconds);
  }
  const double wall = last.elapsed_seconds;
  std::cout << "engine: " << jobs << " evaluations on GPUs in " << fmt("%.1f", wall) << " s: "
            << fmt("%.1f", 60.0 * static_cast<double>(jobs) / wall) << " per minute; busy "
            << fmt("%.1f", 100 * busy / (wall * static_cast<double>(f.busy_seconds.size()))) << "% (per GPU: " << per_gpu
            << ")\n";
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  const search::LoopSeconds& l = last.loop;
  std::cout << "engine: this process " << fmt("%.1f", cpu) << " s of CPU";
  if (jobs > 0) std::cout << " (" << fmt("%.1f", 1e3 * cpu / static_cast<double>(jobs)) << " ms per evaluation)";
  std::cout << "; the loop's thread: generate " << fmt("%.2f", l.generate) << " s, notify+update "
            << fmt("%.2f", l.notify_update) << " s, commit " << fmt("%.2f", l.commit) << " s, waiting for results "
            << fmt("%.2f", l.waiting) << " s\n";
  std::cout << "engine: builds: " << f.sources << " candidate texts, " << f.compiled << " compiled";
  if (f.compiled > 0)
    std::cout << " (NVRTC " << fmt("%.3f", f.compile_seconds / static_cast<double>(f.compiled)) << " s each, "
              << fmt("%.2f", f.compile_seconds / wall) << " cores busy compiling)";
  std::cout << ", " << f.cache_hits << " from the cache, " << f.failed_before_gpu
            << " failed before a GPU; the pipeline's thread busy " << fmt("%.1f", f.prepare_seconds) << " s\n";
  if (!f.phase_seconds.empty() && jobs > 0) {
    double total = 0;
    for (const auto& [phase, seconds] : f.phase_seconds) total += seconds;
    std::cout << "engine: per evaluation " << fmt("%.3f", total / static_cast<double>(jobs)) << " s:";
    for (const auto& [phase, seconds] : f.phase_seconds)
      std::cout << " " << phase << " " << fmt("%.3f", seconds / static_cast<double>(jobs)) << " s ("
                << fmt("%.0f", 100 * seconds / total) << "%)";
    std::cout << "\n";
  }
  if (f.screened + f.promoted > 0) {
    std::cout << "engine: screening: " << f.screened << " screened out, " << f.promoted << " screened and verified fully";
    if (f.promoted > 0)
      std::cout << " (their full fitness is " << fmt("%.3f", std::exp(f.promoted_log_ratio / static_cast<double>(f.promoted)))
                << "x the screen's estimate, geometric mean)";
    std::cout << "\n";
  }
}

// --llm-weight's number; a bad one is caught by the configuration's check.
double parse_weight(const std::string& w) {
  try {
    size_t used = 0;
    double v = std::stod(w, &used);
    return used == w.size() ? v : std::nan("");
  } catch (const std::exception&) {
    return std::nan("");
  }
}

// --screen: on, off, or auto (on where candidates are measured on GPUs, off where recordings answer).
bool screen_setting(const std::string& flag, const evaluators::VariantEvaluator& evaluator) {
  if (flag == "on") return true;
  if (flag == "off") return false;
  if (flag == "auto") return !evaluator.target_arch().empty();
  throw InputError(Location{}, "--screen", "must be on, off or auto, got '" + flag + "'");
}

// The search settings `kevo run` and `kevo ablate` share.
void add_search_options(po::options_description& opts, search::CampaignConfig& c, std::string& screen) {
  opts.add_options()(
      "screen", po::value(&screen)->default_value("auto"),
      "screen candidates (one trial and a short timing) and verify fully only those that could enter the archive: "
      "on, off, auto (on where GPUs measure)")(
      "policy-init", po::value(&c.policy_init), "learned policies: start from this checkpoint (learned-frozen needs one)")(
      "budget-evals", po::value(&c.budget_evals)->default_value(500), "evaluations per task")(
      "budget-seconds", po::value(&c.wall_seconds)->default_value(0), "stop proposing after this long (0: no limit)")(
      "max-generations", po::value(&c.max_generations)->default_value(0), "generations at most (0: no limit)")(
      "population", po::value(&c.population)->default_value(16), "offspring per island per generation")(
      "islands", po::value(&c.islands)->default_value(2), "islands per task, with ring migration")(
      "selection", po::value(&c.selection)->default_value("tournament"), "parent selection: tournament, proportional")(
      "tournament", po::value(&c.tournament)->default_value(3), "tournament size")(
      "migration-interval", po::value(&c.migration_interval)->default_value(4), "generations between migrations")(
      "migrants", po::value(&c.migrants)->default_value(1), "elites each island sends to the next")(
      "stagnation", po::value(&c.stagnation)->default_value(8), "generations without progress before an island is re-seeded")(
      "reward", po::value(&c.reward)->default_value("bucketed"), "reward for policy updates: bucketed, log_speedup");
  search::LlmSettings& l = c.llm;
  po::options_description llm("llm policy (docs/llm.md)");
  llm.add_options()(
      "llm-url", po::value(&l.url)->default_value(l.url), "OpenAI-compatible endpoint, up to /v1")(
      "llm-model", po::value(&l.model), "the model the server serves")(
      "llm-api-key-env", po::value(&l.api_key_env)->default_value(l.api_key_env),
      "environment variable holding the API key (never stored)")(
      "llm-temperature", po::value(&l.temperature)->default_value(l.temperature), "sampling temperature")(
      "llm-max-tokens", po::value(&l.max_tokens)->default_value(l.max_tokens), "tokens per completion, at most")(
      "llm-samples", po::value(&l.samples)->default_value(l.samples), "completions per request: one parent's children")(
      "llm-concurrency", po::value(&l.concurrency)->default_value(l.concurrency), "requests in flight, at most")(
      "llm-timeout", po::value(&l.timeout_seconds)->default_value(l.timeout_seconds), "seconds per request")(
      "llm-retries", po::value(&l.retries)->default_value(l.retries), "retries after 429, 5xx and timeouts")(
      "llm-token-budget", po::value(&l.token_budget)->default_value(0), "prompt + completion tokens for the campaign (0: no limit)")(
      "llm-weight", po::value<std::string>()->default_value("0.5")->notifier([&l](const std::string& w) {
        l.weight = w == "auto" ? -1 : parse_weight(w);
      }), "share of template parents the model rewrites (the others get template mutations); auto: a bandit")(
      "llm-mix", po::value(&l.mix)->default_value(l.mix), "the template policy beside the model: random, learned")(
      "llm-inspirations", po::value(&l.inspirations)->default_value(l.inspirations), "other elites shown in a prompt")(
      "llm-max-prompt-tokens", po::value(&l.max_prompt_tokens)->default_value(l.max_prompt_tokens),
      "tokens a prompt may take (the server's tokenizer counts them where it has one); library parts and other "
      "elites are shown while they fit")(
      "between-generations", po::value(&l.between_generations), "shell command run after each committed generation")(
      "load-adapter", po::value(&l.adapter_path), "after that command: load this LoRA adapter into vLLM and sample from it")(
      "adapter-name", po::value(&l.adapter_name)->default_value(l.adapter_name), "the name --load-adapter serves it as");
  opts.add(llm);
}

int input_error(const std::string& cmd, const std::exception& e) {
  std::cerr << "kevo " << cmd << ": " << e.what() << "\n";
  return 2;
}

// Runs a campaign with its progress lines (the last one in `last`); a stop signal commits what was
// measured, prints the engine summary of what ran and ends the process (exit_stopped). Non-zero:
// the campaign's input error, reported.
int run_campaign(const std::string& cmd, search::Campaign& campaign, const std::string& path,
                 const evaluators::VariantEvaluator& ev, search::Progress& last) {
  bool reported = false;
  try {
    if (!campaign.run(
            [&](const search::Progress& p) {
              last = p;
              reported = true;
              show(p);
            },
            stop_signalled)) {
      if (reported) engine_summary(ev, last);
      exit_stopped(cmd, path, last, reported);
    }
  } catch (const std::runtime_error& e) {  // InputError is one
    return input_error(cmd, e);
  }
  return 0;
}

// The summary of the campaign file at `path` once its campaign has run.
int summarize(const std::string& cmd, const std::string& path, const evaluators::VariantEvaluator& ev) {
  try {
    summary(read_for_summary(path), ev);
  } catch (const InputError& e) {
    return input_error(cmd, e);
  }
  return 0;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  po::options_description opts("options");
  search::CampaignConfig c;
  EvaluatorFlags ev;
  std::vector<std::string> tasks;
  std::string out, screen;
  int64_t seed = 1;
  bool force = false;
  opts.add_options()("task", po::value(&tasks)->composing(), "task contracts (JSON)")(
      "out", po::value(&out)->required(), "the campaign file to write (HDF5)")(
      "force", po::bool_switch(&force), "replace an existing --out file")(
      "policy", po::value(&c.arm)->default_value("random"), "the mutation policy: random, learned, learned-frozen, llm")(
      "seed", po::value(&seed)->default_value(1), "the campaign's seed");
  add_search_options(opts, c, screen);
  ev.add(opts);
  po::positional_options_description pos;
  pos.add("task", -1);
  po::variables_map vm;
  if (int rc = parse_options("run", "TASK.json... --out campaign.h5 [--budget-evals 500] [--replay space.h5]", args,
                             opts, pos, vm);
      rc >= 0)
    return rc;
  if (tasks.empty()) {
    std::cerr << "kevo run: give at least one task contract\n";
    return 2;
  }
  if (seed < 0) {
    std::cerr << "kevo run: --seed must not be negative\n";
    return 2;
  }
  c.seed = static_cast<uint64_t>(seed);
  ev.seed = c.seed;
  ev.store(c);
  line_buffered_stdout();
  catch_stop_signals();
  std::unique_ptr<evaluators::VariantEvaluator> evaluator;
  std::unique_ptr<search::Campaign> campaign;
  std::string note;
  try {
    search::validate(c);
    evaluator = ev.make(c.replay, note);
    c.screen = screen_setting(screen, *evaluator);
    if (force) ::unlink(out.c_str());
    campaign = search::Campaign::create(out, c, tasks, *evaluator, join_args("run", args));
  } catch (const InputError& e) {
    return input_error("run", e);
  } catch (const std::runtime_error& e) {
    return input_error("run", e);
  }
  if (!note.empty()) std::cout << "kevo run: " << note << "\n";
  std::cout << "campaign " << campaign->campaign_id() << " -> " << out << ": " << tasks.size() << " task"
            << (tasks.size() == 1 ? "" : "s") << ", policy " << c.arm << ", " << c.islands << " islands x "
            << c.population << ", " << c.budget_evals << " evaluations per task, on " << evaluator->describe() << "\n";
  search::Progress last;
  if (int rc = run_campaign("run", *campaign, out, *evaluator, last); rc != 0) return rc;
  if (int rc = summarize("run", out, *evaluator); rc != 0) return rc;
  engine_summary(*evaluator, last);
  if (!note.empty()) std::cout << "(replayed, not measured: " << note << ")\n";
  return 0;
}

int cmd_ablate(const std::vector<std::string>& args) {
  po::options_description opts("options");
  search::CampaignConfig c;
  EvaluatorFlags ev;
  std::vector<std::string> tasks;
  std::string out, arms_text, screen;
  int seeds = 3;
  int64_t first_seed = 1;
  bool force = false;
  opts.add_options()("task", po::value(&tasks)->composing(), "task contracts (JSON)")(
      "out", po::value(&out)->required(), "the ablation's campaign file to write (HDF5)")(
      "force", po::bool_switch(&force), "replace an existing --out file")(
      "arms", po::value(&arms_text)->default_value("random,learned"), "policies to compare: random, learned, learned-frozen, llm")(
      "seeds", po::value(&seeds)->default_value(3), "seeds per task and arm")(
      "first-seed", po::value(&first_seed)->default_value(1), "seeds are first-seed, first-seed+1, ...");
  add_search_options(opts, c, screen);
  ev.add(opts);
  po::positional_options_description pos;
  pos.add("task", -1);
  po::variables_map vm;
  if (int rc = parse_options("ablate", "TASK.json... --arms random,learned --seeds 5 --out ablation.h5 [--replay space.h5]",
                             args, opts, pos, vm);
      rc >= 0)
    return rc;
  if (tasks.empty()) {
    std::cerr << "kevo ablate: give at least one task contract\n";
    return 2;
  }
  if (seeds < 1 || seeds > 10000 || first_seed < 0) {
    std::cerr << "kevo ablate: --seeds must be between 1 and 10000 (and --first-seed not negative)\n";
    return 2;
  }
  std::vector<std::string> arms;
  std::stringstream in(arms_text);
  for (std::string a; std::getline(in, a, ',');) arms.push_back(a);
  std::vector<uint64_t> seed_list;
  for (int k = 0; k < seeds; ++k) seed_list.push_back(static_cast<uint64_t>(first_seed) + static_cast<uint64_t>(k));
  c.seed = seed_list.front();
  ev.seed = c.seed;
  ev.store(c);
  line_buffered_stdout();
  catch_stop_signals();
  std::unique_ptr<evaluators::VariantEvaluator> evaluator;
  std::unique_ptr<search::Campaign> campaign;
  std::string note;
  try {
    evaluator = ev.make(c.replay, note);
    c.screen = screen_setting(screen, *evaluator);
    if (force) ::unlink(out.c_str());
    campaign = search::Campaign::create_ablation(out, c, tasks, arms, seed_list, *evaluator, join_args("ablate", args));
  } catch (const InputError& e) {
    return input_error("ablate", e);
  } catch (const std::runtime_error& e) {
    return input_error("ablate", e);
  }
  if (!note.empty()) std::cout << "kevo ablate: " << note << "\n";
  search::Progress last;
  std::cout << "ablation " << campaign->campaign_id() << " -> " << out << ": " << tasks.size() << " task"
            << (tasks.size() == 1 ? "" : "s") << " x " << arms.size() << " arm" << (arms.size() == 1 ? "" : "s") << " x "
            << seeds << " seed" << (seeds == 1 ? "" : "s") << ", " << c.islands << " islands x " << c.population << ", "
            << c.budget_evals << " evaluations per run, on " << evaluator->describe() << "\n";
  bool reported = false;
  try {
    // The progress line names each task once, with its best over all arms and seeds.
    const bool finished = campaign->run([&](const search::Progress& p) {
      last = p;
      reported = true;
      if (p.part_run >= 0) return show(p);
      search::Progress per_task = p;
      per_task.best.clear();
      for (const auto& [task, best] : p.best) {
        auto it = std::find_if(per_task.best.begin(), per_task.best.end(), [&](auto& b) { return b.first == task; });
        if (it == per_task.best.end()) per_task.best.emplace_back(task, best);
        else it->second = std::max(it->second, best);
      }
      show(per_task);
    }, stop_signalled);
    if (!finished) exit_stopped("ablate", out, last, reported);
  } catch (const InputError& e) {
    return input_error("ablate", e);
  } catch (const std::runtime_error& e) {
    return input_error("ablate", e);
  }
  if (::isatty(STDERR_FILENO)) std::cerr << "\n";
  search::Ablation stats;
  try {
    stats = search::ablation_stats(read_for_summary(out));
  } catch (const InputError& e) {
    return input_error("ablate", e);
  }
  for (const search::ArmStats& a : stats.arms) {
    std::cout << a.task << ", " << a.arm << " (" << a.seeds.size() << " seeds): final fitness "
              << fmt("%.3f", a.final_fitness.mean) << "x, evaluations to 95% of the best ("
              << fmt("%.3f", a.target) << "x) " << fmt("%.1f", a.evals_to_target.mean);
    if (a.not_reached > 0) std::cout << " (" << a.not_reached << " never reached it: counted as " << a.budget << ")";
    std::cout << "\n";
  }
  std::cout << "kevo report " << out << " --html ablation.html: curves with 95% bootstrap bands and paired comparisons\n";
  engine_summary(*evaluator, last);
  if (!note.empty()) std::cout << "(replayed, not measured: " << note << ")\n";
  return 0;
}

int cmd_resume(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string path;
  EvaluatorFlags ev;
  opts.add_options()("campaign", po::value(&path)->required(), "the campaign file");
  ev.add(opts);
  po::positional_options_description pos;
  pos.add("campaign", 1);
  po::variables_map vm;
  if (int rc = parse_options("resume", "campaign.h5", args, opts, pos, vm); rc >= 0) return rc;
  line_buffered_stdout();
  catch_stop_signals();
  std::unique_ptr<evaluators::VariantEvaluator> evaluator;
  std::unique_ptr<search::Campaign> campaign;
  std::string note;
  try {
    // A replayed campaign goes on replaying; a measured one measures as it did.
    ev.take_stored(search::Campaign::stored_config(path), vm);
    std::vector<std::string> used;
    evaluator = ev.make(used, note);
    campaign = search::Campaign::resume(path, *evaluator);
  } catch (const InputError& e) {
    return input_error("resume", e);
  } catch (const std::runtime_error& e) {
    return input_error("resume", e);
  }
  if (!note.empty()) std::cout << "kevo resume: " << note << "\n";
  std::cout << "resuming " << path << " on " << evaluator->describe() << "\n";
  search::Progress last;
  if (int rc = run_campaign("resume", *campaign, path, *evaluator, last); rc != 0) return rc;
  if (int rc = summarize("resume", path, *evaluator); rc != 0) return rc;
  engine_summary(*evaluator, last);
  return 0;
}

int cmd_sweep(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::vector<std::string> tasks;
  std::string out;
  search::SweepConfig sc;
  std::vector<std::string> fixes;
  int64_t seed = 1;
  EvaluatorFlags ev;
  opts.add_options()("task", po::value(&tasks)->composing(), "task contracts (JSON)")(
      "out", po::value(&out)->required(), "the sweep file (HDF5); an existing one is continued")(
      "limit", po::value(&sc.limit)->default_value(200), "genomes per task, shared between its spaces")(
      "seed", po::value(&seed)->default_value(1), "which genomes of spaces too large to measure whole")(
      "batch", po::value(&sc.batch)->default_value(32), "genomes per batch (one commit each)")(
      "sources", po::bool_switch(&sc.sources), "keep the candidates' texts in the file")(
      "fix", po::value(&fixes)->composing(), "sweep a sub-space: KNOB=V[,V...] (repeatable), e.g. kCluster=4,8");
  ev.add(opts);
  po::positional_options_description pos;
  pos.add("task", -1);
  po::variables_map vm;
  if (int rc = parse_options("sweep", "TASK.json... --out space.h5 [--limit 200]", args, opts, pos, vm); rc >= 0)
    return rc;
  if (tasks.empty() || seed < 0) {
    std::cerr << "kevo sweep: give at least one task contract (and a seed >= 0)\n";
    return 2;
  }
  sc.seed = static_cast<uint64_t>(seed);
  line_buffered_stdout();
  std::unique_ptr<evaluators::VariantEvaluator> evaluator;
  std::string note;
  try {
    for (const std::string& f : fixes) {
      size_t eq = f.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
        throw InputError(Location{}, "--fix", "'" + f + "': use KNOB=V or KNOB=V1,V2");
      std::stringstream in(f.substr(eq + 1));
      for (std::string v; std::getline(in, v, ',');) {
        size_t used = 0;
        int64_t x = 0;
        try {
          x = std::stoll(v, &used);
        } catch (...) {
          used = 0;
        }
        if (used == 0 || used != v.size()) throw InputError(Location{}, "--fix", "'" + f + "': '" + v + "' is not an integer");
        sc.fix[f.substr(0, eq)].push_back(x);
      }
    }
    std::vector<std::string> used;
    evaluator = ev.make(used, note);
    std::cout << "sweep -> " << out << " on " << evaluator->describe() << "\n";
    search::run_sweep(out, tasks, sc, *evaluator, join_args("sweep", args), [](const search::SweepProgress& p) {
      std::cerr << p.task << ": " << p.measured << "/" << p.total << " measured, " << p.ok << " ok, best "
                << fmt("%.3f", p.best) << "x";
      if (p.gpu_busy_fraction > 0) std::cerr << ", GPU busy " << fmt("%.0f", 100 * p.gpu_busy_fraction) << "%";
      std::cerr << "\n";
    });
  } catch (const InputError& e) {
    return input_error("sweep", e);
  } catch (const std::runtime_error& e) {
    return input_error("sweep", e);
  }
  return 0;
}

int cmd_train_policy(const std::vector<std::string>& args) {
  po::options_description opts("options");
  search::CampaignConfig c;
  EvaluatorFlags ev;
  std::vector<std::string> tasks;
  std::string out, screen;
  int rounds = 1;
  int64_t seed = 1;
  opts.add_options()("task", po::value(&tasks)->composing(), "task contracts (JSON)")(
      "out", po::value(&out)->required(), "the policy checkpoint to write (for --policy-init)")(
      "rounds", po::value(&rounds)->default_value(1), "passes over the tasks")(
      "seed", po::value(&seed)->default_value(1), "seed of the first campaign (each next one adds 1)");
  add_search_options(opts, c, screen);
  ev.add(opts);
  po::positional_options_description pos;
  pos.add("task", -1);
  po::variables_map vm;
  if (int rc = parse_options("train-policy", "TASK.json... --out policy.pt [--replay space.h5] [--rounds 1]", args,
                             opts, pos, vm);
      rc >= 0)
    return rc;
  if (tasks.empty() || seed < 0 || rounds < 1 || rounds > 1000) {
    std::cerr << "kevo train-policy: give at least one task contract, --rounds between 1 and 1000, --seed >= 0\n";
    return 2;
  }
  c.seed = static_cast<uint64_t>(seed);
  c.arm = "learned";
  ev.seed = c.seed;
  ev.store(c);
  std::string note;
  try {
    search::validate(c);
    std::unique_ptr<evaluators::VariantEvaluator> evaluator = ev.make(c.replay, note);
    c.screen = screen_setting(screen, *evaluator);
    if (!note.empty()) std::cout << "kevo train-policy: " << note << "\n";
    std::cout << "training a learned policy over " << tasks.size() << " task" << (tasks.size() == 1 ? "" : "s") << " x "
              << rounds << " round" << (rounds == 1 ? "" : "s") << ", " << c.budget_evals << " evaluations each, on "
              << evaluator->describe() << " -> " << out << "\n";
    const std::vector<search::TrainStep> steps =
        search::train_policy(out, c, rounds, tasks, *evaluator, [](const search::TrainStep& s) {
          std::cout << "round " << s.round + 1 << " " << s.task << ": " << s.evaluations << " evaluations, best "
                    << fmt("%.3f", s.best) << "x\n";
        });
    if (!steps.empty() && steps.back().landscape >= 2)
      std::cout << "landscape model fitted to " << steps.back().landscape
                << " measured genomes of these tasks (replay recordings and the campaigns' measurements)\n";
  } catch (const InputError& e) {
    return input_error("train-policy", e);
  } catch (const std::runtime_error& e) {
    return input_error("train-policy", e);
  }
  return 0;
}

}  // namespace kevo::cli
