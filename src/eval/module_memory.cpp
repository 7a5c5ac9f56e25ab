// Finding and resetting a module's writable sections.
#include "eval/module_memory.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "core/base64.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"

namespace kevo::eval {

ModuleMemory::ModuleMemory(CUmodule module, const std::vector<WritableSection>& sections) {
  const CudaApi& api = *cuda_api();
  for (const WritableSection& s : sections) {
    if (s.symbols.empty()) throw std::runtime_error("module memory " + s.name + " holds no symbol kevo could find it by");
    Region r;
    r.bytes = s.bytes;
    r.image = s.image;
    for (const auto& [name, offset] : s.symbols) {
      CUdeviceptr at = 0;
      size_t size = 0;
      CUresult res = api.cuModuleGetGlobal(&at, &size, module, name.c_str());
      if (res != CUDA_SUCCESS)
        throw std::runtime_error("module memory symbol '" + name + "' does not resolve: " + cuda_error_text(res));
      const CUdeviceptr base = at - offset;
      if (r.at != 0 && base != r.at)
        throw std::runtime_error("the symbols of " + s.name + " are not laid out as the CUBIN says");
      r.at = base;
    }
    regions_.push_back(std::move(r));
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
    for (const auto& [name, offset] : s.symbols) symbols.push_back({name, offset});
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
      s.symbols.emplace_back(sym.at(0).get<std::string>(), sym.at(1).get<uint64_t>());
      if (s.symbols.back().second >= s.bytes) throw std::invalid_argument("module memory symbol outside its section");
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kevo::eval
