// The commit cost of the appending campaign file, and what reading it costs as it grows: a
// realistic campaign is appended a generation at a time (as the search commits it) up to each
// size N; at N it reports the commit time per generation (the 32 commits before N), the time a
// resume needs to open the file and read what it reads (header, tasks, runs, generations, resume
// states, every variant's duplicate key), the time `kevo report` needs (every table but the
// sources), and the file's size. Commit times over the whole run go to DIR/commits.csv.
//   campaign_write_bench [DIR] [--no-sync] [N...]      (default: /tmp, 10000 100000 1000000)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/sha256.h"
#include "store/campaign_file.h"
#include "store/campaign_writer.h"

namespace {

using namespace kevo::store;
using Clock = std::chrono::steady_clock;

constexpr int kPerGeneration = 256;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A search's rows: 4 runs (two random, two learned), a population of 64 per run and generation
// (256 variants), one variant in ten a duplicate (sharing its source), three workloads per
// measurement, one failure in five with an error line. Each source is a rendered reduce
// candidate: comment, plan, common.cuh, reduce.cuh and the instantiation, about 14.5 KB. The
// learned runs' policies are 272 KB checkpoints: in the resume state every generation, in the
// table every tenth. The archive: 4 cells per run.
const std::string& template_text() {
  static const std::string body = slurp(std::string(KEVO_SOURCE_ROOT) + "/templates/common.cuh") +
                                  slurp(std::string(KEVO_SOURCE_ROOT) + "/templates/reduce/reduce.cuh");
  return body;
}

CampaignDelta generation(int g) {
  const std::string& body = template_text();
  CampaignDelta d;
  for (int i = g * kPerGeneration; i < (g + 1) * kPerGeneration; ++i) {
    VariantRecord v;
    v.id = i;
    v.run = i % 4;
    v.generation = g;
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
      d.sources.push_back({v.source_hash, std::move(text)});
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
      d.measurements.push_back(std::move(m));
    }
    d.variants.push_back(std::move(v));
  }
  d.archive.emplace();
  for (int r = 0; r < 4; ++r) {
    d.generations.push_back({r, g, int64_t(g) * 58, 0, int64_t(g) * 6, 1.9, int64_t(g) * kPerGeneration + r, g * 30.0,
                             g * 25.0, 1});
    for (int cell = 0; cell < 4; ++cell)
      d.archive->push_back({r, g, cell, "reduce/rows|occ " + std::to_string(25 * cell) + "-" +
                                            std::to_string(25 * cell + 25) + "%",
                            int64_t(g) * kPerGeneration + r, 1.9});
  }
  d.archive_kept = g % 10 == 0;
  static const std::string checkpoint(272 << 10, '\x3f');
  std::string state(20 << 10, static_cast<char>(g));  // islands, counters
  for (int r = 1; r < 4; r += 2) {
    state += checkpoint;
    if (g % 10 == 0) d.checkpoints.push_back({r, g, "policy", checkpoint});
  }
  d.resume = ResumeState{g, std::move(state)};
  return d;
}

CampaignContents head() {
  CampaignContents c;
  c.campaign_id = "0123456789abcdef";
  c.kevo_version = "0.1.0";
  c.created = "2025-01-01T00:00:00Z";
  c.templates_hash = kevo::sha256_hex(template_text());
  c.command = "kevo ablate tasks/softmax.json --arms random,learned --seeds 2";
  c.tasks = {{"softmax", "{\"name\": \"softmax\"}", kevo::sha256_hex("{\"name\": \"softmax\"}")}};
  for (int r = 0; r < 4; ++r) c.runs.push_back({r, "softmax", r % 2 ? "learned" : "random", uint64_t(r), "{}"});
  return c;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// This process's CPU time (user + system), in ms.
double cpu_ms() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

// The disk's floor for a commit: the median time to write `bytes` to a new file and sync it
// (8 times, in `dir`). A durable commit must at least make a generation's bytes durable, so on a
// slow or shared disk its wall time follows this, whatever the campaign file's size.
double write_and_sync_ms(const std::string& dir, size_t bytes) {
  const std::string probe = dir + "/campaign_write_bench.sync";
  const std::string block(bytes, 'k');
  std::vector<double> t;
  for (int i = 0; i < 8; ++i) {
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) break;
    const auto t0 = Clock::now();
    const bool good = ::pwrite(fd, block.data(), block.size(), 0) == static_cast<ssize_t>(block.size()) && ::fsync(fd) == 0;
    t.push_back(ms_since(t0));
    ::close(fd);
    if (!good) return -1;
  }
  std::filesystem::remove(probe);
  return t.empty() ? -1 : percentile(t, 0.5);
}

// What a resume reads, and what a report reads, each in a fresh process (times printed by it).
void time_reads(const std::string& path) {
  pid_t pid = fork();
  if (pid == 0) {
    auto t0 = Clock::now();
    double c0 = cpu_ms();
    ReadOptions o;
    o.sources = ReadOptions::Sources::none;
    o.checkpoint_bytes = ReadOptions::Checkpoints::initial;
    o.search_tables = false;
    CampaignContents k = read_campaign(path, o);
    std::vector<ResumeState> states = read_resume_states(path);
    std::unordered_map<std::string, int64_t> first;  // the search keeps a compact index; this is an upper bound
    size_t variants = 0;
    scan_variant_keys(path, [&](const VariantKey& v) {
      ++variants;
      if (v.duplicate_of == -1) first.emplace(std::string(v.source_hash.substr(0, 32)), v.id);
    });
    const double resume_ms = ms_since(t0), resume_cpu = cpu_ms() - c0;
    t0 = Clock::now();
    c0 = cpu_ms();
    ReadOptions r;
    r.sources = ReadOptions::Sources::none;
    r.checkpoint_bytes = ReadOptions::Checkpoints::none;
    CampaignContents all = read_campaign(path, r);
    auto best = std::max_element(all.measurements.begin(), all.measurements.end(),
                                 [](const auto& a, const auto& b) { return a.fitness < b.fitness; });
    std::string hash;
    for (const auto& v : all.variants)
      if (v.id == best->variant) hash = v.source_hash;
    const size_t best_source = read_sources(path, {hash}).at(hash).size();
    std::printf("%.0f ms (CPU %.0f; %zu variants, %zu resume states) | %.0f ms (CPU %.0f; best source %zu bytes)", resume_ms,
                resume_cpu, variants, states.size(), ms_since(t0), cpu_ms() - c0, best_source);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp";
  WriteOptions o;
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-sync") o.durable = false;
    else if (!a.empty() && std::isdigit(static_cast<unsigned char>(a[0]))) sizes.push_back(std::stoi(a));
    else dir = a;
  }
  if (sizes.empty()) sizes = {10000, 100000, 1000000};
  std::sort(sizes.begin(), sizes.end());
  const std::string path = dir + "/campaign_write_bench.h5";
  std::filesystem::remove(path);
  write_campaign(path, head(), o);
  std::ofstream csv(dir + "/commits.csv");
  csv << "generation,variants,commit_ms,commit_cpu_ms,file_mb\n";
  std::printf("%s commits (%s)\n\n| variants | commit per generation: median (p90), CPU median | open and read for resume | "
              "read for a report (no sources) | file MB | its growth per commit, written and synced alone |\n|---|---|---|---|---|---|\n",
              path.c_str(), o.durable ? "durable: synced" : "not synced");
  std::fflush(stdout);
  auto writer = CampaignWriter::open(path, o);
  std::vector<double> wall, cpu, bytes{static_cast<double>(std::filesystem::file_size(path))};  // bytes: after each commit
  int g = 0;
  for (int n : sizes) {
    for (; (g + 1) * kPerGeneration <= n; ++g) {
      CampaignDelta d = generation(g);
      const auto t0 = Clock::now();
      const double c0 = cpu_ms();
      writer->commit(d);
      wall.push_back(ms_since(t0));
      cpu.push_back(cpu_ms() - c0);
      bytes.push_back(static_cast<double>(std::filesystem::file_size(path)));
      csv << g << "," << (g + 1) * kPerGeneration << "," << wall.back() << "," << cpu.back() << ","
          << std::filesystem::file_size(path) / 1e6 << "\n";
    }
    const size_t k = std::min<size_t>(32, wall.size());
    const std::vector<double> w(wall.end() - static_cast<long>(k), wall.end()), c(cpu.end() - static_cast<long>(k), cpu.end());
    std::printf("| %d | %.0f ms (%.0f), CPU %.0f | ", g * kPerGeneration, percentile(w, 0.5), percentile(w, 0.9),
                percentile(c, 0.5));
    std::fflush(stdout);
    time_reads(path);
    const size_t growth = static_cast<size_t>((bytes.back() - bytes[bytes.size() - 1 - k]) / static_cast<double>(k));
    std::printf(" | %.0f | %.1f MB: %.0f ms |\n", bytes.back() / 1e6, growth / 1e6, write_and_sync_ms(dir, growth));
    std::fflush(stdout);
  }
  writer->close();
  return 0;
}
