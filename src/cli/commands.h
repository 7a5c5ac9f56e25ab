// kevo's subcommands: each takes its arguments (after the subcommand) and returns an exit code.
#pragma once

#include <string>
#include <vector>

namespace kevo::cli {

// Exit codes: 0 success, 1 a failed check or internal error, 2 bad input (flags, contracts).
int run_main(int argc, char** argv);

int cmd_check(const std::vector<std::string>& args);
int cmd_import(const std::vector<std::string>& args);
int cmd_compile(const std::vector<std::string>& args);
int cmd_compile_worker(const std::vector<std::string>& args);
int cmd_eval(const std::vector<std::string>& args);
int cmd_worker(const std::vector<std::string>& args);
int cmd_sim_worker(const std::vector<std::string>& args);
int cmd_space(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_ablate(const std::vector<std::string>& args);
int cmd_resume(const std::vector<std::string>& args);
int cmd_serve(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_train_policy(const std::vector<std::string>& args);
int cmd_version(const std::vector<std::string>& args);

}  // namespace kevo::cli
