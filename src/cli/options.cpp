// Option parsing common to every subcommand.
#include "cli/options.h"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace kevo::cli {

int parse_options(const std::string& command, const std::string& usage, const std::vector<std::string>& args,
                  const po::options_description& options, const po::positional_options_description& positional,
                  po::variables_map& vm) {
  po::options_description all = options;
  all.add_options()("help,h", "print this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: kevo " << command << " " << usage << "\n\n" << all << "\n";
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "kevo " << command << ": " << e.what() << " (see `kevo " << command << " --help`)\n";
    return 2;
  }
  return -1;
}

std::string fmt(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::vector<int> parse_gpus(const std::string& s) {
  std::vector<int> out;
  if (s == "all") return out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) {
    size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(part, &used);
    } catch (...) {
      used = 0;
    }
    if (used != part.size() || d < 0) throw std::invalid_argument("--gpus takes 'all' or a list like 0,1,3");
    out.push_back(d);
  }
  if (out.empty()) throw std::invalid_argument("--gpus takes 'all' or a list like 0,1,3");
  return out;
}

}  // namespace kevo::cli
