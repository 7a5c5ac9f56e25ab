// Subcommand dispatch and the top-level usage text.
#include "cli/commands.h"

#include <exception>
#include <iostream>
#include <map>

namespace kevo::cli {

namespace {

using Command = int (*)(const std::vector<std::string>&);

struct Entry {
  Command fn;
  const char* summary;
};

const std::map<std::string, Entry>& commands() {
  static const std::map<std::string, Entry> table = {
      {"check", {cmd_check, "validate task contracts and run their references on the CPU"}},
      {"import", {cmd_import, "translate a KernelBench problem or a FlashInfer-Bench definition into a contract"}},
      {"compile", {cmd_compile, "validate a candidate and compile it with NVRTC (no GPU needed)"}},
      {"compile-worker", {cmd_compile_worker, nullptr}},
      {"eval", {cmd_eval, "build a candidate and evaluate it on the GPU: correctness, timing, speedup"}},
      {"worker", {cmd_worker, nullptr}},
      {"sim-worker", {cmd_sim_worker, nullptr}},
      {"run", {cmd_run, "run a search campaign over tasks, on the GPU or replayed from recorded measurements"}},
      {"ablate", {cmd_ablate, "compare policies: one campaign run per task, arm and seed (see kevo report for the statistics)"}},
      {"resume", {cmd_resume, "continue a campaign file after its last complete generation"}},
      {"serve", {cmd_serve, "answer POST /v1/evaluate: kevo's verification and timing as a reward service for RL trainers"}},
      {"sweep", {cmd_sweep, "measure many genomes of a task's design spaces and record them (for replay)"}},
      {"export", {cmd_export, "write the best kernel of each task of a campaign as a header with a host launcher"}},
      {"report", {cmd_report, "a campaign's curves and speedup tables as HTML (SVG plots) and JSON"}},
      {"train-policy", {cmd_train_policy, "train one learned policy over many tasks (for --policy-init)"}},
      {"space", {cmd_space, "list a task's design spaces; render and compile samples of them (no GPU needed)"}},
      {"version", {cmd_version, "print kevo's version and the versions of the libraries it uses"}},
  };
  return table;
}

void usage(std::ostream& os) {
  os << "usage: kevo <command> [options]\n\ncommands:\n";
  for (const auto& [name, e] : commands())
    if (e.summary) os << "  " << name << std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') << e.summary << "\n";  // hidden ones have none
  os << "\n`kevo <command> --help` describes a command's options.\n";
}

}  // namespace

int run_main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(std::cout);
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::cerr << "kevo: unknown command '" << name << "' (see `kevo --help`)\n";
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return it->second.fn(args);
  } catch (const std::exception& e) {
    std::cerr << "kevo " << name << ": internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kevo::cli
