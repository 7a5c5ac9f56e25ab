// Lowering: a task's op graph mapped onto kevo's template families, as the design spaces search
// walks. Each family is one file in src/lower/ (the generic family's a folder, src/lower/generic/)
// and one line of the ordered registry (registry.cpp), as TVM MetaSchedule lists its schedule
// rules; what every family writes (the task graph with symbolic sizes, the elementwise emitter, the
// candidate's common parts) is the kit (kit.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/task.h"
#include "mutate/space.h"

namespace kevo::lower {

class TaskGraph;
// Spaces keep the TaskGraph alive (shared); the Task itself must outlive them.
using TaskGraphPtr = std::shared_ptr<const TaskGraph>;
using FamilyLowering = std::function<std::vector<std::unique_ptr<mutate::DesignSpace>>(const TaskGraphPtr&)>;

// A family of the registry: its name, its lowering, and whether it is a baseline, offered only
// where the other families leave too little room (see lower()).
struct Family {
  std::string name;
  FamilyLowering lower;
  bool baseline = false;
};

// Every family, in the order lower() asks them (registry.cpp).
const std::vector<Family>& default_families();

// Every space the task maps onto; empty when no family serves it. `task` must outlive them. Each
// family of `families` is asked in turn. A baseline family's spaces join where no other family
// serves the task or theirs hold fewer than 100 legal genomes, or for every task when
// KEVO_GENERIC=everywhere. With an architecture ("sm_90a", "sm_100a"), the spaces take only knob
// values legal there (the manifests' "archs": the gemm family's wgmma path is sm_90a's).
std::vector<std::unique_ptr<mutate::DesignSpace>> lower(const Task& task, const std::string& arch = "",
                                                        const std::vector<Family>& families = default_families());

// Why the generic family does not lower a task ("" when it does).
std::string generic_refusal(const Task& task);

}  // namespace kevo::lower
