// The ordered family registry, and lower(), which asks each family in turn.
#include "lower/families.h"

namespace kevo::lower {

const std::vector<Family>& default_families() {
  static const std::vector<Family> all = {
      {"elementwise", lower_elementwise},
      {"reduce", lower_reduce},
      {"normalize", lower_normalize},
      {"scan", lower_scan},
      {"reduce_scalar", lower_reduce_scalar},
      {"pool", lower_pool},
      {"library", lower_library},
      {"gemm", lower_gemm},
      {"conv", lower_conv},
      {"split", lower_split},
      {"generic", lower_generic, /*baseline=*/true},
  };
  return all;
}

// Fewer legal genomes than this in a task's specialised spaces leave search too little room: the
// baseline joins them (KernelBench's plain conv2d problems: 1 legal cuDNN genome of 36,000).
constexpr int64_t kRoomToSearch = 100;

std::vector<std::unique_ptr<DesignSpace>> lower(const Task& task, const std::string& arch,
                                                const std::vector<Family>& families) {
  auto tg = std::make_shared<const TaskGraph>(task);
  std::vector<std::unique_ptr<DesignSpace>> out, baseline;
  for (const Family& family : families)
    for (auto& s : family.lower(tg)) {
      s->restrict_to(arch);
      (family.baseline ? baseline : out).push_back(std::move(s));
    }
  // The baseline joins where no specialised family serves the task or where theirs leave too
  // little room, so that the spaces (and the proposals) of tasks lowered before it stay as they
  // were; KEVO_GENERIC=everywhere offers it for every task.
  if (out.empty() || generic_everywhere() || !mutate::hold_legal_genomes(out, kRoomToSearch))
    for (auto& s : baseline) out.push_back(std::move(s));
  return out;
}

}  // namespace kevo::lower
