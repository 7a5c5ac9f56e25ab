// The commit cost of a campaign file: write_campaign of a realistic campaign of N variants, first
// in a fresh process and then once more after one more generation (what the search pays per
// generation), and read_campaign, at each compression level.
//   campaign_write_bench [DIR] [N...]      (default: /tmp, 10000 100000)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/sha256.h"
#include "store/campaign_file.h"

namespace {

using namespace kevo::store;
using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A search's rows: 4 runs, a population of 64 per run and generation (256 variants), one variant
// in ten a duplicate (sharing its source), three workloads per measurement, one failure in five
// with an error line. Each source is a rendered reduce candidate: comment, plan, common.cuh,
// reduce.cuh and the instantiation, about 14.5 KB. add_variants(c, from, to) appends ids
// [from, to) and the generations they complete.
const std::string& template_text() {
  static const std::string body = slurp(std::string(KEVO_SOURCE_ROOT) + "/templates/common.cuh") +
                                  slurp(std::string(KEVO_SOURCE_ROOT) + "/templates/reduce/reduce.cuh");
  return body;
}

void add_variants(CampaignContents& c, int from, int to) {
  const std::string& body = template_text();
  for (int i = from; i < to; ++i) {
    VariantRecord v;
    v.id = i;
    v.run = i % 4;
    v.generation = i / 256;
    v.island = i % 4;
    v.space = "reduce/rows";
    v.genome = {i % 5, i % 7, i % 3, i % 2, i % 11};
    v.op = i % 3 ? "point" : "crossover";
    v.log_prob = -1.5;
    if (i >= 4) v.parents = {i - 4};
    const bool duplicate = i % 10 == 9;
    const int source_of = duplicate ? i - 1 : i;
    std::string text = "// kevo candidate reduce/rows #" + std::to_string(source_of) + "\n/* kevo-plan\n{\"grid\": [" +
                       std::to_string(1 + source_of % 4096) + ", 1, 1], \"block\": [" +
                       std::to_string(64 << (source_of % 4)) + ", 1, 1]}\n*/\n" + body +
                       "\ntemplate __global__ void reduce_rows<" + std::to_string(64 << (source_of % 4)) + ", " +
                       std::to_string(1 << (source_of % 3)) + ", " + (source_of % 2 ? "true" : "false") + ">();\n";
    v.source_hash = kevo::sha256_hex(text);
    if (duplicate) {
      v.duplicate_of = i - 1;
    } else {
      c.sources.push_back({v.source_hash, std::move(text)});
      MeasurementRecord m;
      m.variant = v.id;
      m.status = i % 5 == 0 ? "wrong_result" : "ok";
      if (i % 5 == 0) m.error = "output 'y' differs from the reference at [3, 17]: 0.5 vs 0.25 (max error ratio 12.5)";
      m.fitness = i % 5 == 0 ? 0 : 1.0 + (i % 100) / 100.0;
      m.registers = 40;
      m.shared_bytes = 4096;
      m.occupancy = 0.75;
      m.wall_seconds = 0.4;
      m.gpu_seconds = 0.01;
      m.gpu = "NVIDIA H200 (sm_90a)";
      for (int w = 0; w < 3; ++w) m.workloads.push_back({w, "ok", 0.02, 0.03, 0.025, 0.01, 1.5, 0.1});
      c.measurements.push_back(std::move(m));
    }
    c.variants.push_back(std::move(v));
  }
  for (int g = from / 256; g < to / 256; ++g)
    for (int r = 0; r < 4; ++r) {
      c.generations.push_back({r, g, g * 64, 0, g * 6, 1.9, g * 256 + r, g * 30.0, g * 25.0, 1});
      c.archive.push_back({r, g, 0, "reduce/rows|0.75", g * 256 + r, 1.9});
    }
}

CampaignContents campaign(int n) {
  CampaignContents c;
  c.campaign_id = "0123456789abcdef";
  c.kevo_version = "0.1.0";
  c.created = "2025-01-01T00:00:00Z";
  c.templates_hash = kevo::sha256_hex(template_text());
  c.command = "kevo search tasks/softmax.json --arms random,learned --seeds 2";
  c.tasks = {{"softmax", "{\"name\": \"softmax\"}", kevo::sha256_hex("{\"name\": \"softmax\"}")}};
  for (int r = 0; r < 4; ++r) c.runs.push_back({r, "softmax", r % 2 ? "learned" : "random", uint64_t(r), "{}"});
  add_variants(c, 0, n);
  return c;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// This process's CPU time (user + system), in ms: steadier than wall time on a shared machine.
double cpu_ms() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp";
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::stoi(argv[i]));
  if (sizes.empty()) sizes = {10000, 100000};
  const std::string path = dir + "/campaign_write_bench.h5";
  std::printf("| variants | sources (MB of text) | options | first write | next generation's write | read | file MB |\n"
              "|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (int n : sizes) {
    CampaignContents c = campaign(n);
    double text_mb = 0;
    for (const auto& s : c.sources) text_mb += s.text.size() / 1e6;
    const size_t sources = c.sources.size();
    struct Case {
      const char* name;
      WriteOptions o;
    };
    for (const Case& k : {Case{"compression 6 (default)", {true, 6}}, Case{"compression 1", {true, 1}},
                          Case{"compression 0", {true, 0}}, Case{"no sources, compression 6", {false, 6}}}) {
      // Each case in a fresh process: the first write finds no compressed chunks to reuse.
      pid_t pid = fork();
      if (pid < 0) return 1;
      if (pid == 0) {
        auto timed = [](auto&& f, double& wall, double& cpu) {
          auto t0 = Clock::now();
          double c0 = cpu_ms();
          f();
          wall = ms_since(t0);
          cpu = cpu_ms() - c0;
        };
        double w1, c1, w2, c2, wr, cr;
        timed([&] { write_campaign(path, c, k.o); }, w1, c1);
        add_variants(c, n, n + 256);  // one more generation, as the search commits it
        timed([&] { write_campaign(path, c, k.o); }, w2, c2);
        timed([&] { CampaignContents back = read_campaign(path); }, wr, cr);
        std::printf("| %d | %zu (%.0f) | %s | %.0f ms (CPU %.0f) | %.0f ms (CPU %.0f) | %.0f ms (CPU %.0f) | %.1f |\n",
                    n, sources, text_mb, k.name, w1, c1, w2, c2, wr, cr,
                    std::filesystem::file_size(path) / 1e6);
        std::fflush(stdout);
        _exit(0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
  }
  std::filesystem::remove(path);
  return 0;
}
