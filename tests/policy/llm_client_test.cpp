// The llm client as the llm policy relies on it, against a scripted server (tests/tools/llm_stub.py):
// completions come back in order with their usage; 429 and 5xx are retried and timeouts, refused
// connections and malformed bodies come back as one-line failures of the right kind; at most
// `concurrency` requests are in flight; a spent token budget stops requests before they leave.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/llm_client.h"
#include "tests/support/llm_stub.h"
#include "tests/support/test_tokenizer.h"

namespace kevo::policy {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* kPython = "/usr/bin/python3";
const char* kKeyVar = "KEVO_LLM_CLIENT_TEST_KEY";

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A port nothing listens on: bound, read, and closed again.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("closed_port: cannot bind");
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<ChatRequest> prompts(size_t count) {
  std::vector<ChatRequest> requests(count);
  for (size_t i = 0; i < count; ++i)
    requests[i].messages = {{"system", "You write CUDA."}, {"user", "prompt " + std::to_string(i)}};
  return requests;
}

class LlmClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv(kKeyVar);
    if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is missing; the stub server needs it";
  }
  void TearDown() override { ::unsetenv(kKeyVar); }

  // Starts the stub with this script; returns its base URL ("http://127.0.0.1:PORT/v1").
  std::string start(const json& script) {
    stub_ = std::make_unique<testing::LlmStub>(script.dump());
    if (!stub_->ok()) throw std::runtime_error(stub_->why());
    port_ = std::stoi(stub_->url().substr(std::string("http://127.0.0.1:").size()));
    return stub_->url();
  }

  std::vector<json> log() const {
    std::vector<json> lines;
    for (const std::string& l : stub_->log()) lines.push_back(json::parse(l));
    return lines;
  }

  static LlmSettings config(const std::string& url) {
    LlmSettings c;
    c.url = url;
    c.model = "stub-model";
    c.api_key_env = kKeyVar;
    c.timeout_seconds = 10;
    c.connect_timeout_seconds = 5;
    c.retries = 2;
    c.backoff_seconds = 0.01;
    c.samples = 1;  // one completion per request unless a test asks for more
    return c;
  }

  std::unique_ptr<testing::LlmStub> stub_;
  int port_ = 0;
};

TEST_F(LlmClientTest, ReturnsCompletionsInOrderWithUsageAndKey) {
  json usage = {{"prompt_tokens", 10}, {"completion_tokens", 5}};
  std::string url = start({{"responses",
                            {{{"contents", {"a", "b", "c"}}, {"usage", usage}},
                             {{"contents", {"d", "e", "f"}}, {"usage", usage}},
                             {{"content", "g"}}}}});
  ::setenv(kKeyVar, "sk-test", 1);
  LlmSettings c = config(url);
  c.samples = 3;
  c.concurrency = 1;  // the stub hands out its entries in arrival order
  c.temperature = 0.5;
  c.max_tokens = 77;
  LlmClient client(c);
  std::vector<ChatResult> results = client.chat(prompts(2));
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok) << results[0].error;
  ASSERT_TRUE(results[1].ok) << results[1].error;
  EXPECT_EQ(results[0].completions, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(results[1].completions, (std::vector<std::string>{"d", "e", "f"}));
  EXPECT_EQ(results[0].attempts, 1);
  EXPECT_EQ(results[0].prompt_tokens, 10);
  EXPECT_EQ(results[0].completion_tokens, 5);
  LlmStats s = client.stats();
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.succeeded, 2);
  EXPECT_EQ(s.prompt_tokens, 20);
  EXPECT_EQ(s.completion_tokens, 10);

  std::vector<json> lines = log();
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(lines[i]["path"], "/v1/chat/completions");
    const json& body = lines[i]["body"];
    EXPECT_EQ(body["model"], "stub-model");
    EXPECT_EQ(body["n"], 3);
    EXPECT_EQ(body["max_tokens"], 77);
    EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.5);
    ASSERT_EQ(body["messages"].size(), 2u);
    EXPECT_EQ(body["messages"][0], (json{{"role", "system"}, {"content", "You write CUDA."}}));
    EXPECT_EQ(body["messages"][1], (json{{"role", "user"}, {"content", "prompt " + std::to_string(i)}}));
    EXPECT_EQ(lines[i]["authorization"], "Bearer sk-test");
  }

  // Without the variable no Authorization header goes out; the request's own sample count wins.
  ::unsetenv(kKeyVar);
  LlmClient keyless(c);
  keyless.set_model("adapter-1");
  std::vector<ChatRequest> one = prompts(1);
  one[0].samples = 2;
  std::vector<ChatResult> r = keyless.chat(one);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].completions, (std::vector<std::string>{"g", "g"}));
  lines = log();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[2]["authorization"].is_null());
  EXPECT_EQ(lines[2]["body"]["model"], "adapter-1");
  EXPECT_EQ(lines[2]["body"]["n"], 2);
}

TEST_F(LlmClientTest, OrdersChoicesByTheirIndex) {
  json reply = {{"choices",
                 {{{"index", 1}, {"message", {{"role", "assistant"}, {"content", "second"}}}},
                  {{"index", 0}, {"message", {{"role", "assistant"}, {"content", "first"}}}}}}};
  LlmClient client(config(start({{"responses", {{{"raw", reply.dump()}}}}})));
  std::vector<ChatResult> r = client.chat(prompts(1));
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].completions, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(r[0].prompt_tokens, 0);  // no usage in the reply
}

TEST_F(LlmClientTest, RetriesRateLimitsHonouringRetryAfter) {
  std::string url = start({{"responses",
                            {{{"status", 429}, {"retry_after", 0}},
                             {{"status", 429}, {"retry_after", 0}},
                             {{"content", "done"}}}}});
  LlmSettings c = config(url);
  c.retries = 4;
  c.backoff_seconds = 5;  // Retry-After: 0 must win, or this test takes 15 s and fails below
  LlmClient client(c);
  auto t0 = Clock::now();
  std::vector<ChatResult> r = client.chat(prompts(1));
  EXPECT_LT(since(t0), 2.5);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].completions, (std::vector<std::string>{"done"}));
  EXPECT_EQ(r[0].attempts, 3);
  LlmStats s = client.stats();
  EXPECT_EQ(s.rate_limited, 2);
  EXPECT_EQ(s.retries, 2);
  EXPECT_EQ(s.attempts, 3);
  EXPECT_EQ(s.succeeded, 1);
  EXPECT_EQ(log().size(), 3u);
}

TEST_F(LlmClientTest, GivesUpOnServerErrorsAfterTheRetries) {
  LlmClient client(config(start({{"default", {{"status", 500}, {"message", "engine\ncrashed"}}}})));
  std::vector<ChatResult> r = client.chat(prompts(1));
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].kind, "server_error");
  EXPECT_EQ(r[0].attempts, 3);
  EXPECT_NE(r[0].error.find("HTTP 500 from http://127.0.0.1:"), std::string::npos) << r[0].error;
  EXPECT_NE(r[0].error.find("after 3 attempts"), std::string::npos) << r[0].error;
  EXPECT_NE(r[0].error.find("engine crashed"), std::string::npos) << r[0].error;
  EXPECT_EQ(r[0].error.find('\n'), std::string::npos);
  EXPECT_EQ(client.stats().server_errors, 3);
  EXPECT_EQ(client.stats().failed, 1);
  EXPECT_EQ(log().size(), 3u);
}

TEST_F(LlmClientTest, DoesNotRetryOtherClientErrors) {
  std::string body(1000, 'x');
  LlmClient client(config(start({{"default", {{"status", 400}, {"message", body}}}})));
  std::vector<ChatResult> r = client.chat(prompts(1));
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].kind, "http_error");
  EXPECT_EQ(r[0].attempts, 1);
  EXPECT_LT(r[0].error.size(), 400u) << "the body's excerpt is short";
  EXPECT_EQ(log().size(), 1u);
}

TEST_F(LlmClientTest, TimesOut) {
  LlmSettings c = config(start({{"default", {{"delay", 3}, {"content", "late"}}}}));
  c.timeout_seconds = 0.5;
  c.retries = 0;
  LlmClient client(c);
  auto t0 = Clock::now();
  std::vector<ChatResult> r = client.chat(prompts(1));
  EXPECT_LT(since(t0), 2.5);
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].kind, "timeout");
  EXPECT_EQ(r[0].attempts, 1);
  EXPECT_EQ(client.stats().timeouts, 1);
}

TEST_F(LlmClientTest, MalformedRepliesAreNotRetried) {
  std::string url = start({{"responses",
                            {{{"raw", "not json"}},
                             {{"raw", R"({"object": "chat.completion", "usage": {"prompt_tokens": 1}})"}}}},
                           {"default", {{"content", "fine"}}}});
  LlmSettings c = config(url);
  c.concurrency = 1;
  c.retries = 3;
  LlmClient client(c);
  std::vector<ChatResult> r = client.chat(prompts(2));
  for (const ChatResult& result : r) {
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.kind, "malformed") << result.error;
    EXPECT_EQ(result.attempts, 1);
    EXPECT_EQ(result.error.find('\n'), std::string::npos);
  }
  EXPECT_EQ(client.stats().malformed, 2);
  EXPECT_EQ(log().size(), 2u);
}

TEST_F(LlmClientTest, KeepsAtMostConcurrencyRequestsInFlight) {
  LlmSettings c = config(start({{"default", {{"delay", 0.3}, {"content", "x"}}}}));
  c.concurrency = 2;
  LlmClient client(c);
  auto t0 = Clock::now();
  std::vector<ChatResult> r = client.chat(prompts(6));
  double wall = since(t0);
  for (const ChatResult& result : r) EXPECT_TRUE(result.ok) << result.error;
  // Three waves of two: not one wave (0.3 s), not six (1.8 s).
  EXPECT_GT(wall, 0.85);
  EXPECT_LT(wall, 1.6);
}

TEST_F(LlmClientTest, SpentBudgetRefusesRequestsWithoutSendingThem) {
  std::string url = start({{"default", {{"content", "x"}, {"usage", {{"prompt_tokens", 80}, {"completion_tokens", 40}}}}}});
  LlmSettings c = config(url);
  c.token_budget = 100;
  c.concurrency = 1;
  LlmClient client(c);
  std::vector<ChatResult> r = client.chat(prompts(4));
  ASSERT_TRUE(r[0].ok) << r[0].error;
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_FALSE(r[i].ok);
    EXPECT_EQ(r[i].kind, "budget");
    EXPECT_EQ(r[i].attempts, 0);
  }
  EXPECT_TRUE(client.budget_spent());
  EXPECT_EQ(client.stats().budget_refused, 3);
  EXPECT_EQ(log().size(), 1u);

  // Tokens a resumed campaign spent before count too.
  LlmClient resumed(c);
  EXPECT_FALSE(resumed.budget_spent());
  resumed.add_usage(60, 40);
  EXPECT_TRUE(resumed.budget_spent());
  EXPECT_EQ(resumed.chat(prompts(1))[0].kind, "budget");
  EXPECT_EQ(log().size(), 1u);
}

TEST_F(LlmClientTest, RefusedConnectionIsOneLineConnectError) {
  LlmSettings c = config("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1");
  c.retries = 1;  // refused connections are retried: a restarting server comes back
  c.backoff_seconds = 0;
  LlmClient client(c);
  std::vector<ChatResult> r = client.chat(prompts(1));
  ASSERT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].kind, "connect");
  EXPECT_EQ(r[0].attempts, 2);
  EXPECT_NE(r[0].error.find(c.url), std::string::npos) << r[0].error;
  EXPECT_EQ(r[0].error.find('\n'), std::string::npos);
  EXPECT_EQ(client.stats().connect_errors, 2);
}

TEST_F(LlmClientTest, LoadsAndUnloadsAdapters) {
  std::string url = start({{"responses", {{{"content", "first entry"}}}}});
  LlmClient client(config(url + "/"));  // one trailing '/' is dropped
  client.load_adapter("kernels-v2", "/loras/kernels-v2");
  EXPECT_TRUE(client.unload_adapter("kernels-v2"));
  std::vector<ChatResult> r = client.chat(prompts(1));
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].completions, (std::vector<std::string>{"first entry"})) << "adapter calls consume no script entry";
  std::vector<json> lines = log();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["path"], "/v1/load_lora_adapter");
  EXPECT_EQ(lines[0]["body"], (json{{"lora_name", "kernels-v2"}, {"lora_path", "/loras/kernels-v2"}}));
  EXPECT_EQ(lines[1]["path"], "/v1/unload_lora_adapter");
  EXPECT_EQ(lines[1]["body"], (json{{"lora_name", "kernels-v2"}}));
  EXPECT_EQ(lines[2]["path"], "/v1/chat/completions");
}

TEST_F(LlmClientTest, AdapterCallsAgainstNoServer) {
  LlmClient client(config("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1"));
  try {
    client.load_adapter("a", "/loras/a");
    FAIL() << "load_adapter against a closed port did not throw";
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'a'"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_FALSE(client.unload_adapter("a"));
}

std::string rejection(const LlmSettings& c) {
  try {
    validate(c);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(LlmClientValidate, NamesTheFlag) {
  LlmSettings good;
  good.model = "m";
  EXPECT_EQ(rejection(good), "");

  auto with = [&](auto change) {
    LlmSettings c = good;
    change(c);
    return rejection(c);
  };
  auto starts = [](const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; };
  EXPECT_TRUE(starts(with([](auto& c) { c.url = "ftp://host/v1"; }), "--llm-url:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.url = "127.0.0.1:8000/v1"; }), "--llm-url:"));
  EXPECT_EQ(with([](auto& c) { c.model = ""; }), "--llm-model: give the model the server serves");
  EXPECT_TRUE(starts(with([](auto& c) { c.temperature = 2.5; }), "--llm-temperature:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.max_tokens = 0; }), "--llm-max-tokens:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.samples = 65; }), "--llm-samples:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.concurrency = 0; }), "--llm-concurrency:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.timeout_seconds = 0; }), "--llm-timeout:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.retries = 21; }), "--llm-retries:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.token_budget = -1; }), "--llm-token-budget:"));
  // The policy's and the hook's settings are checked in the same place.
  EXPECT_TRUE(starts(with([](auto& c) { c.weight = 1.5; }), "--llm-weight:"));
  EXPECT_EQ(with([](auto& c) { c.mix = "genetic"; }), "--llm-mix: 'genetic': use random or learned");
  EXPECT_TRUE(starts(with([](auto& c) { c.max_prompt_tokens = 100; }), "--llm-max-prompt-tokens:"));
  EXPECT_TRUE(starts(with([](auto& c) { c.adapter_path = "/a"; }), "--load-adapter:"));

  LlmSettings bad = good;
  bad.url = "localhost:8000";
  EXPECT_THROW(LlmClient{bad}, std::runtime_error);
}


// Token counts come from the server's tokenizer (vLLM's /tokenize, beside /v1); a server without
// one is asked once, and then the caller estimates.
TEST_F(LlmClientTest, CountsTokensWithTheServersTokenizerAndAsksOneWithoutItOnce) {
  const std::string text = "__global__ void kernel(float* x) {\n  x[0] = 1;\n}\n";
  {
    LlmClient client(config(start({{"tokenizer", true}})));
    const std::optional<int64_t> n = client.count_tokens(text);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(*n, testing::test_tokens(text));
    const std::vector<json> lines = log();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["path"], "/tokenize");
    EXPECT_EQ(lines[0]["body"]["model"], "stub-model");
    EXPECT_EQ(lines[0]["body"]["prompt"], text);
  }
  LlmClient client(config(start(json::object())));
  EXPECT_FALSE(client.count_tokens(text).has_value());
  EXPECT_FALSE(client.count_tokens(text).has_value());
  EXPECT_EQ(log().size(), 1u);
}

}  // namespace
}  // namespace kevo::policy
