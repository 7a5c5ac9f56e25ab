// The Builder's wire format: requests and results as JSON documents, the CUBIN in base64. The
// compile workers' protocol sends them as frames; the CUBIN cache stores results as them.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "eval/builder.h"

namespace kevo::eval {

// Framing for the worker protocol: one JSON document each way. The readers throw InputError on
// malformed documents.
std::string build_request_to_json(const BuildRequest& request);
BuildRequest build_request_from_json(std::string_view json);
std::string build_result_to_json(const BuildResult& result);
BuildResult build_result_from_json(std::string_view json);

// The same result as a JSON value (the cache adds its own fields) and back; build_result_from
// throws nlohmann::json's exceptions or std::invalid_argument.
nlohmann::json build_result_json(const BuildResult& result);
BuildResult build_result_from(const nlohmann::json& j);

// Text that came from outside may hold invalid UTF-8; it is replaced rather than thrown on.
std::string dump_json(const nlohmann::json& j);

}  // namespace kevo::eval
