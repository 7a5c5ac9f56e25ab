// `kevo import`: KernelBench problems and FlashInfer-Bench definitions as kevo contracts, by the
// Python importers in tools/, then loaded with kevo's own parser so a bad translation fails here.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/task.h"
#include "eval/compile_pool.h"

extern char** environ;

namespace kevo::cli {

namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Runs argv (found on PATH), its output shown or discarded; returns its exit status, or -1 when
// it could not be started.
int run_process(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  std::cout.flush();
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// tools/ beside the build folder (build/kevo -> tools/), an installed share/kevo/tools, or
// $KEVO_TOOLS_DIR; empty when none holds the script.
std::string find_tool(const std::string& script) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("KEVO_TOOLS_DIR"); env && *env) dirs.push_back(env);
  std::string bin_dir = parent(eval::self_executable());
  dirs.push_back(bin_dir + "/../tools");
  dirs.push_back(bin_dir + "/../share/kevo/tools");
  for (const std::string& d : dirs)
    if (is_file(d + "/" + script)) return d + "/" + script;
  return "";
}

struct Python {
  std::string path;
  bool has_torch = false;
};

// The Python to run the importer: --python or $KEVO_PYTHON if given; else the first of python3 on
// PATH and /usr/bin/python3 that imports torch (the agreement check needs it), else the first that
// runs at all.
Python find_python(const std::string& requested) {
  std::vector<std::string> candidates;
  if (!requested.empty()) {
    candidates.push_back(requested);
  } else if (const char* env = std::getenv("KEVO_PYTHON"); env && *env) {
    candidates.push_back(env);
  } else {
    candidates = {"python3", "/usr/bin/python3"};
  }
  Python fallback;
  for (const std::string& p : candidates) {
    // find_spec looks for torch without importing it (an import takes seconds).
    if (run_process({p, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"},
                    true) == 0)
      return {p, true};
    if (fallback.path.empty() && run_process({p, "-c", "pass"}, true) == 0) fallback.path = p;
  }
  return fallback;
}

std::string stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

}  // namespace

int cmd_import(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::vector<std::string> positional;
  std::string out, name, python, workloads;
  int64_t seed = 0;
  opts.add_options()("source", po::value(&positional)->required(), "kernelbench|flashinfer and the file")(
      "out,o", po::value(&out), "contract to write (default: the file's stem + .json, here)")(
      "name", po::value(&name), "the contract's name (default: the file's stem)")(
      "seed", po::value(&seed)->default_value(0), "kernelbench: seed of the agreement check's draws")(
      "no-agree", po::bool_switch(), "kernelbench: skip the agreement check under Python torch")(
      "workloads", po::value(&workloads), "flashinfer: the definition's workloads (JSONL; default: found beside it)")(
      "python", po::value(&python), "the Python to run the importer (default: one with torch if any)");
  po::positional_options_description pos;
  pos.add("source", -1);
  po::variables_map vm;
  if (int rc = parse_options("import", "kernelbench PROBLEM.py | flashinfer DEFINITION.json [-o TASK.json] [options]",
                             args, opts, pos, vm);
      rc >= 0)
    return rc;
  if (positional.size() != 2 || (positional[0] != "kernelbench" && positional[0] != "flashinfer")) {
    std::cerr << "kevo import: expected `kernelbench PROBLEM.py` or `flashinfer DEFINITION.json`\n";
    return 2;
  }
  const std::string& kind = positional[0];
  const std::string& file = positional[1];
  if (!is_file(file)) {
    std::cerr << "kevo import: " << file << ": no such file\n";
    return 2;
  }
  std::string script = kind == "kernelbench" ? "kernelbench_import.py" : "flashinfer_import.py";
  std::string tool = find_tool(script);
  if (tool.empty()) {
    std::cerr << "kevo import: cannot find tools/" << script << " (set KEVO_TOOLS_DIR to kevo's tools folder)\n";
    return 2;
  }
  Python py = find_python(python);
  if (py.path.empty()) {
    std::cerr << "kevo import: no Python 3 found (tried " << (python.empty() ? "python3, /usr/bin/python3" : python)
              << "; give one with --python)\n";
    return 2;
  }
  std::cout << "kevo import: python " << py.path << (py.has_torch ? " (with torch)" : " (without torch)") << "\n";
  if (out.empty()) out = stem(file) + ".json";
  std::vector<std::string> argv = {py.path, tool, file, "-o", out};
  if (!name.empty()) argv.insert(argv.end(), {"--name", name});
  if (kind == "kernelbench") {
    argv.insert(argv.end(), {"--seed", std::to_string(seed)});
    if (vm["no-agree"].as<bool>()) argv.push_back("--no-agree");
  } else if (!workloads.empty()) {
    argv.insert(argv.end(), {"--workloads", workloads});
  }
  int rc = run_process(argv, false);
  if (rc < 0) {
    std::cerr << "kevo import: could not run " << py.path << "\n";
    return 1;
  }
  if (rc != 0) return rc == 2 ? 2 : 1;
  try {
    Task task = load_task(out);
    std::cout << "kevo import: " << out << " loads: " << task.inputs.size() << " inputs, " << task.outputs.size()
              << " output" << (task.outputs.size() == 1 ? "" : "s") << ", " << task.workloads.size() << " workload"
              << (task.workloads.size() == 1 ? "" : "s") << "\n";
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    std::cout << "kevo import: " << out << " was written but this kevo does not accept it\n";
    return 2;
  }
  return 0;
}

}  // namespace kevo::cli
