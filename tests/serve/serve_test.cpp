// kevo as a reward service over real HTTP on loopback: POST /v1/evaluate answered from a replay
// file (the measurement and the reward), concurrent clients, malformed and oversized requests
// answered with a 4xx JSON error while the server lives on, a full queue, and the bearer token
// that any bind other than 127.0.0.1 requires (`kevo serve` itself, as a user starts it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/sha256.h"
#include "serve/evaluate_service.h"
#include "serve/http_server.h"
#include "store/campaign_file.h"
#include "tests/support/temp_path.h"

namespace kevo {
namespace {

using json = nlohmann::json;
const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const std::string& softmax_source() {
  static const std::string s = slurp(kRoot + "tests/data/candidates/softmax.cu");
  return s;
}

// A replay file holding one measurement: the softmax candidate, 1.8x over eager.
const std::string& replay_file() {
  static const std::string path = [] {
    std::string p = testing::fresh_temp_path("serve", "replay.h5");
    store::CampaignContents c;
    const std::string contract = slurp(kRoot + "tasks/03_softmax.json");
    c.tasks.push_back({"softmax", contract, sha256_hex(contract)});
    c.runs.push_back({1, "softmax", "sweep", 1, "{}"});
    store::VariantRecord v;
    v.id = 1;
    v.run = 1;
    v.source_hash = sha256_hex(softmax_source());
    v.op = "seed";
    c.variants.push_back(v);
    store::MeasurementRecord m;
    m.variant = 1;
    m.status = "ok";
    m.fitness = 1.8;
    m.registers = 30;
    m.gpu = "NVIDIA H200 (sm_90a)";
    m.workloads.push_back({0, "ok", 0.5, 0.9, 0, 0, 1.8, 0.01});
    c.measurements.push_back(m);
    store::write_campaign(p, c);
    return p;
  }();
  return path;
}

struct Reply {
  int status = 0;
  json body;
  std::string raw;
};

// Sends `bytes` as they are to host:port and reads the reply to the end (the server closes).
Reply exchange(int port, const std::string& bytes, const std::string& host = "127.0.0.1") {
  Reply r;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) r.raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (r.raw.rfind("HTTP/1.1 ", 0) == 0) r.status = std::stoi(r.raw.substr(9, 3));
  size_t body = r.raw.find("\r\n\r\n");
  if (body != std::string::npos) r.body = json::parse(r.raw.substr(body + 4), nullptr, false);
  return r;
}

std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

Reply evaluate(int port, const json& body, const std::string& headers = "", const std::string& host = "127.0.0.1") {
  return exchange(port, post("/v1/evaluate", body.dump(), headers), host);
}

// A service and its server on a free loopback port, serving on a thread until destroyed.
struct Served {
  explicit Served(std::unique_ptr<evaluators::VariantEvaluator> ev, serve::ServiceConfig sc = {}, serve::HttpLimits limits = {}) {
    if (sc.task_files.empty()) sc.task_files = {kRoot + "tasks/03_softmax.json", kRoot + "tasks/01_relu.json"};
    service = std::make_unique<serve::EvaluateService>(std::move(ev), sc);
    server = std::make_unique<serve::HttpServer>("127.0.0.1", 0, limits,
                                                 [this](const serve::HttpRequest& r) { return service->handle(r); });
    thread = std::thread([this] { server->serve(); });
  }
  ~Served() {
    server->stop();
    thread.join();
  }
  int port() const { return server->port(); }
  std::unique_ptr<serve::EvaluateService> service;
  std::unique_ptr<serve::HttpServer> server;
  std::thread thread;
};

json source_request(const std::string& source, double parent = 1, double best = 1) {
  return {{"task", "softmax"}, {"candidate", {{"source", source}}}, {"parent_fitness", parent}, {"best_fitness", best}};
}

TEST(Serve, EvaluatesASourceAndAnEditWithTheirRewards) {
  Served s(evaluators::make_replay_evaluator({replay_file()}));
  // A recorded candidate: its measurement, and the bucketed reward against the parent and best given.
  Reply r = evaluate(s.port(), source_request(softmax_source(), 1.0, 2.0));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["candidate"], "ok");
  EXPECT_EQ(r.body["task"], "softmax");
  EXPECT_EQ(r.body["measurement"]["status"], "ok");
  EXPECT_DOUBLE_EQ(r.body["measurement"]["fitness"].get<double>(), 1.8);
  EXPECT_EQ(r.body["measurement"]["workloads"][0]["speedup"], 1.8);
  EXPECT_EQ(r.body["reward"], 1) << "1.8x over a 1.0x parent, below the run's best of 2.0";
  EXPECT_EQ(evaluate(s.port(), source_request(softmax_source(), 1.0, 1.0)).body["reward"], 2) << "a new best";
  EXPECT_EQ(evaluate(s.port(), source_request(softmax_source(), 1.8, 1.8)).body["reward"], 0) << "no gain";
  // The same contract sent inline.
  json inline_task = source_request(softmax_source());
  inline_task["task"] = json::parse(slurp(kRoot + "tasks/03_softmax.json"));
  r = evaluate(s.port(), inline_task);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_DOUBLE_EQ(r.body["measurement"]["fitness"].get<double>(), 1.8);
  // An edit of the parent that applies: a new candidate, never recorded, so no signal.
  const std::string edit = "<<<<<<< SEARCH\n#define KEVO_NEG_INF __int_as_float(0xff800000)\n=======\n"
                           "#define KEVO_NEG_INF (-__int_as_float(0x7f800000))\n>>>>>>> REPLACE\n";
  r = evaluate(s.port(), {{"task", "softmax"}, {"candidate", {{"parent", softmax_source()}, {"edit", edit}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["candidate"], "ok");
  EXPECT_EQ(r.body["measurement"]["status"], "unmeasured");
  EXPECT_EQ(r.body["reward"], 0);
  EXPECT_NE(r.body["source_hash"], sha256_hex(softmax_source()));
  // Edits that do not apply, and a candidate whose plan does not fit the task: the invalid reward.
  r = evaluate(s.port(), {{"task", "softmax"}, {"candidate", {{"parent", softmax_source()}, {"edit", "<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n"}}}});
  EXPECT_EQ(r.body["candidate"], "edit_failed") << r.raw;
  EXPECT_EQ(r.body["reward"], -1);
  r = evaluate(s.port(), {{"task", "softmax"}, {"candidate", {{"parent", softmax_source()}, {"edit", "no blocks at all"}}}});
  EXPECT_EQ(r.body["candidate"], "bad_reply") << r.raw;
  r = evaluate(s.port(), {{"task", "relu"}, {"candidate", {{"source", softmax_source()}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["candidate"], "rejected") << r.raw;
  EXPECT_EQ(r.body["reward"], -1);
  // Health names the evaluator and the tasks.
  Reply h = exchange(s.port(), "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(h.status, 200) << h.raw;
  EXPECT_EQ(h.body["tasks"].size(), 2u);
  EXPECT_NE(h.body["evaluator"].get<std::string>().find("replay"), std::string::npos);
}

TEST(Serve, ConcurrentClientsAllGetTheirAnswers) {
  serve::ServiceConfig sc;
  sc.max_batch = 4;
  Served s(evaluators::make_replay_evaluator({replay_file()}), sc);
  std::atomic<int> right{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c)
    clients.emplace_back([&, c] {
      for (int i = 0; i < 5; ++i) {
        // Every other request is a candidate never recorded, so answers cannot be swapped unnoticed.
        bool recorded = (c + i) % 2 == 0;
        Reply r = evaluate(s.port(), source_request(recorded ? softmax_source() : softmax_source() + "\n// " + std::to_string(c)));
        if (r.status == 200 && r.body["measurement"]["status"] == (recorded ? "ok" : "unmeasured")) ++right;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(right.load(), 60);
}

TEST(Serve, MalformedAndOversizedRequestsGetAJsonErrorAndTheServerLivesOn) {
  serve::HttpLimits limits;
  limits.max_body_bytes = 64 * 1024;
  limits.max_header_bytes = 2048;
  limits.read_seconds = 1;
  Served s(evaluators::make_replay_evaluator({replay_file()}), {}, limits);
  struct Case {
    std::string bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"GARBAGE\r\n\r\n", 400},
      {"POST /v1/evaluate HTTP/9.9\r\nContent-Length: 2\r\n\r\n{}", 400},
      {post("/v1/evaluate", "{not json"), 400},
      {post("/v1/evaluate", "[1, 2]"), 400},
      {post("/v1/evaluate", R"({"task": "softmax"})"), 400},
      {post("/v1/evaluate", R"({"task": "softmax", "candidate": {"source": 7}})"), 400},
      {post("/v1/evaluate", R"({"task": "softmax", "candidate": {"parent": "x"}})"), 400},
      {post("/v1/evaluate", R"({"task": "softmax", "candidate": {"source": "x"}, "parent_fitness": "high"})"), 400},
      {post("/v1/evaluate", R"({"task": "no_such_task", "candidate": {"source": "x"}})"), 422},
      {post("/v1/evaluate", R"({"task": {"name": "broken"}, "candidate": {"source": "x"}})"), 422},
      {post("/v1/evaluate", R"({"task": 5, "candidate": {"source": "x"}})"), 400},
      {"GET /v1/evaluate HTTP/1.1\r\n\r\n", 405},
      {post("/v2/anything", "{}"), 404},
      {"POST /v1/evaluate HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400},
      {"POST /v1/evaluate HTTP/1.1\r\n\r\n", 411},
      {"POST /v1/evaluate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
      {"POST /v1/evaluate HTTP/1.1\r\nContent-Length: 10000000\r\n\r\n", 413},
      {post("/v1/evaluate", std::string(70 * 1024, ' ')), 413},
      {"GET /v1/health HTTP/1.1\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n", 431},
      {"POST /v1/evaluate HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"task\"", 408},  // the rest never comes
  };
  for (const Case& c : cases) {
    Reply r = exchange(s.port(), c.bytes);
    EXPECT_EQ(r.status, c.status) << c.bytes.substr(0, 120) << "\n-> " << r.raw.substr(0, 300);
    EXPECT_TRUE(r.body.is_object() && r.body["error"]["message"].is_string()) << r.raw.substr(0, 300);
    EXPECT_EQ(r.body["error"]["code"], c.status) << r.raw.substr(0, 300);
  }
  // A client that connects and leaves at once costs nothing.
  exchange(s.port(), "");
  Reply ok = evaluate(s.port(), source_request(softmax_source()));
  EXPECT_EQ(ok.status, 200) << ok.raw;
}

// An evaluator that holds its first batch until released: a queue that fills.
class GatedEvaluator : public evaluators::VariantEvaluator {
 public:
  std::vector<store::MeasurementRecord> measure(const std::vector<evaluators::EvalRequest>& batch) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    std::vector<store::MeasurementRecord> out(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      out[i].variant = batch[i].variant;
      out[i].status = "ok";
      out[i].fitness = 1.2;
    }
    return out;
  }
  evaluators::EvaluatorInfo info() const override { return {"gated"}; }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ > 0; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool open_ = false;
};

TEST(Serve, AFullQueueAnswers503WithRetryAfter) {
  auto gated = std::make_unique<GatedEvaluator>();
  GatedEvaluator* gate = gated.get();
  serve::ServiceConfig sc;
  sc.max_queue = 1;
  Served s(std::move(gated), sc);
  Reply first;
  std::thread waiting([&] { first = evaluate(s.port(), source_request(softmax_source())); });
  gate->wait_entered();
  Reply busy = evaluate(s.port(), source_request(softmax_source()));
  EXPECT_EQ(busy.status, 503) << busy.raw;
  EXPECT_NE(busy.raw.find("Retry-After: 1"), std::string::npos) << busy.raw;
  gate->release();
  waiting.join();
  EXPECT_EQ(first.status, 200) << first.raw;
  EXPECT_DOUBLE_EQ(first.body["measurement"]["fitness"].get<double>(), 1.2);
  EXPECT_EQ(evaluate(s.port(), source_request(softmax_source())).status, 200) << "the queue drained";
}

// `kevo serve` as a user starts it: its pid and its first line ("listening on ...:PORT").
struct KevoServe {
  explicit KevoServe(const std::string& args, const std::string& env = "") {
    std::string cmd = "sh -c 'echo $$; exec env " + env + " " + std::string(KEVO_BINARY) + " serve " + args + "' 2>&1";
    out = ::popen(cmd.c_str(), "r");
    char line[1024];
    if (out && std::fgets(line, sizeof line, out)) pid = std::atoi(line);
    while (out && std::fgets(line, sizeof line, out)) {
      said += line;
      size_t at = said.find("listening on http://");
      if (at != std::string::npos) {
        size_t colon = said.find(':', at + 20);
        port = std::atoi(said.c_str() + colon + 1);
        break;
      }
    }
  }
  // Stops it with SIGTERM; returns its exit status and anything else it said.
  int stop() {
    if (pid > 0) ::kill(pid, SIGTERM);
    char line[1024];
    while (out && std::fgets(line, sizeof line, out)) said += line;
    int raw = out ? ::pclose(out) : -1;
    out = nullptr;
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }
  ~KevoServe() {
    if (out) stop();
  }
  FILE* out = nullptr;
  int pid = -1, port = 0;
  std::string said;
};

TEST(Serve, ANonLoopbackBindNeedsAToken) {
  const std::string base = "--port 0 --replay " + replay_file() + " --tasks " + kRoot + "tasks/03_softmax.json";
  // 127.0.0.2 is on this machine, but not the default loopback address: it counts as "another address".
  {
    KevoServe refused("--bind 127.0.0.2 " + base, "KEVO_SERVE_TOKEN=");
    EXPECT_EQ(refused.port, 0);
    EXPECT_EQ(refused.stop(), 2) << refused.said;
    EXPECT_NE(refused.said.find("KEVO_SERVE_TOKEN"), std::string::npos) << refused.said;
    EXPECT_EQ(std::count(refused.said.begin(), refused.said.end(), '\n'), 1) << refused.said;
  }
  KevoServe k("--bind 127.0.0.2 " + base, "KEVO_SERVE_TOKEN=s3cret-token");
  ASSERT_GT(k.port, 0) << k.said;
  EXPECT_NE(k.said.find("bearer token required"), std::string::npos) << k.said;
  const json req = source_request(softmax_source());
  Reply none = evaluate(k.port, req, "", "127.0.0.2");
  EXPECT_EQ(none.status, 401) << none.raw;
  EXPECT_EQ(none.body["error"]["code"], 401);
  EXPECT_EQ(evaluate(k.port, req, "Authorization: Bearer wrong-token!\r\n", "127.0.0.2").status, 401);
  EXPECT_EQ(evaluate(k.port, req, "Authorization: Bearer s3cret-toke\r\n", "127.0.0.2").status, 401);
  EXPECT_EQ(evaluate(k.port, req, "Authorization: Basic s3cret-token\r\n", "127.0.0.2").status, 401);
  Reply ok = evaluate(k.port, req, "Authorization: Bearer s3cret-token\r\n", "127.0.0.2");
  EXPECT_EQ(ok.status, 200) << ok.raw;
  EXPECT_DOUBLE_EQ(ok.body["measurement"]["fitness"].get<double>(), 1.8);
  EXPECT_EQ(k.stop(), 0) << k.said;
  EXPECT_NE(k.said.find("stopped"), std::string::npos) << k.said;
}

TEST(Serve, BadFlagsAreOneLine) {
  for (const std::string& args : {std::string("--port 70000 --replay ") + replay_file(),
                                  std::string("--replay ") + replay_file() + " --reward fancy",
                                  std::string("--replay ") + replay_file() + " --max-queue -1",
                                  std::string("--replay ") + replay_file() + " --max-body 12",
                                  std::string("--replay ") + replay_file() + " --tasks /no/such/task.json",
                                  std::string("--replay /no/such/file.h5")}) {
    KevoServe k(args + " --tasks " + kRoot + "tasks/01_relu.json");
    EXPECT_EQ(k.port, 0) << args;
    EXPECT_EQ(k.stop(), 2) << args << ": " << k.said;
    EXPECT_EQ(std::count(k.said.begin(), k.said.end(), '\n'), 1) << args << ": " << k.said;
  }
}

}  // namespace
}  // namespace kevo
