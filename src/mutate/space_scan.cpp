// Family "scan": lowering not written yet (serves no task).
#include "mutate/families.h"

namespace kevo::mutate {

std::vector<std::unique_ptr<DesignSpace>> lower_scan(const TaskGraphPtr&) { return {}; }

}  // namespace kevo::mutate
