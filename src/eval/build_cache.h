// The CUBIN cache on disk: <dir>/<key[0:2]>/<key>.json (the result without the CUBIN) and
// <key>.cubin, for results keyed by the Builder's content hash (eval/ only).
#pragma once

#include <optional>
#include <string>

#include "eval/builder.h"

namespace kevo::eval {

// The result stored under `key` in `dir` (status Ok or CompileError, cache_hit set), or nullopt
// when there is none or it is torn, corrupt or mismatched.
std::optional<BuildResult> load_cached_result(const std::string& dir, const std::string& key);

// The whole file at `path` into `out`; false when it cannot be read.
bool read_file(const std::string& path, std::string& out);

// Stores `r` under r.cache_key; a failure to store is silent (it only costs a rebuild).
void store_cached_result(const std::string& dir, const BuildResult& r);

}  // namespace kevo::eval
