// The build's identity; the only file that includes the generated commit header.
#include "search/build_info.h"

#include <ctime>

#include "kevo_commit.h"

namespace kevo::search {

std::string kevo_version() { return KEVO_VERSION_STRING; }
std::string kevo_commit() { return KEVO_COMMIT_STRING; }

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace kevo::search
