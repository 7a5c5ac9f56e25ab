// A digest of what lowering makes of tasks, to show that a change to src/lower/ changes nothing
// (issue 41's refactors): per task, every space's id, family, description, knobs and size, and the
// SHA-256 of the candidates it renders for SAMPLES genomes drawn with a fixed seed.
//   render_digest [--samples N] TASK.json...  > before.txt   (then again after the change; diff)
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace {

void digest(const std::string& path, int samples) {
  const kevo::Task task = kevo::load_task(path);
  const auto spaces = kevo::lower::lower(task);
  std::printf("%s: %zu spaces\n", task.name.c_str(), spaces.size());
  for (const auto& s : spaces) {
    std::string knobs;
    for (const auto& k : s->knobs()) knobs += k.name + "(" + std::to_string(k.values.size()) + ") ";
    std::printf("  %s [%s] %s\n    knobs %s size %llu\n", s->id().c_str(), s->manifest().family.c_str(),
                s->description().c_str(), knobs.c_str(), static_cast<unsigned long long>(s->size()));
    std::mt19937_64 rng(1);
    for (int i = 0; i < samples; ++i) {
      const kevo::mutate::Genome g = s->random_genome(rng);
      std::printf("    %s %s\n", g.to_string().c_str(), kevo::sha256_hex(s->render(g)).substr(0, 16).c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 3, first = 1;
  if (argc > 2 && std::string(argv[1]) == "--samples") samples = std::atoi(argv[2]), first = 3;
  if (first >= argc) {
    std::fprintf(stderr, "usage: render_digest [--samples N] TASK.json...\n");
    return 2;
  }
  int failed = 0;
  for (int i = first; i < argc; ++i) {
    try {
      digest(argv[i], samples);
    } catch (const std::exception& e) {
      std::printf("%s: %s\n", argv[i], e.what());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
