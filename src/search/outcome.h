// A measured variant as later generations see it: its statistics for the policy (and the
// archive), and its measurement in words for source editors.
#pragma once

#include <string>

#include "core/task.h"
#include "policy/policy.h"
#include "store/records.h"

namespace kevo::search {

struct Outcome {
  policy::Parent stats;
  bool valid = false;     // ok, with a positive fitness: may enter an archive
  bool screened = false;  // screened out: its short timing's fitness is in stats, for rewards only
  std::string hash;    // of its source
  std::string report;  // its measurement in words, for source editors (empty for other policies)
};

// The outcome of variant `v`'s measurement `m`; `with_report` adds the report.
Outcome outcome_of(const store::VariantRecord& v, const store::MeasurementRecord& m, const Task& task,
                   bool with_report);

// A measurement in words, for a prompt: status, resources and per-workload times.
std::string measurement_report(const store::MeasurementRecord& m, const Task& task);

}  // namespace kevo::search
