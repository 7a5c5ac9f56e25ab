// A file name in the test's temporary folder, unique within this process (pid and a counter) and
// free: a file left there by an earlier process that had the same pid is removed first, since a
// campaign refuses to write over an existing file.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace kevo::testing {

inline std::string fresh_temp_path(const std::string& prefix, const std::string& name) {
  static int n = 0;
  const std::string path =
      ::testing::TempDir() + prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + "_" + name;
  std::remove(path.c_str());
  std::remove((path + ".tmp").c_str());
  return path;
}

}  // namespace kevo::testing
