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
  // Inputs of ranks 2 to 5 and of three dtypes reach the broadcasting, promotion, reduction,
  // matmul, convolution and pooling rules; run()'s parameters take them in turn, whatever their names.
  static const std::vector<kevo::InputSpec> inputs = {{"x", kevo::DType::Float32, {4, 8}},
                                                      {"w", kevo::DType::Float32, {2, 4, 8, 3}},
                                                      {"h", kevo::DType::Float16, {2, 3, 4, 5}},
                                                      {"v", kevo::DType::BFloat16, {1, 2, 3, 4, 5}}};
  try {
    kevo::ref::Program p = kevo::ref::parse_reference(text);
    std::vector<kevo::InputSpec> mine;
    for (size_t i = 0; i < p.params.size(); ++i) {
      kevo::InputSpec in = inputs[i % inputs.size()];
      in.name = p.params[i];
      mine.push_back(in);
    }
    kevo::lower_reference(p, mine);
  } catch (const kevo::ReferenceError&) {
    // the expected way to reject a program
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
