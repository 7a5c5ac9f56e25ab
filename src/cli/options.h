// Shared option parsing for subcommands: Boost.Program_options with one-line errors.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace kevo::cli {

namespace po = boost::program_options;

// Parses `args` into `vm`. Returns -1 to go on, or an exit code: 0 after printing --help,
// 2 after printing a one-line error for a bad flag.
// One number for the user, printf-formatted ("%.3f").
std::string fmt(const char* format, double v);

// "all" (empty: every GPU) or a list like "0,1,3". Throws std::invalid_argument with the flag's usage.
std::vector<int> parse_gpus(const std::string& s);

int parse_options(const std::string& command, const std::string& usage, const std::vector<std::string>& args,
                  const po::options_description& options, const po::positional_options_description& positional,
                  po::variables_map& vm);

}  // namespace kevo::cli
