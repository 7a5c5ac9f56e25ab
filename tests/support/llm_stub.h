// The OpenAI-compatible stub server of tests/tools/llm_stub.py, started on loopback for a test:
// it replays a scripted list of answers (completions, 429s, 5xx, delays, malformed bodies) and
// logs every request it gets as one JSON line.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kevo::testing {

class LlmStub {
 public:
  // Writes `script_json` next to the log in a fresh folder and starts the server. ok() is false
  // (with why()) when python3 is missing or the server does not say its port within 10 s.
  explicit LlmStub(const std::string& script_json) {
    char tmpl[] = "/tmp/kevo_llm_stub_XXXXXX";
    if (!::mkdtemp(tmpl)) {
      why_ = "cannot create a temporary folder";
      return;
    }
    dir_ = tmpl;
    const std::string script = dir_ + "/script.json";
    log_ = dir_ + "/log.jsonl";
    std::ofstream(script) << script_json;
    const std::string python = "/usr/bin/python3";
    if (::access(python.c_str(), X_OK) != 0) {
      why_ = "no /usr/bin/python3 to run the stub server";
      return;
    }
    const std::string tool = std::string(KEVO_SOURCE_ROOT) + "/tests/tools/llm_stub.py";
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      ::execl(python.c_str(), "python3", tool.c_str(), "--script", script.c_str(), "--log", log_.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    pollfd p{out[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos && ::poll(&p, 1, 10000) > 0) {
      char buf[256];
      ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    ::close(out[0]);
    if (line.rfind("PORT ", 0) != 0) {
      why_ = "the stub server did not start (said '" + line + "')";
      return;
    }
    port_ = std::atoi(line.c_str() + 5);
  }
  ~LlmStub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      for (int i = 0; i < 100 && ::waitpid(pid_, &st, WNOHANG) == 0; ++i) ::usleep(50000);
      if (::waitpid(pid_, &st, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
      }
    }
    // The folder holds plain files only (no std::filesystem: these suites link LibTorch).
    if (DIR* d = dir_.empty() ? nullptr : ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ::unlink((dir_ + "/" + e->d_name).c_str());
      ::closedir(d);
      ::rmdir(dir_.c_str());
    }
  }
  LlmStub(const LlmStub&) = delete;
  LlmStub& operator=(const LlmStub&) = delete;

  bool ok() const { return port_ > 0; }
  const std::string& why() const { return why_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  const std::string& dir() const { return dir_; }
  // The requests received so far, one JSON text each.
  std::vector<std::string> log() const {
    std::vector<std::string> lines;
    std::ifstream in(log_);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) lines.push_back(l);
    return lines;
  }

 private:
  std::string dir_, log_, why_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace kevo::testing
