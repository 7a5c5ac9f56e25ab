// The OpenAI-compatible chat-completions client over libcurl: requests, retries, budget, stats.
#include "policy/llm_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

namespace kevo::policy {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kMaxWaitSeconds = 60;  // cap on Retry-After and on the doubled backoff
constexpr size_t kExcerptChars = 200;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("libcurl: global initialisation failed");
  });
}

std::string fmt_seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

// One line of at most kExcerptChars, so a server's HTML error page cannot flood a log line.
std::string excerpt(const std::string& body) {
  std::string text = body;
  // Servers usually wrap the useful part as {"error": {"message": ...}} (OpenAI, vLLM) or {"message": ...}.
  try {
    json j = json::parse(body);
    if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
        j["error"]["message"].is_string())
      text = j["error"]["message"].get<std::string>();
    else if (j.is_object() && j.contains("message") && j["message"].is_string())
      text = j["message"].get<std::string>();
  } catch (const json::exception&) {
  }
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  if (out.size() > kExcerptChars) {
    size_t cut = kExcerptChars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // don't split a UTF-8 character
    out = out.substr(0, cut) + "...";
  }
  return out.empty() ? "(empty body)" : out;
}

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t read_header(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  const std::string name = "retry-after:";
  if (line.size() > name.size()) {
    std::string head = line.substr(0, name.size());
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (head == name) {
      std::string value = line.substr(name.size());
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t\r\n") + 1);
      *static_cast<std::string*>(user) = value;
    }
  }
  return size * count;
}

// Retry-After in seconds; an HTTP date (rare from model servers) is ignored and the backoff used.
bool parse_retry_after(const std::string& value, double* seconds) {
  if (value.empty()) return false;
  char* end = nullptr;
  double s = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(s >= 0)) return false;
  *seconds = std::min(s, kMaxWaitSeconds);
  return true;
}

// One HTTP exchange's outcome, before any retry decision.
struct Exchange {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body, retry_after, curl_error;
};

class EasyHandle {
 public:
  EasyHandle() : handle_(curl_easy_init()) {
    if (!handle_) throw std::runtime_error("libcurl: cannot create a handle");
  }
  ~EasyHandle() { curl_easy_cleanup(handle_); }
  EasyHandle(const EasyHandle&) = delete;
  EasyHandle& operator=(const EasyHandle&) = delete;

  // POSTs a JSON body; the handle is reused so a worker keeps its connection alive between requests.
  Exchange post(const std::string& url, const std::string& body, curl_slist* headers, double timeout_s,
                double connect_timeout_s) {
    Exchange ex;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(handle_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(handle_, CURLOPT_POST, 1L);
    curl_easy_setopt(handle_, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(handle_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(handle_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(handle_, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(handle_, CURLOPT_WRITEDATA, &ex.body);
    curl_easy_setopt(handle_, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(handle_, CURLOPT_HEADERDATA, &ex.retry_after);
    curl_easy_setopt(handle_, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(handle_, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: we run in threads
    curl_easy_setopt(handle_, CURLOPT_TIMEOUT_MS, std::max(1L, std::lround(timeout_s * 1000)));
    curl_easy_setopt(handle_, CURLOPT_CONNECTTIMEOUT_MS, std::max(1L, std::lround(connect_timeout_s * 1000)));
    ex.code = curl_easy_perform(handle_);
    curl_easy_getinfo(handle_, CURLINFO_RESPONSE_CODE, &ex.status);
    ex.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(ex.code);
    curl_easy_setopt(handle_, CURLOPT_ERRORBUFFER, nullptr);  // errbuf dies here
    return ex;
  }

 private:
  CURL* handle_;
};

struct HeaderList {
  curl_slist* list = nullptr;
  explicit HeaderList(const std::string& api_key) {
    list = curl_slist_append(list, "Content-Type: application/json");
    list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for long prompts
    if (!api_key.empty()) list = curl_slist_append(list, ("Authorization: Bearer " + api_key).c_str());
  }
  ~HeaderList() { curl_slist_free_all(list); }
  HeaderList(const HeaderList&) = delete;
  HeaderList& operator=(const HeaderList&) = delete;
};

// A 2xx body as a chat completion; false (with the reason) when it is not one.
bool parse_completion(const std::string& body, ChatResult* result, std::string* why) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception&) {
    *why = "not JSON";
    return false;
  }
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
    *why = "no choices";
    return false;
  }
  std::vector<std::pair<int64_t, std::string>> choices;
  int64_t position = 0;
  for (const json& choice : j["choices"]) {
    if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object() ||
        !choice["message"].contains("content") || !choice["message"]["content"].is_string()) {
      *why = "choice " + std::to_string(position) + " has no message.content";
      return false;
    }
    int64_t index = choice.contains("index") && choice["index"].is_number_integer() ? choice["index"].get<int64_t>()
                                                                                     : position;
    choices.emplace_back(index, choice["message"]["content"].get<std::string>());
    ++position;
  }
  std::stable_sort(choices.begin(), choices.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  result->completions.clear();
  for (auto& c : choices) result->completions.push_back(std::move(c.second));
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      result->prompt_tokens = u["prompt_tokens"].get<int64_t>();
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
      result->completion_tokens = u["completion_tokens"].get<int64_t>();
  }
  return true;
}

// Transport failures where the server may simply be restarting (vLLM loading a model) or dropped us.
bool transient_transport_error(CURLcode code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_GOT_NOTHING || code == CURLE_SEND_ERROR ||
         code == CURLE_RECV_ERROR || code == CURLE_PARTIAL_FILE;
}

}  // namespace

struct LlmClient::Impl {
  LlmSettings config;  // url without its trailing '/'; model guarded by mutex
  std::string api_key;     // only ever used to build the Authorization header

  mutable std::mutex mutex;  // guards config.model, stats
  LlmStats stats;

  // The concurrency limit holds across concurrent chat() calls, not just within one.
  std::mutex slot_mutex;
  std::condition_variable slot_freed;
  int in_flight = 0;

  std::atomic<bool> no_tokenizer{false};  // the server answered /tokenize with anything but a count

  bool budget_spent_locked() const {
    return config.token_budget > 0 && stats.prompt_tokens + stats.completion_tokens >= config.token_budget;
  }

  void acquire_slot() {
    std::unique_lock<std::mutex> lock(slot_mutex);
    slot_freed.wait(lock, [&] { return in_flight < config.concurrency; });
    ++in_flight;
  }
  void release_slot() {
    {
      std::lock_guard<std::mutex> lock(slot_mutex);
      --in_flight;
    }
    slot_freed.notify_one();
  }

  ChatResult run(EasyHandle& handle, const HeaderList& headers, const ChatRequest& request);
  ChatResult attempt_loop(EasyHandle& handle, const HeaderList& headers, const std::string& url,
                          const std::string& body);
};

ChatResult LlmClient::Impl::run(EasyHandle& handle, const HeaderList& headers, const ChatRequest& request) {
  const auto start = Clock::now();
  std::string model;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.requests;
    // Checked once, before the first attempt: a request already under way finishes its retries.
    if (budget_spent_locked()) {
      ++stats.budget_refused;
      ++stats.failed;
      ChatResult refused;
      refused.kind = "budget";
      refused.error = "token budget of " + std::to_string(config.token_budget) + " spent (" +
                      std::to_string(stats.prompt_tokens + stats.completion_tokens) + " tokens); request not sent";
      return refused;
    }
    model = config.model;
  }

  json messages = json::array();
  for (const ChatMessage& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", model},
               {"messages", std::move(messages)},
               {"temperature", config.temperature},
               {"max_tokens", config.max_tokens},
               {"n", request.samples > 0 ? request.samples : config.samples}};

  ChatResult result = attempt_loop(handle, headers, config.url + "/chat/completions", body.dump());
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::lock_guard<std::mutex> lock(mutex);
  stats.attempts += result.attempts;
  stats.retries += std::max(0, result.attempts - 1);
  if (result.ok) {
    ++stats.succeeded;
    stats.prompt_tokens += result.prompt_tokens;
    stats.completion_tokens += result.completion_tokens;
  } else {
    ++stats.failed;
  }
  return result;
}

ChatResult LlmClient::Impl::attempt_loop(EasyHandle& handle, const HeaderList& headers, const std::string& url,
                                         const std::string& body) {
  ChatResult result;
  double backoff = config.backoff_seconds;
  for (int attempt = 0;; ++attempt) {
    acquire_slot();
    Exchange ex = handle.post(url, body, headers.list, config.timeout_seconds, config.connect_timeout_seconds);
    release_slot();
    result.attempts = attempt + 1;
    const std::string attempts = std::to_string(result.attempts) + (result.attempts == 1 ? " attempt" : " attempts");

    bool retryable = false;
    if (ex.code == CURLE_OPERATION_TIMEDOUT) {
      retryable = true;
      result.kind = "timeout";
      result.error = "timed out (" + fmt_seconds(config.timeout_seconds) + " s limit) on " + url + " after " + attempts;
    } else if (ex.code != CURLE_OK) {
      retryable = transient_transport_error(ex.code);
      result.kind = "connect";
      result.error = "cannot reach " + url + " (" + excerpt(ex.curl_error) + ") after " + attempts;
    } else if (ex.status >= 200 && ex.status < 300) {
      std::string why;
      if (parse_completion(ex.body, &result, &why)) {
        result.ok = true;
        result.kind.clear();
        result.error.clear();
        return result;
      }
      // A server that answers 2xx with garbage will answer it again; retrying only spends time.
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.malformed;
      result.kind = "malformed";
      result.error = "malformed reply from " + url + " (" + why + "): " + excerpt(ex.body);
      return result;
    } else {
      retryable = ex.status == 429 || ex.status >= 500;
      result.kind = ex.status == 429 ? "rate_limited" : ex.status >= 500 ? "server_error" : "http_error";
      result.error = "HTTP " + std::to_string(ex.status) + " from " + url + " after " + attempts + ": " + excerpt(ex.body);
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (result.kind == "timeout") ++stats.timeouts;
      if (result.kind == "connect") ++stats.connect_errors;
      if (result.kind == "rate_limited") ++stats.rate_limited;
      if (result.kind == "server_error") ++stats.server_errors;
    }
    if (!retryable || attempt >= config.retries) return result;

    double wait = std::min(backoff, kMaxWaitSeconds);
    double told = 0;
    if (parse_retry_after(ex.retry_after, &told)) wait = told;
    backoff *= 2;
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

LlmClient::LlmClient(const LlmSettings& config) : impl_(std::make_unique<Impl>()) {
  validate(config);
  init_curl_once();
  impl_->config = config;
  if (!impl_->config.url.empty() && impl_->config.url.back() == '/') impl_->config.url.pop_back();
  if (!config.api_key_env.empty()) {
    const char* key = std::getenv(config.api_key_env.c_str());
    if (key && *key) impl_->api_key = key;
  }
}

LlmClient::~LlmClient() = default;

std::vector<ChatResult> LlmClient::chat(const std::vector<ChatRequest>& requests) {
  std::vector<ChatResult> results(requests.size());
  if (requests.empty()) return results;
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::string worker_error;  // a handle that could not be made; never a request's failure
  auto work = [&] {
    try {
      EasyHandle handle;
      HeaderList headers(impl_->api_key);
      for (size_t i = next++; i < requests.size(); i = next++) results[i] = impl_->run(handle, headers, requests[i]);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mutex);
      worker_error = e.what();
    }
  };
  const size_t workers = std::min(requests.size(), static_cast<size_t>(impl_->config.concurrency));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();  // the calling thread is one of the workers
  for (std::thread& t : threads) t.join();
  if (!worker_error.empty()) throw std::runtime_error(worker_error);
  return results;
}

void LlmClient::set_model(const std::string& model) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->config.model = model;
}

std::string LlmClient::model() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->config.model;
}

void LlmClient::add_usage(int64_t prompt_tokens, int64_t completion_tokens) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->stats.prompt_tokens += prompt_tokens;
  impl_->stats.completion_tokens += completion_tokens;
}

bool LlmClient::budget_spent() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->budget_spent_locked();
}

LlmStats LlmClient::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

std::optional<int64_t> LlmClient::count_tokens(const std::string& text) {
  if (impl_->no_tokenizer) return std::nullopt;
  std::string url = impl_->config.url;
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  url += "/tokenize";
  EasyHandle handle;
  HeaderList headers(impl_->api_key);
  Exchange ex = handle.post(url, json{{"model", model()}, {"prompt", text}, {"add_special_tokens", false}}.dump(),
                            headers.list, impl_->config.connect_timeout_seconds * 3, impl_->config.connect_timeout_seconds);
  if (ex.code == CURLE_OK && ex.status >= 200 && ex.status < 300) {
    const json j = json::parse(ex.body, nullptr, false);
    if (j.is_object() && j.contains("count") && j["count"].is_number_integer() && j["count"].get<int64_t>() >= 0)
      return j["count"].get<int64_t>();
  }
  impl_->no_tokenizer = true;
  return std::nullopt;
}

void LlmClient::load_adapter(const std::string& name, const std::string& path) {
  const std::string url = impl_->config.url + "/load_lora_adapter";
  EasyHandle handle;
  HeaderList headers(impl_->api_key);
  Exchange ex = handle.post(url, json{{"lora_name", name}, {"lora_path", path}}.dump(), headers.list,
                            impl_->config.timeout_seconds, impl_->config.connect_timeout_seconds);
  const std::string what = "loading LoRA adapter '" + name + "' from " + path + ": ";
  if (ex.code != CURLE_OK) throw std::runtime_error(what + "cannot reach " + url + " (" + excerpt(ex.curl_error) + ")");
  if (ex.status < 200 || ex.status >= 300)
    throw std::runtime_error(what + "HTTP " + std::to_string(ex.status) + " from " + url + ": " + excerpt(ex.body));
}

bool LlmClient::unload_adapter(const std::string& name) {
  const std::string url = impl_->config.url + "/unload_lora_adapter";
  EasyHandle handle;
  HeaderList headers(impl_->api_key);
  Exchange ex = handle.post(url, json{{"lora_name", name}}.dump(), headers.list, impl_->config.timeout_seconds,
                            impl_->config.connect_timeout_seconds);
  return ex.code == CURLE_OK && ex.status >= 200 && ex.status < 300;
}

}  // namespace kevo::policy
