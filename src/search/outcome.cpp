// A measured variant as later generations see it: its statistics for the policy, and its
// measurement in words for source editors.
#include "search/outcome.h"

#include <sstream>

namespace kevo::search {

namespace {

// Fraction of the DRAM floor reached on the largest workload (0 when unknown).
double floor_fraction(const store::MeasurementRecord& m) {
  const store::WorkloadRecord* big = nullptr;
  for (const auto& w : m.workloads)
    if (w.floor_ms > 0 && (!big || w.floor_ms > big->floor_ms)) big = &w;
  return big && big->median_ms > 0 ? big->floor_ms / big->median_ms : 0;
}

}  // namespace

Outcome outcome_of(const store::VariantRecord& v, const store::MeasurementRecord& m, const Task& task,
                   bool with_report) {
  Outcome o;
  o.valid = m.status == "ok" && m.fitness > 0;
  o.screened = m.status == "screened" && m.fitness > 0;
  o.stats.variant = v.id;
  o.stats.genome = {v.space, v.genome};
  o.stats.fitness = o.valid || o.screened ? m.fitness : 0;
  o.stats.floor_fraction = floor_fraction(m);
  o.stats.registers = m.registers;
  o.stats.shared_bytes = m.shared_bytes;
  o.stats.spill_bytes = m.spill_bytes;
  o.stats.occupancy = m.occupancy;
  o.hash = v.source_hash;
  if (with_report) o.report = measurement_report(m, task);
  return o;
}

std::string measurement_report(const store::MeasurementRecord& m, const Task& task) {
  std::ostringstream o;
  o.precision(4);
  o << "status " << m.status;
  if (!m.error.empty()) o << ": " << m.error;
  o << "\n";
  if (m.status != "ok" && m.workloads.empty()) return o.str();
  o << "registers " << m.registers << ", static+dynamic shared memory " << m.shared_bytes << " B, spills "
    << m.spill_bytes << " B, theoretical occupancy " << static_cast<int>(m.occupancy * 100 + 0.5) << "%\n";
  for (const store::WorkloadRecord& w : m.workloads) {
    o << "workload " << w.workload;
    if (w.workload >= 0 && static_cast<size_t>(w.workload) < task.workloads.size()) {
      o << " {";
      bool first = true;
      for (const auto& [axis, v] : task.workloads[static_cast<size_t>(w.workload)].axes) {
        o << (first ? "" : ", ") << axis << "=" << v;
        first = false;
      }
      o << "}";
    }
    o << ": " << w.status;
    if (w.median_ms > 0) o << ", " << w.median_ms << " ms (PyTorch eager " << w.eager_ms << " ms, " << w.speedup << "x)";
    if (w.floor_ms > 0 && w.median_ms > 0)
      o << ", DRAM floor " << w.floor_ms << " ms (" << static_cast<int>(w.floor_ms / w.median_ms * 100 + 0.5) << "% of it)";
    o << "\n";
  }
  // Where time is lost: the timed workload furthest behind eager.
  const store::WorkloadRecord* slowest = nullptr;
  int timed = 0;
  for (const store::WorkloadRecord& w : m.workloads)
    if (w.speedup > 0) {
      ++timed;
      if (!slowest || w.speedup < slowest->speedup) slowest = &w;
    }
  if (timed > 1) o << "slowest against PyTorch eager: workload " << slowest->workload << " (" << slowest->speedup << "x)\n";
  return o.str();
}

}  // namespace kevo::search
