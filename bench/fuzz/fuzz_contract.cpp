// libFuzzer target: any bytes as a task contract must load or fail with a one-line InputError.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/task.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kevo::parse_task(text, "fuzz.json");
  } catch (const kevo::InputError& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) {
      std::fprintf(stderr, "multi-line error: %s\n", e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
