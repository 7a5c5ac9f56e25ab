// The campaign loop. Each generation reads as five verbs: generate candidates (the policies'
// proposals), build them (compile, overlapping the previous generation's measurement), run them
// (measure on the GPU, or answer from the file when re-deriving), notify the results (archives,
// rewards), update (policies, islands), then commit it to the campaign file.
//
// Everything a generation decides is a function of the configuration, the seed and the
// measurements recorded so far: generation g+1 is proposed (while generation g is measured) from
// the state after generation g-1, with an RNG forked from (seed, run, g+1, island). That makes a
// replay campaign reproducible, and lets `kevo resume` continue exactly: from the search's state
// the file kept after its last two generations (the state after g-1 proposes generation g+1
// again, then the state after g is taken), or, where the file has none, by re-deriving every
// committed generation from the file's recordings.
#include "search/campaign.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <set>

#include "core/error.h"
#include "core/fitness.h"
#include "core/sha256.h"
#include "core/task.h"
#include "mutate/space.h"
#include "search/build_info.h"
#include "search/commit.h"
#include "search/feedback.h"
#include "search/hook.h"
#include "search/proposals.h"
#include "search/recording.h"
#include "search/resume_state.h"
#include "search/state.h"
#include "store/campaign_file.h"
#include "store/campaign_writer.h"

namespace kevo::search {

namespace {

using Clock = std::chrono::steady_clock;

std::string random_hex(int bytes) {
  std::random_device rd;
  std::string s;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xff;
    s += hex[v >> 4];
    s += hex[v & 15];
  }
  return s;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Adds the time until it goes out of scope to `into`.
struct Timed {
  double& into;
  Clock::time_point from = Clock::now();
  ~Timed() { into += std::chrono::duration<double>(Clock::now() - from).count(); }
};

// Whether the loop proposes generation g+1 while generation g is measured (from the state after
// g-1): always, but in a campaign that screens after generation 0, whose archive gives generation
// 1 its bars (an empty archive gives none).
bool overlaps(const CampaignConfig& c, int g) { return !(c.screen && g == 0); }

}  // namespace

struct Campaign::Impl {
  SearchState s;
  evaluators::VariantEvaluator* evaluator = nullptr;
  std::shared_ptr<policy::LlmClient> llm_client;  // one for every llm run: one concurrency limit, one budget
  Recording recording;                            // resume: the generations the file holds
  std::optional<Batch> in_flight;                 // resume: the generation after them, proposed again
  std::string campaign_id;
  int first_generation = 0;
  Clock::time_point start = Clock::now();
  double busy_at_start = 0;
  int submitted = 0;                              // generations submitted to the evaluator, not collected
  LoopSeconds times;
  std::function<bool()> stop;                     // asked while waiting and between generations
  bool stopped = false;                           // it said yes: nothing more is handed over

  // What the evaluator still holds is collected before the runs its requests point into go.
  ~Impl() { drain(); }

  // The configuration's choices and the runs of the file's records.
  void init(const std::string& path, const CampaignConfig& config, const store::CampaignContents& head,
            const std::string& init) {
    s.path = path;
    s.config = config;
    s.parents = make_parent_selection(config.selection, config.tournament);
    s.reward = make_reward(config.reward);
    s.target = evaluator->gpu_name();
    s.runs = make_runs(path, config, head.tasks, head.runs, init, evaluator->target_arch(), llm_client);
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  bool from_file(const Batch& b) const { return recording.covers(b.generation); }
  // Whether to stop (sticky once asked and answered yes).
  bool stop_requested() {
    if (!stopped && stop && stop()) stopped = true;
    return stopped;
  }
  // Each run's part of a generation is committed as soon as it is measured where there are several
  // runs; a source editor's completions earn their rewards only once the whole generation is
  // measured, so its campaigns commit whole generations.
  bool commits_parts() const { return s.runs.size() > 1 && !s.any_editor(); }

  // ---- the five verbs ---------------------------------------------------------------------------

  // Generation g's candidates; none once a generation or time limit is reached.
  Batch generate(int g) {
    const CampaignConfig& c = s.config;
    if ((c.max_generations > 0 && g >= c.max_generations) || (c.wall_seconds > 0 && elapsed() >= c.wall_seconds)) {
      Batch none;
      none.generation = g;
      return none;
    }
    Timed generating{times.generate};
    return propose(s, g);
  }

  // Hands generation b to the evaluator, whose compiles and GPU jobs for it start behind the earlier
  // generations'; nothing for a generation the file answers, nor for the runs' parts a resumed file
  // holds already (their measurements are the file's).
  void submit(Batch& b) {
    if (b.empty() || from_file(b)) return;
    adopt_partial(recording, b, s.path);
    std::vector<evaluators::EvalRequest> live;
    for (size_t i = 0; i < b.requests.size(); ++i)
      if (!b.premade[i]) live.push_back(b.requests[i]);
    if (live.empty()) return;
    evaluator->submit(std::move(live));
    ++submitted;
  }

  // Whether the evaluator's next n records are measured; waits for them unless a stop comes first.
  bool await(size_t n) {
    Timed waiting{times.waiting};
    if (!stop) return true;
    while (!stop_requested())
      if (evaluator->ready(n, 0.1)) return true;
    return evaluator->ready(n, 0);
  }

  // One measurement per request: recorded ones when re-deriving, render failures and the parts a
  // resumed file holds as they are, the evaluator's for the rest, in request order whichever was
  // measured first. Taken a run's part at a time: each part but the last is committed as soon as it
  // is measured (commits_parts), with its progress line. Nothing when a stop came before every part
  // was measured (the parts measured by then are committed).
  std::optional<std::vector<store::MeasurementRecord>> collect(Batch& b, const std::function<void(const Progress&)>& report) {
    if (from_file(b)) return recorded_results(recording, b, s.path);
    std::vector<store::MeasurementRecord> out(b.requests.size());
    const std::vector<BatchPart> parts = parts_of(b);
    size_t live_total = 0, live_taken = 0;
    for (size_t i = 0; i < b.requests.size(); ++i) live_total += !b.premade[i];
    for (size_t k = 0; k < parts.size(); ++k) {
      const BatchPart& part = parts[k];
      size_t live = 0;
      for (size_t i = part.requests_begin; i < part.requests_end; ++i) live += !b.premade[i];
      std::vector<store::MeasurementRecord> got;
      if (live > 0) {
        if (!await(live)) return std::nullopt;
        Timed waiting{times.waiting};
        const bool last = live_taken + live == live_total;
        if (last) --submitted;
        try {
          got = evaluator->collect(live);
        } catch (...) {
          if (!last) --submitted;  // a collect that throws has taken the batch too
          throw;
        }
        live_taken += live;
      }
      for (size_t i = part.requests_begin, j = 0; i < part.requests_end; ++i) {
        if (b.premade[i]) {
          out[i] = *b.premade[i];
          continue;
        }
        out[i] = std::move(got.at(j++));
        out[i].variant = b.requests[i].variant;
      }
      if (commits_parts() && k + 1 < parts.size() && k >= b.parts_committed) {
        double committing = 0;
        {
          Timed timed{committing};
          commit_part(s, b, part, out);
        }
        times.commit += committing;
        b.parts_committed = k + 1;
        if (report) report(part_progress(b, part, out, committing));
      }
    }
    return out;
  }

  // What the evaluator still holds, collected and dropped before the runs its requests point into go.
  void drain() noexcept {
    for (; submitted > 0; --submitted) try {
        evaluator->collect();
      } catch (...) {
      }
  }

  // The policies learn from what they measured and earned; stale islands start over; elites migrate.
  void update(int g, const std::vector<policy::Feedback>& feedback) {
    for (Run& run : s.runs) {
      const policy::Feedback& f = feedback[static_cast<size_t>(run.id)];
      if (!f.empty()) run.policy->update(s.context(run, g), f);
      reseed_stagnant(run.islands, run.best_elite, s.config.stagnation);
      migrate(run.islands, g, s.config.migration_interval, s.config.migrants);
    }
  }

  // After a generation is measured: notify, update, and commit it (or, re-deriving it, restore the
  // policies to what the file holds after it).
  // `then`, where given, runs between the update and the commit (it proposes the next generation
  // where that waits for this one: the state committed after a generation is always the one the
  // generation after it was proposed from, as a resume expects).
  void finish(Batch& b, const std::vector<store::MeasurementRecord>& results,
              const std::function<void(const Progress&)>& report, const std::function<void()>& then = {}) {
    {
      Timed notifying{times.notify_update};
      update(b.generation, notify_results(s, b, results));
    }
    for (Run& run : s.runs) forget_outcomes(run);
    if (then) then();
    const bool replaying = from_file(b);
    double committing = 0;
    if (replaying) {
      restore_policies(recording, s.runs, b.generation);
    } else {
      Timed timed{committing};
      commit(s, b, results, commit_times());
    }
    times.commit += committing;
    if (report) {
      if (!replaying) {
        // The parts not reported as they were committed: the run's figures now include them.
        const std::vector<BatchPart> parts = parts_of(b);
        for (size_t k = commits_parts() ? parts.size() - 1 : 0; k < parts.size(); ++k) {
          const Run& run = s.runs[static_cast<size_t>(parts[k].run)];
          Progress p = progress(b.generation, false);
          p.part_run = run.id;
          p.part_task = run_label(run);
          p.part_evaluations = run.evaluations;
          p.part_best = run.best;
          p.commit_seconds = committing;
          report(p);
        }
      }
      Progress p = progress(b.generation, replaying);
      p.commit_seconds = committing;
      report(p);
    }
  }

  // A run in a progress line: its task, and its arm and seed where the task has several runs.
  std::string run_label(const Run& run) const {
    int same = 0;
    for (const Run& r : s.runs) same += r.task->name == run.task->name;
    if (same <= 1) return run.task->name;
    return run.task->name + " (" + run.arm + ", seed " + std::to_string(run.seed) + ")";
  }

  // A part's line, before the generation is notified: the run's figures with the part's added.
  Progress part_progress(const Batch& b, const BatchPart& part, const std::vector<store::MeasurementRecord>& results,
                         double committing) const {
    const Run& run = s.runs[static_cast<size_t>(part.run)];
    Progress p = progress(b.generation, false);
    p.part_run = run.id;
    p.part_task = run_label(run);
    p.part_evaluations = run.evaluations + static_cast<int64_t>(part.requests_end - part.requests_begin);
    p.part_best = run.best;
    for (size_t i = part.requests_begin; i < part.requests_end; ++i)
      if (results[i].status == "ok" && results[i].fitness > p.part_best) p.part_best = results[i].fitness;
    // The campaign's count: what the generation's parts up to this one add.
    p.evaluations += static_cast<int64_t>(part.requests_end);
    p.commit_seconds = committing;
    return p;
  }

  // ---- the loops --------------------------------------------------------------------------------

  // The first generation to run: the one in flight when a resumed file was committed, or the next.
  Batch start_batch() {
    if (!in_flight) return generate(first_generation);
    Batch b = std::move(*in_flight);
    in_flight.reset();
    return b;
  }

  // Generation g is measured while generation g+1 is generated and handed to the evaluator, whose
  // GPUs go on with g+1's jobs as each is done with g's (none waits for g's slowest job), and
  // generation g+2 is generated (from the state after g) while they measure g+1.
  //
  // A stop (stop_requested) hands nothing more over: the generation being measured commits the
  // runs' parts measured by then (or, measured whole, the generation), and the loop ends; what the
  // evaluator still holds is not waited for here. Generation g+1 is still proposed before g is
  // committed, as the resume states expect.
  // True when the campaign ran to its end, false when it stopped.
  //
  // A campaign that screens proposes generation 1 once generation 0 is measured and notified
  // (overlaps()), before it is committed.
  bool loop(const std::function<void(const Progress&)>& report) {
    if (!s.config.llm.between_generations.empty()) return serial_loop(report);
    try {
      Batch cur = start_batch();
      if (!cur.empty() && stop_requested()) return false;
      submit(cur);
      while (!cur.empty()) {
        const bool overlap = overlaps(s.config, cur.generation);
        Batch next;
        if (overlap) {
          next = generate(cur.generation + 1);
          if (!stop_requested()) submit(next);
        }
        std::optional<std::vector<store::MeasurementRecord>> results = collect(cur, report);
        if (!results) return false;
        if (overlap) {
          finish(cur, *results, report);
        } else {
          finish(cur, *results, report, [&] { next = generate(cur.generation + 1); });
          if (!stop_requested()) submit(next);
        }
        if (!next.empty() && stop_requested()) return false;
        cur = std::move(next);
      }
      return true;
    } catch (...) {
      drain();
      throw;
    }
  }

  // With a hook between generations, generation g+1 is generated after generation g's hook (the
  // model it asks may have changed), so nothing overlaps.
  bool serial_loop(const std::function<void(const Progress&)>& report) {
    for (Batch cur = start_batch(); !cur.empty(); cur = generate(cur.generation + 1)) {
      if (stop_requested()) return false;
      submit(cur);
      std::optional<std::vector<store::MeasurementRecord>> results = collect(cur, report);
      if (!results) return false;
      finish(cur, *results, report);
      if (!from_file(cur)) run_between_generations(s.config.llm, s.path, cur.generation, llm_client.get());
    }
    return true;
  }

  bool resume_from_states(int last);

  // ---- figures ----------------------------------------------------------------------------------

  CommitTimes commit_times() const {
    return {recording.wall_seconds + elapsed(),
            recording.gpu_busy_seconds + evaluator->gpu_busy_seconds() - busy_at_start, evaluator->gpus()};
  }

  Progress progress(int g, bool replaying) const {
    Progress p;
    p.generation = g;
    p.replaying_file = replaying;
    for (const Run& run : s.runs) {
      p.evaluations += run.evaluations;
      p.budget += s.config.budget_evals;
      p.unmeasured += run.unmeasured;
      p.screened += run.screened;
      p.duplicates += run.duplicates;
      p.best.emplace_back(run.task->name, run.best);
    }
    p.elapsed_seconds = elapsed();
    p.loop = times;
    const int gpus = evaluator->gpus();
    if (gpus > 0 && p.elapsed_seconds > 0)
      p.gpu_busy_fraction = (evaluator->gpu_busy_seconds() - busy_at_start) / (p.elapsed_seconds * gpus);
    const int64_t left = p.budget - p.evaluations;
    if (p.evaluations > 0)
      p.seconds_left = p.elapsed_seconds / static_cast<double>(p.evaluations) * static_cast<double>(left);
    if (s.config.wall_seconds > 0)
      p.seconds_left = std::min(p.seconds_left, std::max(0.0, s.config.wall_seconds - p.elapsed_seconds));
    if (llm_client) {
      const policy::LlmStats st = llm_client->stats();
      p.llm_requests = st.requests;
      p.llm_failed = st.failed;
      p.llm_rate_limited = st.rate_limited;
      p.llm_timeouts = st.timeouts;
      p.llm_tokens = st.prompt_tokens + st.completion_tokens;
    }
    p.llm_bad_replies = s.llm_bad_replies;
    return p;
  }
};

// ---- Campaign ------------------------------------------------------------------------------------

Campaign::Campaign() : impl_(std::make_unique<Impl>()) {}
Campaign::~Campaign() = default;

const std::string& Campaign::path() const { return impl_->s.path; }
const std::string& Campaign::campaign_id() const { return impl_->campaign_id; }

std::unique_ptr<Campaign> Campaign::create(const std::string& path, const CampaignConfig& config,
                                           const std::vector<std::string>& task_files, evaluators::VariantEvaluator& evaluator,
                                           const std::string& command) {
  return create_ablation(path, config, task_files, {config.arm}, {config.seed}, evaluator, command);
}

std::unique_ptr<Campaign> Campaign::create_ablation(const std::string& path, const CampaignConfig& config,
                                                    const std::vector<std::string>& task_files,
                                                    const std::vector<std::string>& arms,
                                                    const std::vector<uint64_t>& seeds, evaluators::VariantEvaluator& evaluator,
                                                    const std::string& command) {
  if (arms.empty()) throw InputError(Location{}, "--arms", "give at least one arm");
  if (seeds.empty()) throw InputError(Location{}, "--seeds", "give at least one seed");
  if (std::set<std::string>(arms.begin(), arms.end()).size() != arms.size())
    throw InputError(Location{}, "--arms", "an arm is given twice");
  if (std::set<uint64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
    throw InputError(Location{}, "--seeds", "a seed is given twice");
  std::vector<CampaignConfig> per_arm_seed;  // (arm, seed) in arm-major order
  for (const std::string& arm : arms)
    for (uint64_t seed : seeds) {
      CampaignConfig rc = config;
      rc.arm = arm;
      rc.seed = seed;
      validate(rc);
      per_arm_seed.push_back(rc);
    }
  if (exists(path))
    throw InputError(Location{path, 0, 0}, "", "exists already; continue it with `kevo resume " + path +
                                                   "` or choose another --out");
  std::unique_ptr<Campaign> c(new Campaign());
  Impl& impl = *c->impl_;
  impl.evaluator = &evaluator;
  store::CampaignContents k;
  k.campaign_id = random_hex(8);
  k.kevo_version = kevo_version();
  k.kevo_commit = kevo_commit();
  k.created = now_iso();
  k.templates_hash = mutate::templates_hash();
  k.command = command;
  k.fitness = kFitnessWeightedTime;
  std::set<std::string> names;
  for (const std::string& f : task_files) {
    std::string text = read_input_file(f);
    Task t = parse_task(text, f);  // errors name the user's file
    if (!names.insert(t.name).second) throw InputError(Location{f, 0, 0}, "name", "task '" + t.name + "' given twice");
    k.tasks.push_back({t.name, text, sha256_hex(text)});
  }
  // Runs task-major, then arm, then seed: an ordinary campaign's run i is its task i.
  for (const store::TaskRecord& t : k.tasks)
    for (const CampaignConfig& rc : per_arm_seed)
      k.runs.push_back({static_cast<int32_t>(k.runs.size()), t.name, rc.arm, rc.seed, config_to_json(rc)});
  const std::string init = policy_init(per_arm_seed.front(), k.runs, {});
  if (!init.empty()) k.checkpoints.push_back({k.runs.front().id, -1, "policy_init", init});
  impl.init(path, per_arm_seed.front(), k, init);
  impl.campaign_id = k.campaign_id;
  k.spaces = space_records(impl.s.runs);
  store::write_campaign(path, k);  // the file exists from the start: tasks, runs, spaces, no generation yet
  impl.s.file = store::CampaignWriter::open(path);
  return c;
}

namespace {

// What a resume reads before deciding how to go on: the header, tasks, runs, generations and the
// checkpoints' rows (with the policy_init bytes only).
store::CampaignContents read_head(const std::string& path) {
  store::ReadOptions o;
  o.sources = store::ReadOptions::Sources::none;
  o.checkpoint_bytes = store::ReadOptions::Checkpoints::initial;
  o.search_tables = false;
  store::CampaignContents k = store::read_campaign(path, o);
  if (k.runs.empty()) throw InputError(Location{path, 0, 0}, "", "campaign file: holds no run");
  if (fitness_name(k.fitness) != kFitnessWeightedTime)
    throw InputError(Location{path, 0, 0}, "", "campaign file: measured with the fitness " + fitness_name(k.fitness) +
                                                   "; this kevo measures " + kFitnessWeightedTime +
                                                   ", so it cannot continue it: start a new campaign");
  return k;
}

const store::ResumeState* state_of(const std::vector<store::ResumeState>& states, int generation) {
  for (const store::ResumeState& st : states)
    if (st.generation == generation) return &st;
  return nullptr;
}

}  // namespace

CampaignConfig Campaign::stored_config(const std::string& path) {
  return config_from_json(read_head(path).runs.front().config);
}

// From the resume states: the runs' duplicate indexes from the file's variants; then, for the
// overlapping loop, generation last+1 proposed again from the state after last-1 (what proposed
// it) before the state after `last` is taken; for the serial loop, that state and the next
// generation. False when the file has not the states this needs.
bool Campaign::Impl::resume_from_states(int last) {
  if (last < 0 || s.any_editor()) return false;
  const std::vector<store::ResumeState> states = store::read_resume_states(s.path);
  const bool serial = !s.config.llm.between_generations.empty();
  const store::ResumeState* after_last = state_of(states, last);
  const store::ResumeState* before = serial ? after_last : state_of(states, last - 1);
  if (!after_last || !before) return false;
  int64_t variants = 0;
  std::set<int64_t> partial;  // generation last+1's first runs' parts, committed as they were measured
  store::scan_variant_keys(s.path, [&](const store::VariantKey& v) {
    if (v.generation > last) {
      partial.insert(v.id);
      return;
    }
    variants = std::max(variants, v.id + 1);
    if (v.duplicate_of == -1 && v.run >= 0 && static_cast<size_t>(v.run) < s.runs.size())
      s.runs[static_cast<size_t>(v.run)].by_hash.set(v.source_hash, v.id);
  });
  if (!partial.empty()) {
    recording.partial_variants = store::read_variants(s.path, partial);
    for (store::MeasurementRecord& m : store::read_measurements(s.path, partial))
      recording.partial_measurements[m.variant] = std::move(m);
  }
  load_resume_state(s, before->bytes);
  if (s.next_variant != variants)
    throw InputError(Location{s.path, 0, 0}, "", "cannot resume: the resume state does not match the file's variants");
  first_generation = last + 1;
  if (serial) return true;
  Batch b = generate(last + 1);
  const int64_t proposed_to = s.next_variant;
  load_resume_state(s, after_last->bytes);
  if (s.next_variant != proposed_to)
    throw InputError(Location{s.path, 0, 0}, "",
                     "cannot resume: generation " + std::to_string(last + 1) +
                         " does not re-derive as it was proposed; the templates or kevo changed since");
  in_flight = std::move(b);  // empty when the campaign had ended
  return true;
}

std::unique_ptr<Campaign> Campaign::resume(const std::string& path, evaluators::VariantEvaluator& evaluator) {
  std::unique_ptr<Campaign> c(new Campaign());
  Impl& impl = *c->impl_;
  impl.evaluator = &evaluator;
  const store::CampaignContents head = read_head(path);
  const CampaignConfig config = config_from_json(head.runs.front().config);
  if (head.templates_hash != mutate::templates_hash())
    throw InputError(Location{path, 0, 0}, "",
                     "cannot resume: the file was written with other kernel templates (kevo " + head.kevo_commit + ")");
  impl.init(path, config, head, policy_init(config, head.runs, head.checkpoints));
  impl.campaign_id = head.campaign_id;
  SearchState& s = impl.s;
  for (const store::CheckpointRecord& cp : head.checkpoints)
    if (cp.kind == "policy") s.checkpointed.insert({cp.run, cp.generation});
  impl.recording = recording_after(head.generations);
  s.last_committed = impl.recording.through;
  if (!impl.resume_from_states(impl.recording.through)) {
    // Re-derive every generation the file holds, from the whole file.
    impl.recording = recording_of(store::read_campaign(path));
    const store::CampaignContents& k = *impl.recording.contents;
    if (s.any_editor())
      for (const store::SourceRecord& src : k.sources) s.editor_sources.emplace(src.hash, src.text);
    s.llm_samples = static_cast<int64_t>(k.llm_samples.size());
    for (const store::LlmSampleRecord& x : k.llm_samples)
      s.llm_bad_replies += x.status == "bad_reply" || x.status == "edit_failed" || x.status == "rejected";
    replay_samples(k, s.runs, impl.llm_client.get());
  }
  s.file = store::CampaignWriter::open(path);  // rolls a torn commit back; converts a kevo-campaign/1 file
  return c;
}

bool Campaign::run(const std::function<void(const Progress&)>& progress, const std::function<bool()>& stop) {
  impl_->start = Clock::now();
  impl_->busy_at_start = impl_->evaluator->gpu_busy_seconds();
  impl_->stop = stop;
  const bool finished = impl_->loop(progress);
  impl_->recording = Recording();
  finish_checkpoints(impl_->s);
  impl_->s.file->close();
  return finished;
}

}  // namespace kevo::search
