// kevo as a reward service: `POST /v1/evaluate` takes a task and a candidate (source with its plan,
// or a SEARCH/REPLACE edit of a parent), queues it onto an evaluator (GPU workers, or replay for
// tests) and answers with the measurement and the reward, so an external RL trainer can use kevo's
// verification and timing as its reward function. docs/serve.md describes the protocol.
#pragma once

#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/task.h"
#include "evaluators/evaluator.h"
#include "search/reward.h"
#include "serve/http_server.h"

namespace kevo::serve {

struct ServiceConfig {
  std::string reward = "bucketed";           // search::make_reward's kinds
  size_t max_queue = 64;                     // requests waiting or being measured; more: 503
  size_t max_batch = 16;                     // queued requests measured together (one evaluator batch)
  std::string token;                         // non-empty: every request needs "Authorization: Bearer TOKEN"
  std::vector<std::string> task_files;       // the contracts a request may name (by contract name or file stem)
  size_t max_inline_tasks = 256;             // contracts sent in requests, kept parsed (oldest dropped)
};

class EvaluateService {
 public:
  // Throws InputError for a task file that does not load, std::runtime_error for a bad setting.
  EvaluateService(std::unique_ptr<evaluators::VariantEvaluator> evaluator, ServiceConfig config);
  ~EvaluateService();  // measures what is queued, then stops
  EvaluateService(const EvaluateService&) = delete;
  EvaluateService& operator=(const EvaluateService&) = delete;

  // Routes: POST /v1/evaluate, GET /v1/health. Never throws: bad requests get a 4xx JSON error.
  HttpResponse handle(const HttpRequest& request);
  std::string describe() const;  // the evaluator, the tasks it knows

 private:
  struct Job {
    std::shared_ptr<const Task> task;
    std::string source;
    std::promise<store::MeasurementRecord> done;
  };

  HttpResponse evaluate(const std::string& body);
  HttpResponse health() const;
  std::shared_ptr<const Task> resolve_task(const nlohmann::json& task);  // throws InputError
  std::future<store::MeasurementRecord> enqueue(std::shared_ptr<const Task> task, std::string source);  // null-state future: full
  void measure_loop();

  std::unique_ptr<evaluators::VariantEvaluator> evaluator_;
  ServiceConfig config_;
  std::unique_ptr<search::RewardFunction> reward_;
  std::map<std::string, std::shared_ptr<const Task>> bundled_;  // by name and by file stem

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Task>> inline_;   // by the contract's SHA-256
  std::deque<std::string> inline_order_;
  std::deque<std::unique_ptr<Job>> queue_;
  size_t in_flight_ = 0;                                        // queued or being measured
  int64_t next_variant_ = 1;
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread measurer_;
};

}  // namespace kevo::serve
