// BuildRequest and BuildResult as JSON: field names, the status names, base64 for the CUBIN.
#include "eval/build_wire.h"

#include <map>
#include <stdexcept>
#include <utility>

#include "core/base64.h"
#include "core/error.h"

namespace kevo::eval {

using Json = nlohmann::json;

namespace {

constexpr std::pair<BuildStatus, const char*> kStatusNames[] = {
    {BuildStatus::Ok, "ok"},           {BuildStatus::CompileError, "compile_error"},
    {BuildStatus::Timeout, "timeout"}, {BuildStatus::OutOfMemory, "out_of_memory"},
    {BuildStatus::Crashed, "crashed"}, {BuildStatus::BadRequest, "bad_request"}};

BuildStatus status_from(const std::string& name) {
  for (const auto& [status, text] : kStatusNames)
    if (name == text) return status;
  throw std::invalid_argument("unknown build status '" + name + "'");
}

Json kernel_json(const KernelResources& k) {
  return {{"name", k.name},
          {"registers", k.registers},
          {"barriers", k.barriers},
          {"shared_bytes", k.shared_bytes},
          {"constant_bytes", k.constant_bytes},
          {"stack_frame_bytes", k.stack_frame_bytes},
          {"spill_store_bytes", k.spill_store_bytes},
          {"spill_load_bytes", k.spill_load_bytes}};
}

KernelResources kernel_from(const Json& j) {
  KernelResources k;
  k.name = j.at("name").get<std::string>();
  k.registers = j.at("registers").get<int>();
  k.barriers = j.at("barriers").get<int>();
  k.shared_bytes = j.at("shared_bytes").get<int64_t>();
  k.constant_bytes = j.at("constant_bytes").get<int64_t>();
  k.stack_frame_bytes = j.at("stack_frame_bytes").get<int64_t>();
  k.spill_store_bytes = j.at("spill_store_bytes").get<int64_t>();
  k.spill_load_bytes = j.at("spill_load_bytes").get<int64_t>();
  return k;
}

}  // namespace

Json build_result_json(const BuildResult& r) {
  Json kernels = Json::array();
  for (const KernelResources& k : r.resources.kernels) kernels.push_back(kernel_json(k));
  return {{"status", to_string(r.status)},
          {"error", r.error},
          {"arch", r.arch},
          {"options", r.options},
          {"nvrtc_version", r.nvrtc_version},
          {"cubin_base64", base64_encode(r.cubin)},
          {"lowered_names", r.lowered_names},
          {"kernels", kernels},
          {"global_bytes", r.resources.global_bytes},
          {"module_constant_bytes", r.resources.module_constant_bytes},
          {"log", r.log},
          {"seconds", r.seconds},
          {"compile_seconds", r.compile_seconds},
          {"cache_hit", r.cache_hit},
          {"cache_key", r.cache_key}};
}

BuildResult build_result_from(const Json& j) {
  BuildResult r;
  r.status = status_from(j.at("status").get<std::string>());
  r.error = j.at("error").get<std::string>();
  r.arch = j.at("arch").get<std::string>();
  r.options = j.at("options").get<std::vector<std::string>>();
  r.nvrtc_version = j.at("nvrtc_version").get<std::string>();
  if (j.contains("cubin_base64")) r.cubin = base64_decode(j.at("cubin_base64").get<std::string>());
  r.lowered_names = j.at("lowered_names").get<std::map<std::string, std::string>>();
  for (const Json& k : j.at("kernels")) r.resources.kernels.push_back(kernel_from(k));
  r.resources.global_bytes = j.at("global_bytes").get<int64_t>();
  r.resources.module_constant_bytes = j.at("module_constant_bytes").get<int64_t>();
  r.log = j.at("log").get<std::string>();
  r.seconds = j.at("seconds").get<double>();
  r.compile_seconds = j.at("compile_seconds").get<double>();
  r.cache_hit = j.at("cache_hit").get<bool>();
  r.cache_key = j.at("cache_key").get<std::string>();
  return r;
}

namespace {

// Parses `text` with `read`, turning any failure into an InputError naming `what`.
template <class Read>
auto parse_json(std::string_view text, const char* what, Read read) {
  try {
    return read(Json::parse(text));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError({}, what, e.what());
  }
}

}  // namespace

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

const char* to_string(BuildStatus status) {
  for (const auto& [s, text] : kStatusNames)
    if (s == status) return text;
  return "unknown";
}

std::string build_request_to_json(const BuildRequest& q) {
  return dump_json({{"source", q.source},
               {"name_expressions", q.name_expressions},
               {"arch", q.arch},
               {"fast_math", q.fast_math},
               {"extra_options", q.extra_options},
               {"cache_dir", q.cache_dir},
               {"use_cache", q.use_cache},
               {"time_limit_s", q.time_limit_s},
               {"memory_limit_bytes", q.memory_limit_bytes}});
}

BuildRequest build_request_from_json(std::string_view json) {
  return parse_json(json, "compile request", [](const Json& j) {
    BuildRequest q;
    q.source = j.at("source").get<std::string>();
    q.name_expressions = j.at("name_expressions").get<std::vector<std::string>>();
    q.arch = j.value("arch", q.arch);
    q.fast_math = j.value("fast_math", false);
    q.extra_options = j.value("extra_options", std::vector<std::string>{});
    q.cache_dir = j.value("cache_dir", std::string());
    q.use_cache = j.value("use_cache", true);
    q.time_limit_s = j.value("time_limit_s", 0.0);
    q.memory_limit_bytes = j.value("memory_limit_bytes", uint64_t{0});
    return q;
  });
}

std::string build_result_to_json(const BuildResult& result) { return dump_json(build_result_json(result)); }

BuildResult build_result_from_json(std::string_view json) {
  return parse_json(json, "compile result", [](const Json& j) { return build_result_from(j); });
}

}  // namespace kevo::eval
