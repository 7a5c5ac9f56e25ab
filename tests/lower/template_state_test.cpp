// Templates use no device heap (which the runner refuses: its blocks outlive a launch and cannot
// be reset): a sampled instance of every design space of every development and training task
// compiles (NVRTC, sm_90a) to a module that calls neither malloc nor free. Their writable module
// memory (static constexpr members the compiler places there) is what the worker resets to its
// load-time image before every launch.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/module_state.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace kevo::lower {

using namespace mutate;  // the spaces' vocabulary: DesignSpace, Genome, Facts, ...
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

std::vector<std::string> contracts_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out.push_back(dir + n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TemplateState, NoTemplateInstanceUsesTheDeviceHeap) {
  std::vector<std::string> files = contracts_in(kRoot + "tasks/");
  for (const std::string& f : contracts_in(kRoot + "tasks/train/")) files.push_back(f);
  ASSERT_GE(files.size(), 14u);
  std::mt19937_64 rng(17);
  int checked = 0, with_module_memory = 0;
  for (const std::string& file : files) {
    const Task task = load_task(file);
    for (const auto& space : lower(task)) {
      const Genome g = space->random_genome(rng);
      const std::string source = space->render(g);
      const Candidate c = parse_candidate(source, space->id() + ".cu", task);
      eval::BuildRequest r;
      r.source = c.source;
      r.name_expressions = c.kernel_names();
      r.arch = "sm_90a";
      const eval::BuildResult b = eval::build(r);
      if (r.name_expressions.empty()) continue;  // a library-only plan has no module
      ASSERT_EQ(b.status, eval::BuildStatus::Ok) << file << " " << g.to_string() << ": " << b.error;
      const eval::ModuleState s = eval::inspect_module_state(b.cubin);
      EXPECT_TRUE(s.heap_calls.empty()) << file << " " << g.to_string() << ": " << s.describe();
      with_module_memory += s.writable_bytes > 0;
      ++checked;
    }
  }
  std::printf("%d template instances use no device heap; %d have writable module memory (reset before every launch)\n",
              checked, with_module_memory);
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace kevo::lower
