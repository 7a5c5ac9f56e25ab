// The contracts (*.json) of a folder of the source tree, for tests that run over every task.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kevo::testing {

// The contracts of `folder` (relative to `root`, which ends in '/') as paths relative to root
// ("tasks/01_relu.json"), sorted; empty when the folder does not exist.
inline std::vector<std::string> contract_files(const std::string& root, const std::string& folder) {
  std::vector<std::string> out;
  DIR* d = opendir((root + folder).c_str());
  for (dirent* e; d && (e = readdir(d));) {
    const std::string n = e->d_name;
    if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out.push_back(folder + "/" + n);
  }
  if (d) closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kevo::testing
