// Running the hook between generations.
#include "search/hook.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace kevo::search {

void run_between_generations(const LlmSettings& l, const std::string& campaign_path, int g,
                             policy::LlmClient* client) {
  if (l.between_generations.empty()) return;
  const std::string where = "--between-generations: after generation " + std::to_string(g) + ": ";
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(where + "cannot start a process");
  if (pid == 0) {
    ::setenv("KEVO_CAMPAIGN", campaign_path.c_str(), 1);
    ::setenv("KEVO_GENERATION", std::to_string(g).c_str(), 1);
    ::setenv("KEVO_MODEL", client ? client->model().c_str() : "", 1);
    ::execl("/bin/sh", "sh", "-c", l.between_generations.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(where + "'" + l.between_generations + "' " +
                             (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                : std::string("was killed")) +
                             "; the campaign stops here (kevo resume continues it)");
  if (l.adapter_path.empty() || !client) return;
  client->unload_adapter(l.adapter_name);  // not loaded yet the first time
  try {
    client->load_adapter(l.adapter_name, l.adapter_path);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + "loading adapter '" + l.adapter_name + "': " + e.what());
  }
  client->set_model(l.adapter_name);
}

}  // namespace kevo::search
