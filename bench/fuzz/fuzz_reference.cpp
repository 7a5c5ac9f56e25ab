// libFuzzer target: any bytes as a reference program must parse and lower or fail with ReferenceError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/interpreter.h"
#include "core/reference_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // Two inputs of different ranks reach the broadcasting, reduction and matmul rules.
  static const std::vector<kevo::InputSpec> inputs = {{"x", kevo::DType::Float32, {4, 8}},
                                                      {"w", kevo::DType::Float32, {2, 4, 8, 3}}};
  try {
    kevo::ref::Program p = kevo::ref::parse_reference(text);
    std::vector<kevo::InputSpec> mine;
    for (const auto& name : p.params)
      for (const auto& in : inputs)
        if (in.name == name) mine.push_back(in);
    if (mine.size() == p.params.size()) kevo::lower_reference(p, mine);
  } catch (const kevo::ReferenceError&) {
    // the expected way to reject a program
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
