// What this kevo is: version and the commit it was built from (for provenance in files it writes).
#pragma once

#include <string>

namespace kevo::search {

std::string kevo_version();  // "0.1.0"
std::string kevo_commit();
std::string now_iso();      // the UTC time, "2026-11-30T01:59:26Z", for the files kevo writes   // `git describe --always --dirty` at build time; "unknown" outside a checkout

}  // namespace kevo::search
