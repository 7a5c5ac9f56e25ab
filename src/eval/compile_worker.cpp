// The compile worker, `kevo compile-worker`: build() answering requests under a time and memory
// limit. While NVRTC runs, the answers for a timeout, a crash and an allocation failure are
// already serialized, so the watchdog thread and the signal handler only write them. Whoever
// claims `g_answer_claimed` first answers; everyone else stays silent.
#include "eval/compile_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/frame.h"
#include "eval/build_wire.h"
#include "eval/cuda_driver.h"
#include "eval/worker_pool.h"

namespace kevo::eval {

namespace {

std::atomic<bool> g_answer_claimed{true};
int g_out_fd = -1;
const std::string* g_crashed_answer = nullptr;
const std::string* g_out_of_memory_answer = nullptr;
uint64_t g_address_space_limit = 0;  // bytes; 0: none
constexpr int kExitTimeout = 124, kExitCrashed = 125;

// The process's address space from /proc/self/statm, with async-signal-safe calls only.
uint64_t address_space_bytes() {
  int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buffer[64];
  ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  uint64_t pages = 0;
  for (ssize_t i = 0; i < n && buffer[i] >= '0' && buffer[i] <= '9'; ++i)
    pages = pages * 10 + static_cast<uint64_t>(buffer[i] - '0');
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// NVRTC's LLVM aborts when an allocation fails ("LLVM ERROR: out of memory"); a crash with the
// address space nearly exhausted is reported as out of memory.
void on_fatal_signal(int signal) {
  if (g_crashed_answer && !g_answer_claimed.exchange(true)) {
    bool near_limit = g_address_space_limit > 0 && address_space_bytes() > g_address_space_limit / 10 * 9;
    write_frame(g_out_fd, near_limit ? *g_out_of_memory_answer : *g_crashed_answer);
  }
  _exit(kExitCrashed);
}

void install_fatal_signal_handlers() {
  static char alternate_stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(s, &sa, nullptr);
}

// RLIMIT_AS counts every mapping, and the worker's binary may map large libraries (LibTorch):
// the limit is the address space at the first request plus the request's allowance.
void limit_memory_once(uint64_t allowance) {
  static bool applied = false;
  if (applied || allowance == 0) return;
  applied = true;
  uint64_t limit = address_space_bytes() + allowance;
  struct rlimit rl{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
  if (::setrlimit(RLIMIT_AS, &rl) == 0) g_address_space_limit = limit;
}

BuildResult failed_result(const BuildRequest& request, BuildStatus status, std::string error) {
  BuildResult r;
  r.arch = request.arch;
  r.nvrtc_version = nvrtc_version();
  r.status = status;
  r.error = error;
  r.log = std::move(error);
  return r;
}

std::string answer_request(const std::string& payload, int out_fd) {
  BuildRequest request;
  try {
    request = build_request_from_json(payload);
  } catch (const InputError& e) {
    return build_result_to_json(failed_result(request, BuildStatus::BadRequest, e.what()));
  }
  limit_memory_once(request.memory_limit_bytes);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", request.time_limit_s);
  const std::string timeout_answer = build_result_to_json(
      failed_result(request, BuildStatus::Timeout, std::string("compilation took longer than ") + seconds + " s"));
  const std::string crashed_answer =
      build_result_to_json(failed_result(request, BuildStatus::Crashed, "the compiler crashed"));
  const std::string out_of_memory_answer = build_result_to_json(
      failed_result(request, BuildStatus::OutOfMemory, "compilation exceeded the memory limit"));

  g_out_fd = out_fd;
  g_crashed_answer = &crashed_answer;
  g_out_of_memory_answer = &out_of_memory_answer;
  g_answer_claimed = false;

  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog;
  if (request.time_limit_s > 0)
    watchdog = std::thread([&] {
      std::unique_lock<std::mutex> lock(mutex);
      auto limit = std::chrono::duration<double>(request.time_limit_s);
      if (!done_cv.wait_for(lock, limit, [&] { return done; }) && !g_answer_claimed.exchange(true)) {
        write_frame(out_fd, timeout_answer);
        _exit(kExitTimeout);  // NVRTC cannot be interrupted; the supervisor respawns the worker
      }
    });

  std::string answer;
  try {
    answer = build_result_to_json(build(request));
  } catch (const std::bad_alloc&) {
    answer = out_of_memory_answer;
  } catch (const std::exception&) {
    answer = crashed_answer;
  }
  if (g_answer_claimed.exchange(true))
    for (;;) ::pause();  // the watchdog is answering and will end the process
  g_crashed_answer = g_out_of_memory_answer = nullptr;
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    done_cv.notify_one();
    watchdog.join();
  }
  return answer;
}

}  // namespace

int compile_worker_main(int in_fd, int out_fd) {
  install_fatal_signal_handlers();
  return serve_worker(in_fd, out_fd, [out_fd](const std::string& payload) { return answer_request(payload, out_fd); },
                      uint64_t{64} << 20);
}


}  // namespace kevo::eval
