// Finding and resetting a module's writable sections.
#include "eval/module_memory.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "core/base64.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"

namespace kevo::eval {

namespace {

// Bytes of the section no symbol covers, beyond the padding that aligns the next one to `kAlign`.
constexpr uint64_t kAlign = 16;

uint64_t uncovered(const WritableSection& s) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const ModuleSymbol& sym : s.symbols) spans.emplace_back(sym.offset, sym.offset + sym.bytes);
  std::sort(spans.begin(), spans.end());
  uint64_t at = 0, gaps = 0;
  for (const auto& [begin, end] : spans) {
    if (begin > at + kAlign) gaps += begin - at;
    at = std::max(at, end);
  }
  if (s.bytes > at + kAlign) gaps += s.bytes - at;
  return gaps;
}

}  // namespace

ModuleMemory::ModuleMemory(CUmodule module, const std::vector<WritableSection>& sections) {
  const CudaApi& api = *cuda_api();
  for (const WritableSection& s : sections) {
    if (uint64_t gap = uncovered(s))
      throw std::runtime_error(std::to_string(gap) + " bytes of " + s.name + " belong to no variable");
    for (const ModuleSymbol& sym : s.symbols) {
      if (sym.bytes == 0) continue;
      Region r;
      size_t size = 0;
      CUresult res = api.cuModuleGetGlobal(&r.at, &size, module, sym.name.c_str());
      if (res != CUDA_SUCCESS)
        throw std::runtime_error("module memory symbol '" + sym.name + "' does not resolve: " + cuda_error_text(res));
      if (size != sym.bytes)
        throw std::runtime_error("module memory symbol '" + sym.name + "' is " + std::to_string(size) + " bytes, not " +
                                 std::to_string(sym.bytes));
      r.bytes = sym.bytes;
      if (!s.image.empty()) r.image = s.image.substr(sym.offset, sym.bytes);
      regions_.push_back(std::move(r));
    }
  }
}

void ModuleMemory::reset(CUstream stream) const {
  const CudaApi& api = *cuda_api();
  for (const Region& r : regions_) {
    if (r.image.empty())
      check_cuda(api.cuMemsetD8Async(r.at, 0, r.bytes, stream), "cuMemsetD8Async(module memory)");
    else
      check_cuda(api.cuMemcpyHtoDAsync(r.at, r.image.data(), r.bytes, stream), "cuMemcpyHtoDAsync(module memory)");
  }
}

nlohmann::json writable_to_json(const std::vector<WritableSection>& sections) {
  nlohmann::json out = nlohmann::json::array();
  for (const WritableSection& s : sections) {
    nlohmann::json symbols = nlohmann::json::array();
    for (const ModuleSymbol& sym : s.symbols) symbols.push_back({sym.name, sym.offset, sym.bytes});
    out.push_back({{"name", s.name}, {"bytes", s.bytes}, {"image_base64", base64_encode(s.image)}, {"symbols", symbols}});
  }
  return out;
}

std::vector<WritableSection> writable_from_json(const nlohmann::json& j) {
  std::vector<WritableSection> out;
  for (const nlohmann::json& e : j) {
    WritableSection s;
    s.name = e.at("name").get<std::string>();
    s.bytes = e.at("bytes").get<uint64_t>();
    s.image = base64_decode(e.at("image_base64").get<std::string>());
    if (!s.image.empty() && s.image.size() != s.bytes) throw std::invalid_argument("module memory image of the wrong size");
    for (const nlohmann::json& sym : e.at("symbols")) {
      ModuleSymbol m{sym.at(0).get<std::string>(), sym.at(1).get<uint64_t>(), sym.at(2).get<uint64_t>()};
      if (m.offset > s.bytes || m.bytes > s.bytes - m.offset) throw std::invalid_argument("module memory symbol outside its section");
      s.symbols.push_back(std::move(m));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kevo::eval
