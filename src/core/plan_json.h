// A resolved launch plan as JSON: what the engine sends a GPU worker for one workload.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "core/candidate.h"

namespace kevo {

nlohmann::json resolved_plan_to_json(const ResolvedPlan& plan);
// Throws std::invalid_argument naming the first field that is missing or malformed.
ResolvedPlan resolved_plan_from_json(const nlohmann::json& j);

}  // namespace kevo
