// `kevo serve`: kevo's verification and timing as a reward service for external RL trainers
// (POST /v1/evaluate on the GPU workers, or on recorded measurements with --replay).
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/error.h"
#include "evaluators/evaluator.h"
#include "serve/evaluate_service.h"
#include "serve/http_server.h"

namespace kevo::cli {

namespace {

serve::HttpServer* g_server = nullptr;

void on_signal(int) {
  if (g_server) g_server->stop();
}

// Contract files as given; a folder stands for the .json files in it (sorted).
std::vector<std::string> expand_tasks(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& g : given) {
    if (!std::filesystem::is_directory(g)) {
      out.push_back(g);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(g))
      if (e.path().extension() == ".json") found.push_back(e.path().string());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace

int cmd_serve(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string bind = "127.0.0.1", gpus = "all", token_env = "KEVO_SERVE_TOKEN", cache_dir;
  std::vector<std::string> replay, tasks;
  int port = 8100, trials = 2, max_connections = 32, max_queue = 64, max_batch = 16;
  double max_seconds = 2, read_seconds = 10;
  int64_t max_body = 1 << 20;
  serve::ServiceConfig sc;
  opts.add_options()("bind", po::value(&bind)->default_value("127.0.0.1"),
                     "address to listen on; anything but 127.0.0.1, ::1 or localhost needs a token (--token-env)")(
      "port", po::value(&port)->default_value(8100), "port (0: any free one, printed at start)")(
      "token-env", po::value(&token_env)->default_value("KEVO_SERVE_TOKEN"),
      "environment variable holding the bearer token; when set, every request must carry it")(
      "tasks", po::value(&tasks)->composing(), "contracts requests may name (files or folders; default: ./tasks if present)")(
      "replay", po::value(&replay)->composing(), "answer from recorded measurements (campaign or sweep files) instead of GPUs")(
      "gpus", po::value(&gpus)->default_value("all"), "GPUs to measure on: all, or a list like 0,1")(
      "trials", po::value(&trials)->default_value(2), "correctness trials per workload, each on fresh inputs")(
      "max-seconds", po::value(&max_seconds)->default_value(2), "timing repetitions per workload, at most (s)")(
      "cache-dir", po::value(&cache_dir), "CUBIN cache folder")(
      "reward", po::value(&sc.reward)->default_value("bucketed"), "bucketed or log_speedup (docs/search.md)")(
      "max-queue", po::value(&max_queue)->default_value(64), "requests waiting or measured at once; more get 503")(
      "max-batch", po::value(&max_batch)->default_value(16), "waiting requests measured together")(
      "max-body", po::value(&max_body)->default_value(1 << 20), "largest request body (bytes); larger get 413")(
      "max-connections", po::value(&max_connections)->default_value(32), "connections open at once; more get 503")(
      "read-timeout", po::value(&read_seconds)->default_value(10), "seconds a client has to send its request");
  po::positional_options_description pos;
  po::variables_map vm;
  if (int rc = parse_options("serve", "[--port 8100] [--bind 127.0.0.1] [--gpus all | --replay FILE] [--tasks DIR]",
                             args, opts, pos, vm);
      rc >= 0)
    return rc;
  if (trials < 1 || trials > 1000 || !(max_seconds > 0) || max_connections < 1 || max_connections > 4096 ||
      !(read_seconds > 0) || max_body < 1024 || max_body > (int64_t{1} << 30) || max_queue < 1 || max_queue > 100000 ||
      max_batch < 1 || max_batch > 4096) {
    std::cerr << "kevo serve: --trials, --max-seconds, --max-connections, --read-timeout, --max-queue, --max-batch and "
                 "--max-body need sane positive values (--max-body from 1 KiB to 1 GiB)\n";
    return 2;
  }
  sc.max_queue = static_cast<size_t>(max_queue);
  sc.max_batch = static_cast<size_t>(max_batch);
  if (const char* t = std::getenv(token_env.c_str())) sc.token = t;
  if (!serve::is_default_loopback(bind) && sc.token.empty()) {
    std::cerr << "kevo serve: --bind " << bind << " is not loopback: set a bearer token in $" << token_env
              << " (or bind 127.0.0.1)\n";
    return 2;
  }
  if (!vm.count("tasks") && std::filesystem::is_directory("tasks")) tasks = {"tasks"};

  std::unique_ptr<serve::EvaluateService> service;
  std::unique_ptr<serve::HttpServer> server;
  try {
    sc.task_files = expand_tasks(tasks);
    std::unique_ptr<evaluators::VariantEvaluator> evaluator;
    if (!replay.empty()) {
      evaluator = evaluators::make_replay_evaluator(replay);
    } else {
      evaluators::GpuEvaluatorConfig g;
      g.trials = trials;
      g.max_seconds = max_seconds;
      g.gpus = parse_gpus(gpus);
      g.cache_dir = cache_dir;
      evaluator = evaluators::make_gpu_evaluator(g);
    }
    service = std::make_unique<serve::EvaluateService>(std::move(evaluator), sc);
    serve::HttpLimits limits;
    limits.max_body_bytes = static_cast<size_t>(max_body);
    limits.max_connections = max_connections;
    limits.read_seconds = read_seconds;
    server = std::make_unique<serve::HttpServer>(bind, port, limits,
                                                 [&](const serve::HttpRequest& r) { return service->handle(r); });
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // no GPU, a port in use, a bad setting: one line
    std::cerr << "kevo serve: " << e.what() << "\n";
    return 2;
  }
  g_server = server.get();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  std::cout << "kevo serve: listening on http://" << (bind.find(':') != std::string::npos ? "[" + bind + "]" : bind) << ":"
            << server->port() << " (" << service->describe() << (sc.token.empty() ? "" : "; bearer token required")
            << ")" << std::endl;
  server->serve();
  g_server = nullptr;
  std::cout << "kevo serve: stopped" << std::endl;
  return 0;
}

}  // namespace kevo::cli
