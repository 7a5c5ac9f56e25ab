// Runs the kevo binary under test as a user would, capturing its output and exit status.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace kevo::testing {

struct CommandResult {
  int status = -1;   // exit status, or 128 + signal
  std::string out;   // stdout and stderr together
};

// `env` is prefixed to the command line ("KEVO_CACHE_DIR=/tmp/x ").
inline CommandResult run_kevo(const std::string& args, const std::string& env = "") {
  std::string cmd = env + std::string(KEVO_BINARY) + " " + args + " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return r;
}

}  // namespace kevo::testing
