// The GPU worker: module cache, the engine's arena mapped once per handle, plan launches and
// CUPTI timing, every failure answered with a status instead of a crash. Module memory is written
// back to its load-time image before every launch; timed runs alternate between the engine's
// buffer sets, each poisoned before it runs.
#include "eval/gpu_worker.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include "core/base64.h"
#include "core/plan_json.h"
#include "eval/builder.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/gpu_timer.h"
#include "eval/kernel_launch.h"
#include "eval/library_steps.h"
#include "eval/module_memory.h"
#include "eval/worker_pool.h"

namespace kevo::eval {

namespace {

using Json = nlohmann::json;

struct BadRequest : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A module whose writable memory cannot be found to be reset: answered "stateful".
struct ModuleMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class GpuWorker {
 public:
  GpuWorker() : api_(*cuda_api()) {
    use_primary_context(0);
    check_cuda(api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  std::string handle(const std::string& request) {
    Json answer;
    try {
      Json j = Json::parse(request);
      std::string op = j.at("op").get<std::string>();
      if (op == "unmap") {  // the engine frees the arena next: its memory goes only once no process maps it
        unmap_arena();
        return Json{{"status", "ok"}, {"sticky", false}}.dump();
      }
      if (op != "run" && op != "time") throw BadRequest("unknown op '" + op + "'");
      if (j.value("reload", false)) modules_.erase(j.at("module").at("key").get<std::string>());
      const Module& module = load(j.at("module"));
      CUdeviceptr base = map_arena(j.at("arena"));
      ResolvedPlan plan = resolved_plan_from_json(j.at("plan"));
      const std::vector<std::vector<CUdeviceptr>> sets = placements(plan, j);
      answer["status"] = "ok";
      if (op == "run") {
        module.memory.reset(stream_);
        launch_plan(module.code, plan, sets.front(), stream_, &libraries_);
        check_cuda(api_.cuStreamSynchronize(stream_), "the candidate's run");
      } else {
        answer["timing"] = timing_json(time_plan(module, plan, sets, base, j));
      }
    } catch (const ModuleMemoryError& e) {
      answer = {{"status", "stateful"}, {"error", e.what()}};
    } catch (const CudaError& e) {
      bool sticky = is_sticky_error(e.code());
      answer = {{"status", sticky ? "cuda_error" : "launch_error"}, {"sticky", sticky}, {"error", e.what()}};
    } catch (const BadRequest& e) {
      answer = {{"status", "bad_request"}, {"error", e.what()}};
    } catch (const Json::exception& e) {
      answer = {{"status", "bad_request"}, {"error", std::string("malformed request: ") + e.what()}};
    } catch (const std::invalid_argument& e) {
      answer = {{"status", "bad_request"}, {"error", e.what()}};
    } catch (const std::exception& e) {
      answer = {{"status", "launch_error"}, {"error", e.what()}};
    }
    if (!answer.contains("sticky")) answer["sticky"] = false;
    report_tunings();
    return answer.dump();
  }

 private:
  struct Poison {
    CUdeviceptr at;
    size_t bytes;
    uint32_t word;
    int width;
  };

  // The worker's log (its stderr, which the engine shows when a worker fails) gets one line per
  // autotuned cuBLASLt choice.
  void report_tunings() {
    const auto& t = libraries_.tunings();
    for (; reported_tunings_ < t.size(); ++reported_tunings_)
      std::fprintf(stderr, "kevo worker: %s\n", t[reported_tunings_].text().c_str());
  }

  static double sum(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  }

  // A loaded CUBIN and its writable module memory.
  struct Module {
    explicit Module(const BuildResult& built, const std::vector<WritableSection>& writable)
        : code(built), memory(make_memory(code, writable)) {}
    LoadedModule code;
    ModuleMemory memory;
  };

  static ModuleMemory make_memory(const LoadedModule& code, const std::vector<WritableSection>& writable) {
    try {
      return ModuleMemory(code.handle(), writable);
    } catch (const std::runtime_error& e) {
      throw ModuleMemoryError("writable module memory kevo cannot reset before every launch: " + std::string(e.what()));
    }
  }

  const Module& load(const Json& m) {
    std::string key = m.at("key").get<std::string>();
    auto it = modules_.find(key);
    if (it != modules_.end()) return *it->second;
    if (modules_.size() >= 32) modules_.clear();  // candidates come and go; keep the context lean
    BuildResult built;
    built.status = BuildStatus::Ok;
    built.cubin = base64_decode(m.at("cubin_base64").get<std::string>());
    built.lowered_names = m.at("lowered").get<std::map<std::string, std::string>>();
    auto module = std::make_unique<Module>(built, writable_from_json(m.value("writable", Json::array())));
    return *(modules_[key] = std::move(module));
  }

  void unmap_arena() {
    if (arena_) api_.cuIpcCloseMemHandle(arena_);
    arena_ = 0;
    arena_handle_.clear();
  }

  CUdeviceptr map_arena(const Json& a) {
    std::string handle = base64_decode(a.at("handle_base64").get<std::string>());
    if (handle.size() != sizeof(CUipcMemHandle)) throw BadRequest("arena handle of the wrong size");
    uint64_t bytes = a.at("bytes").get<uint64_t>();
    if (handle != arena_handle_) {
      unmap_arena();
      CUipcMemHandle h;
      std::memcpy(&h, handle.data(), sizeof h);
      check_cuda(api_.cuIpcOpenMemHandle(&arena_, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
      arena_handle_ = handle;
    }
    arena_bytes_ = bytes;
    return arena_;
  }

  std::vector<CUdeviceptr> place(const ResolvedPlan& plan, const Json& offsets) {
    if (!offsets.is_array() || offsets.size() != plan.buffers.size()) throw BadRequest("one offset per buffer");
    std::vector<CUdeviceptr> out;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      uint64_t off = offsets[i].get<uint64_t>();
      if (off + static_cast<uint64_t>(plan.buffers[i].bytes) > arena_bytes_) throw BadRequest("buffer outside the arena");
      out.push_back(arena_ + off);
    }
    return out;
  }

  // The buffer sets of a request: "sets" (timed runs alternate between them), else "offsets".
  std::vector<std::vector<CUdeviceptr>> placements(const ResolvedPlan& plan, const Json& j) {
    std::vector<std::vector<CUdeviceptr>> out;
    if (!j.contains("sets")) return {place(plan, j.at("offsets"))};
    for (const Json& offsets : j.at("sets")) out.push_back(place(plan, offsets));
    if (out.empty()) throw BadRequest("no buffer set");
    return out;
  }

  // Timed runs. Each repetition uses the next buffer set and starts from its poisoned outputs and
  // scratch and from module memory as loaded, so that nothing an earlier launch left behind can
  // help it; "keep_state" (the engine's probe of whether a candidate gains from such state) runs
  // the first set again and again with nothing reset.
  Timing time_plan(const Module& module, const ResolvedPlan& plan, const std::vector<std::vector<CUdeviceptr>>& sets,
                   CUdeviceptr base, const Json& j) {
    // An autotuned matmul times its candidate algorithms at its first launch; a trial run has
    // normally done that already, and this makes sure none of those runs falls in a timed span.
    for (const ResolvedStep& s : plan.steps)
      if (const auto* m = std::get_if<ResolvedMatmul>(&s); m && m->call.algo == kAutotunedAlgo)
        libraries_.autotune(*m, plan, sets.front(), stream_);
    TimingConfig cfg = timing_config(j.at("timing"));
    const bool keep_state = j.value("keep_state", false);
    std::vector<std::vector<Poison>> poison;
    for (const Json& list : j.at("poison")) poison.push_back(poison_list(list, base));
    if (!keep_state && poison.size() != sets.size()) throw BadRequest("one poison list per buffer set");
    size_t runs = 0;  // launches so far: run k uses set k mod sets
    // Kept state still waits for the stream before each run, as a reset does: the two protocols
    // differ only in what is reset.
    cfg.before_each = [&](CUstream s) {
      if (keep_state) return;
      for (const Poison& p : poison[runs % sets.size()]) fill_pattern(p.at, p.bytes, p.word, p.width, s);
      module.memory.reset(s);
    };
    auto enqueue = [&](CUstream s) {
      const size_t set = keep_state ? 0 : runs++ % sets.size();
      launch_plan(module.code, plan, sets[set], s, &libraries_);
    };
    return time_on_gpu(enqueue, stream_, cfg);
  }

  static Json timing_json(const Timing& t) {
    return {{"median_ms", t.median_ms},       {"p20_ms", t.p20_ms},
            {"p80_ms", t.p80_ms},             {"half_width_ms", t.half_width_ms},
            {"n", t.n},                       {"converged", t.converged},
            {"event_median_ms", t.event_median_ms}, {"gated", t.gated},
            {"kernels_min", t.kernels_min},   {"kernels_max", t.kernels_max}, {"copies_max", t.copies_max},
            {"foreign_stream_kernels", t.foreign_stream_kernels},
            {"sm_clock_mhz", t.sm_clock_mhz}, {"temperature_c", t.temperature_c},
            {"gpu_ms_total", sum(t.cupti_ms)}};
  }

  std::vector<Poison> poison_list(const Json& list, CUdeviceptr base) {
    std::vector<Poison> out;
    for (const Json& p : list) {
      Poison x{base + p.at("offset").get<uint64_t>(), p.at("bytes").get<size_t>(), p.at("word").get<uint32_t>(),
               p.at("width").get<int>()};
      if (p.at("offset").get<uint64_t>() + x.bytes > arena_bytes_ || (x.width != 1 && x.width != 2 && x.width != 4) ||
          x.bytes % static_cast<size_t>(x.width))
        throw BadRequest("poison region outside the arena or misaligned");
      out.push_back(x);
    }
    return out;
  }

  static TimingConfig timing_config(const Json& t) {
    TimingConfig c;
    c.warmup = t.value("warmup", c.warmup);
    c.min_reps = t.value("min_reps", c.min_reps);
    c.max_reps = t.value("max_reps", c.max_reps);
    c.max_seconds = t.value("max_seconds", c.max_seconds);
    c.target_half_width = t.value("target_half_width", c.target_half_width);
    if (c.warmup < 0 || c.min_reps < 1 || c.max_reps < c.min_reps || !(c.max_seconds > 0))
      throw BadRequest("bad timing configuration");
    return c;
  }

  const CudaApi& api_;
  CUstream stream_ = nullptr;
  std::map<std::string, std::unique_ptr<Module>> modules_;
  LibrarySteps libraries_;
  size_t reported_tunings_ = 0;
  std::string arena_handle_;
  CUdeviceptr arena_ = 0;
  uint64_t arena_bytes_ = 0;
};

}  // namespace

int gpu_worker_main() {
  if (!cuda_api()) {
    std::fprintf(stderr, "kevo worker: %s\n", cuda_driver_status().error.c_str());
    return 1;
  }
  std::unique_ptr<GpuWorker> worker;
  try {
    worker = std::make_unique<GpuWorker>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kevo worker: %s\n", e.what());
    return 1;
  }
  return serve_worker_on_stdio([&](const std::string& request) { return worker->handle(request); });
}

}  // namespace kevo::eval
