// Exported headers for the export tests (store_tests): the bundled candidates and a rendered genome
// of every design space of every task, grouped into programs of several tasks' headers, and nvcc
// around them. Shared by export_test.cpp and export_record_test.cpp.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"
#include "store/export.h"

namespace kevo::store::testing {

inline const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

inline std::vector<std::string> task_files() {
  std::vector<std::string> out;
  DIR* d = opendir((kRoot + "tasks").c_str());
  for (dirent* e; d && (e = readdir(d));) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out.push_back(n);
  }
  if (d) closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string nvcc() { return KEVO_NVCC; }
inline bool have_nvcc() { return !nvcc().empty() && access(nvcc().c_str(), X_OK) == 0; }

// lib<name>.so beside nvcc's toolkit: linking is checked where the libraries are installed.
inline bool have_library(const std::string& name) {
  std::string dir = nvcc().substr(0, nvcc().rfind('/'));  // .../bin
  struct stat st {};
  return ::stat((dir + "/../lib64/lib" + name + ".so").c_str(), &st) == 0;
}

// Runs a shell command; its output (stdout and stderr) and exit status.
inline std::string shell(const std::string& cmd, int* rc) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  *rc = p ? pclose(p) : -1;
  return out;
}

inline std::string make_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "kevo_export_" + name + "_" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  return dir + "/";
}

inline std::vector<int> all_workloads(const Task& t) {
  std::vector<int> w;
  for (size_t i = 0; i < t.workloads.size(); ++i) w.push_back(static_cast<int>(i));
  return w;
}

inline ExportProvenance provenance(const Task& t, const std::string& variant) {
  ExportProvenance p;
  p.speedup_eager = 2.5;
  p.speedup_compile = 1.2;
  p.gpu = "NVIDIA H200";
  p.date = "2026-11-30";
  p.kevo_version = "0.1.0";
  p.kevo_commit = "0123abc";
  p.campaign_id = "test-campaign";
  p.variant = variant;
  p.validated_workloads = all_workloads(t);
  return p;
}

struct Exported {
  const Task* task;
  Candidate candidate;
  std::string label;  // file stem, unique
  std::string header;
  bool cublaslt = false, cudnn = false;
};

// The headers the suite compiles: the bundled candidates and one rendered random genome of every
// design space of every task (loaded into `tasks`, which must outlive them).
inline std::vector<Exported> export_all(std::vector<Task>& tasks, int* rendered) {
  std::vector<std::string> files = task_files();
  tasks.clear();
  for (const std::string& f : files) tasks.push_back(load_task(kRoot + "tasks/" + f));
  auto task_named = [&](const std::string& file) -> const Task& {
    return tasks[static_cast<size_t>(std::find(files.begin(), files.end(), file) - files.begin())];
  };
  std::vector<Exported> all;
  auto add = [&](const Task& t, const Candidate& c, const std::string& label, const std::string& variant) {
    Exported e{&t, c, label, "", false, false};
    try {
      e.header = export_header(t, c, provenance(t, variant));
    } catch (const InputError& err) {
      ADD_FAILURE() << label << ": export failed: " << err.what();
      return;
    }
    for (const Step& s : c.plan.steps) {
      e.cublaslt |= std::holds_alternative<MatmulStep>(s.op);
      e.cudnn |= std::holds_alternative<Conv2dStep>(s.op);
    }
    all.push_back(std::move(e));
  };
  const Task& softmax = task_named("03_softmax.json");
  const Task& linear = task_named("13_linear_leaky_relu.json");
  add(softmax, load_candidate(kRoot + "tests/data/candidates/softmax.cu", softmax), "bundled_softmax", "softmax.cu");
  add(linear, load_candidate(kRoot + "tests/data/candidates/linear_leaky_relu.json", linear), "bundled_linear",
      "linear_leaky_relu.json");
  std::mt19937_64 rng(20261130);
  *rendered = 0;
  for (const Task& t : tasks) {
    int i = 0;
    for (const auto& s : lower::lower(t)) {
      mutate::Genome g = s->random_genome(rng);
      Candidate c;
      try {
        c = parse_candidate(s->render(g), g.to_string() + ".cu", t);
      } catch (const InputError& err) {
        ADD_FAILURE() << g.to_string() << ": rendered plan invalid: " << err.what();
        continue;
      }
      add(t, c, t.name + "_space" + std::to_string(i++), g.to_string());
      ++*rendered;
    }
  }
  return all;
}

// Programs of one header per task namespace: round r takes each task's r-th header.
inline std::vector<std::vector<const Exported*>> rounds(const std::vector<Exported>& all) {
  std::vector<std::vector<const Exported*>> programs;
  std::map<const Task*, int> taken;
  for (const Exported& e : all) {
    size_t round = static_cast<size_t>(taken[e.task]++);
    if (programs.size() <= round) programs.emplace_back();
    programs[round].push_back(&e);
  }
  // A task with more spaces than the others leaves its last headers alone: another task's first
  // header joins them, so every program still holds several tasks' namespaces.
  for (auto& program : programs)
    if (program.size() == 1)
      for (const Exported* other : programs.front())
        if (other->task != program.front()->task) {
          program.push_back(other);
          break;
        }
  return programs;
}

// A block of main() calling a header's workspace_bytes and run on workload `w` (null pointers:
// compiled, not run), with the guard's verdict on it checked at compile time.
inline std::string call_block(const Task& t, int w) {
  const std::string ns = export_namespace(t);
  std::vector<std::string> axes;
  for (const Axis& a : t.axes)
    if (!a.value) axes.push_back(std::to_string(t.workloads[static_cast<size_t>(w)].axes.at(a.name)));
  std::string vals;
  for (const std::string& v : axes) vals += (vals.empty() ? "" : ", ") + v;
  std::string ptrs;
  for (const auto* list : {&t.inputs, &t.outputs})
    for (size_t i = 0; i < list->size(); ++i) ptrs += "nullptr, ";
  return "  {\n    static_assert(" + ns + "::validated_workload(" + vals + ") == " + std::to_string(w) +
         ", \"the guard accepts a validated workload\");\n    size_t bytes = " + ns + "::workspace_bytes(" + vals +
         ");\n    cudaError_t err = " + ns + "::run(" + ptrs + vals +
         ", cudaStream_t{}, nullptr, bytes);\n    std::printf(\"%s %zu %d\\n\", \"" + ns +
         "\", bytes, static_cast<int>(err));\n  }\n";
}

// Compiles (and links, where the libraries are) a program of `headers`, one per task namespace,
// included by main.cu and, when `second_tu`, by a second translation unit too.
// `target`: nvcc's architecture flags.
inline void compile_program(const std::string& name, const std::vector<const Exported*>& headers, bool second_tu,
                            const std::string& target = "-arch=sm_90a") {
  const std::string dir = make_dir(name);
  std::string includes, calls;
  bool cublaslt = false, cudnn = false;
  for (const Exported* e : headers) {
    std::ofstream(dir + e->label + ".cuh") << e->header;
    includes += "#include \"" + e->label + ".cuh\"\n";
    calls += call_block(*e->task, 0);
    cublaslt |= e->cublaslt;
    cudnn |= e->cudnn;
  }
  std::ofstream(dir + "main.cu") << includes << "#include <cstdio>\n\nvoid other_tu();\n\nint main() {\n"
                                 << calls << (second_tu ? "  other_tu();\n" : "") << "  return 0;\n}\n";
  std::string files = dir + "main.cu";
  if (second_tu) {
    std::ofstream(dir + "other.cu") << includes << "\nvoid other_tu() {\n  (void)"
                                    << export_namespace(*headers.front()->task) << "::kValidatedWorkloads;\n}\n";
    files += " " + dir + "other.cu";
  }
  const bool can_link = (!cublaslt || have_library("cublasLt")) && (!cudnn || have_library("cudnn"));
  std::string cmd = nvcc() + " -std=c++17 " + target + " -Xcompiler -Wall " + files;
  if (can_link) {
    cmd += " -o " + dir + "program";
    if (cublaslt) cmd += " -lcublasLt";
    if (cudnn) cmd += " -lcudnn";
  } else {
    cmd += " -c -odir " + dir;
  }
  int rc = 0;
  std::string log = shell(cmd, &rc);
  std::string labels;
  for (const Exported* e : headers) labels += " " + e->label;
  EXPECT_EQ(rc, 0) << "nvcc failed on" << labels << "\n$ " << cmd << "\n" << log;
  if (rc == 0 && !log.empty()) std::printf("nvcc warnings for%s:\n%s\n", labels.c_str(), log.c_str());
}

}  // namespace kevo::store::testing
