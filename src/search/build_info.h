// What this kevo is: version and the commit it was built from (for provenance in files it writes).
#pragma once

#include <string>

namespace kevo::search {

std::string kevo_version();  // "0.1.0"
std::string kevo_commit();   // `git describe --always --dirty` at build time; "unknown" outside a checkout

}  // namespace kevo::search
