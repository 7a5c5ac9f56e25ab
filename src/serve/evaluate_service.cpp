// The evaluate endpoint: request checking, task and candidate resolution, the bounded queue in front
// of the evaluator (one measuring thread, batches of what is waiting) and the JSON answer.
#include "serve/evaluate_service.h"

#include <algorithm>
#include <filesystem>

#include "core/candidate.h"
#include "core/error.h"
#include "core/sha256.h"
#include "mutate/edit.h"
#include "mutate/child_source.h"

namespace kevo::serve {

namespace {

using json = nlohmann::json;

// Compares in time independent of where the strings differ (the token must not leak by timing).
bool same_secret(const std::string& given, const std::string& token) {
  unsigned char diff = given.size() != token.size();
  for (size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ token[i]);
  return diff == 0 && !token.empty();
}

json measurement_json(const store::MeasurementRecord& m) {
  json w = json::array();
  for (const store::WorkloadRecord& x : m.workloads)
    w.push_back({{"workload", x.workload}, {"status", x.status}, {"median_ms", x.median_ms}, {"eager_ms", x.eager_ms},
                 {"compile_ms", x.compile_ms}, {"floor_ms", x.floor_ms}, {"speedup", x.speedup},
                 {"max_error_ratio", x.max_error_ratio}});
  return {{"status", m.status}, {"error", m.error}, {"fitness", m.fitness}, {"speedup_vs_compile", m.speedup_vs_compile},
          {"registers", m.registers}, {"shared_bytes", m.shared_bytes}, {"spill_bytes", m.spill_bytes},
          {"occupancy", m.occupancy}, {"wall_seconds", m.wall_seconds}, {"gpu_seconds", m.gpu_seconds},
          {"gpu", m.gpu}, {"workloads", w}};
}

// A field that must be a string when present.
std::string string_field(const json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end()) {
    if (required) throw std::invalid_argument(std::string("'") + name + "' is missing");
    return {};
  }
  if (!it->is_string()) throw std::invalid_argument(std::string("'") + name + "' must be a string");
  return it->get<std::string>();
}

double number_field(const json& j, const char* name, double fallback) {
  auto it = j.find(name);
  if (it == j.end()) return fallback;
  if (!it->is_number() || !(it->get<double>() >= 0)) throw std::invalid_argument(std::string("'") + name + "' must be a number >= 0");
  return it->get<double>();
}

}  // namespace

EvaluateService::EvaluateService(std::unique_ptr<evaluators::VariantEvaluator> evaluator, ServiceConfig config)
    : evaluator_(std::move(evaluator)), config_(std::move(config)), reward_(search::make_reward(config_.reward)) {
  if (!reward_) throw std::runtime_error("--reward: must be bucketed or log_speedup");
  if (config_.max_queue < 1 || config_.max_batch < 1) throw std::runtime_error("--max-queue and --max-batch: must be at least 1");
  for (const std::string& f : config_.task_files) {
    auto t = std::make_shared<const Task>(load_task(f));
    bundled_[t->name] = t;
    bundled_.emplace(std::filesystem::path(f).stem().string(), t);  // "03_softmax" as well as "softmax"
  }
  measurer_ = std::thread([this] { measure_loop(); });
}

EvaluateService::~EvaluateService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  measurer_.join();
}

std::string EvaluateService::describe() const {
  std::vector<std::string> names;
  for (const auto& [k, t] : bundled_)
    if (k == t->name) names.push_back(k);
  std::string s = evaluator_->describe() + "; " + std::to_string(names.size()) + " task" + (names.size() == 1 ? "" : "s");
  return s + "; reward " + config_.reward;
}

HttpResponse EvaluateService::handle(const HttpRequest& req) {
  if (!config_.token.empty()) {
    std::string auth = req.header("authorization");
    const std::string prefix = "Bearer ";
    if (auth.compare(0, prefix.size(), prefix) != 0 || !same_secret(auth.substr(prefix.size()), config_.token)) {
      HttpResponse r = json_error(401, "missing or wrong bearer token");
      r.headers["WWW-Authenticate"] = "Bearer";
      return r;
    }
  }
  if (req.path == "/v1/health") return req.method == "GET" ? health() : json_error(405, "use GET");
  if (req.path != "/v1/evaluate") return json_error(404, "no such endpoint: " + req.path + " (POST /v1/evaluate, GET /v1/health)");
  if (req.method != "POST") return json_error(405, "use POST");
  return evaluate(req.body);
}

HttpResponse EvaluateService::health() const {
  json tasks = json::array();
  for (const auto& [k, t] : bundled_)
    if (k == t->name) tasks.push_back(k);
  std::lock_guard<std::mutex> lock(mu_);
  HttpResponse r;
  r.body = json{{"evaluator", evaluator_->describe()}, {"gpus", evaluator_->gpus()}, {"reward", config_.reward},
                {"queued", in_flight_}, {"max_queue", config_.max_queue}, {"tasks", tasks}}.dump() + "\n";
  return r;
}

std::shared_ptr<const Task> EvaluateService::resolve_task(const json& task) {
  if (task.is_string()) {
    auto it = bundled_.find(task.get<std::string>());
    if (it == bundled_.end()) throw InputError({}, "task", "no task named '" + task.get<std::string>() + "' (GET /v1/health lists them)");
    return it->second;
  }
  if (!task.is_object()) throw std::invalid_argument("'task' must be a task name or a contract (an object)");
  std::string text = task.dump();
  std::string key = sha256_hex(text);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = inline_.find(key); it != inline_.end()) return it->second;
  auto parsed = std::make_shared<const Task>(parse_task(text, "request.task"));
  inline_[key] = parsed;
  inline_order_.push_back(key);
  if (inline_order_.size() > config_.max_inline_tasks) {  // jobs in flight keep theirs alive
    inline_.erase(inline_order_.front());
    inline_order_.pop_front();
  }
  return parsed;
}

HttpResponse EvaluateService::evaluate(const std::string& body) {
  json req, out;
  std::shared_ptr<const Task> task;
  std::string source;
  double parent_fitness = 0, best = 0;
  try {
    req = json::parse(body);
    if (!req.is_object()) return json_error(400, "the body must be a JSON object");
    if (!req.contains("task")) return json_error(400, "'task' is missing");
    auto cand = req.find("candidate");
    if (cand == req.end() || !cand->is_object()) return json_error(400, "'candidate' must be an object: {source} or {parent, edit}");
    parent_fitness = number_field(req, "parent_fitness", 1);
    best = std::max(parent_fitness, number_field(req, "best_fitness", parent_fitness));
    task = resolve_task(req["task"]);
    source = string_field(*cand, "source", false);
    std::string parent = string_field(*cand, "parent", false), edit = string_field(*cand, "edit", false);
    if (source.empty() == (parent.empty() || edit.empty()))
      return json_error(400, "'candidate' needs either 'source' or both 'parent' and 'edit'");
    if (source.empty()) {
      try {
        source = mutate::child_source(parent, edit);
      } catch (const mutate::EditError& e) {
        out["candidate"] = std::string(e.what()).rfind("block ", 0) == 0 ? "edit_failed" : "bad_reply";
        out["error"] = e.what();
      } catch (const std::runtime_error& e) {
        out["candidate"] = "rejected";
        out["error"] = e.what();
      }
    }
  } catch (const json::exception& e) {
    return json_error(400, std::string("malformed JSON: ") + e.what());
  } catch (const InputError& e) {
    return json_error(422, e.what());
  } catch (const std::invalid_argument& e) {
    return json_error(400, e.what());
  }
  if (out.empty()) {
    try {
      parse_candidate(source, "candidate.cu", *task);  // a plan that cannot launch costs no evaluation
      out["candidate"] = "ok";
    } catch (const std::exception& e) {
      out["candidate"] = "rejected";
      out["error"] = e.what();
    }
  }
  out["task"] = task->name;
  if (out["candidate"] != "ok") {
    out["reward"] = reward_->of(false, parent_fitness, 0, best);
    HttpResponse r;
    r.body = out.dump() + "\n";
    return r;
  }
  out["source_hash"] = sha256_hex(source);
  std::future<store::MeasurementRecord> done = enqueue(task, source);
  if (!done.valid()) {
    HttpResponse r = json_error(503, "the evaluation queue is full (" + std::to_string(config_.max_queue) + "); retry later");
    r.headers["Retry-After"] = "1";
    return r;
  }
  store::MeasurementRecord m = done.get();
  const bool valid = m.status == "ok" && m.fitness > 0;
  // A replay without the recording gives no signal, as in a campaign's rewards.
  out["reward"] = m.status == "unmeasured" ? 0.0 : reward_->of(valid, parent_fitness, m.fitness, best);
  out["measurement"] = measurement_json(m);
  HttpResponse r;
  r.body = out.dump() + "\n";
  return r;
}

std::future<store::MeasurementRecord> EvaluateService::enqueue(std::shared_ptr<const Task> task, std::string source) {
  auto job = std::make_unique<Job>();
  job->task = std::move(task);
  job->source = std::move(source);
  std::future<store::MeasurementRecord> f = job->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= config_.max_queue || stopping_) return {};
    ++in_flight_;
    queue_.push_back(std::move(job));
  }
  wake_.notify_all();
  return f;
}

void EvaluateService::measure_loop() {
  for (;;) {
    std::vector<std::unique_ptr<Job>> jobs;
    std::vector<evaluators::EvalRequest> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      while (!queue_.empty() && jobs.size() < config_.max_batch) {
        jobs.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      for (const auto& j : jobs) {
        evaluators::EvalRequest r;
        r.task = j->task.get();
        r.variant = next_variant_++;
        r.source = j->source;
        r.source_hash = sha256_hex(j->source);
        batch.push_back(std::move(r));
      }
    }
    std::vector<store::MeasurementRecord> records;
    try {
      records = evaluator_->measure(batch);
    } catch (const std::exception& e) {
      for (const evaluators::EvalRequest& r : batch) {
        store::MeasurementRecord m;
        m.variant = r.variant;
        m.status = "internal_error";
        m.error = std::string("the evaluator failed: ") + e.what();
        records.push_back(m);
      }
    }
    for (size_t i = 0; i < jobs.size(); ++i) jobs[i]->done.set_value(i < records.size() ? records[i] : store::MeasurementRecord{});
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ -= jobs.size();
  }
}

}  // namespace kevo::serve
