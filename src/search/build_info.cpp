// The build's identity; the only file that includes the generated commit header.
#include "search/build_info.h"

#include "kevo_commit.h"

namespace kevo::search {

std::string kevo_version() { return KEVO_VERSION_STRING; }
std::string kevo_commit() { return KEVO_COMMIT_STRING; }

}  // namespace kevo::search
