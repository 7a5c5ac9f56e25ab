// A worker for the pool's tests that misbehaves on request: the payload names what it does.
#include "core/frame.h"
#include "eval/worker_pool.h"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

namespace {

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

[[noreturn]] void hang() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

int g_frames_fd = -1;

void write_raw(const void* p, size_t n) {
  if (::write(g_frames_fd, p, n) < 0) std::_Exit(9);
}

// Every request is logged (when FAKE_WORKER_LOG names a file) before it is acted on, so a test
// can tell that no job ran twice. A "#tag" suffix makes payloads unique without changing them.
void log_request(const std::string& full) {
  const char* path = std::getenv("FAKE_WORKER_LOG");
  if (!path) return;
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  std::string line = full + "\n";
  if (fd >= 0 && ::write(fd, line.data(), line.size()) < 0) std::_Exit(9);
  if (fd >= 0) ::close(fd);
}

// Distinct pipes among this process's descriptors: its own stdin, stdout and stderr make 3;
// more means it inherited another worker's pipe ends.
std::string count_pipes() {
  std::string inodes;
  int count = 0;
  for (int fd = 0; fd < 1024; ++fd) {
    char link[64], target[256];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = ::readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    std::string t(target, static_cast<size_t>(n));
    if (t.rfind("pipe:", 0) != 0 || inodes.find(t) != std::string::npos) continue;
    inodes += t;
    ++count;
  }
  return std::to_string(count);
}

std::string handle(const std::string& full) {
  log_request(full);
  std::string request = full.substr(0, full.find('#'));
  if (starts_with(request, "echo:")) return request.substr(5);
  if (request == "pid") return std::to_string(::getpid());
  if (starts_with(request, "env:")) {
    const char* value = std::getenv(request.substr(4).c_str());
    return value ? value : "(unset)";
  }
  if (request == "crash") std::abort();
  if (request == "segv") std::raise(SIGSEGV);
  if (request == "hang") hang();
  if (starts_with(request, "slow:")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(request.substr(5))));
    return "slept";
  }
  if (starts_with(request, "exit:")) std::_Exit(std::stoi(request.substr(5)));
  if (starts_with(request, "stderr:")) {
    std::fprintf(stderr, "%s\n", request.substr(7).c_str());
    std::fflush(stderr);
    std::abort();
  }
  if (request == "pipes") return count_pipes();
  if (request == "exit-soon") {  // dies while idle, after answering
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::_Exit(5);
    }).detach();
    return "bye";
  }
  if (request == "close-stdin") {  // stop reading without dying: the parent's next write fails
    int never[2];
    if (::pipe(never) != 0 || ::dup2(never[0], 0) < 0) std::_Exit(9);
    return "closed";
  }
  if (request == "stdout-noise") {  // a library's stray printf must not corrupt the frames
    std::printf("noise from a library\n");
    std::fflush(stdout);
    return "quiet";
  }
  if (request == "garbage") {
    std::mt19937 rng(static_cast<unsigned>(::getpid()));
    unsigned char bytes[256];
    for (auto& b : bytes) b = static_cast<unsigned char>(rng());
    bytes[0] = 0xff;  // never the frame magic's first byte
    write_raw(bytes, sizeof bytes);
    hang();
  }
  if (request == "huge") {  // announces a frame far beyond any limit, then stalls
    unsigned char header[12];
    uint32_t magic = kevo::kFrameMagic;
    uint64_t len = uint64_t{1} << 40;
    std::memcpy(header, &magic, 4);
    std::memcpy(header + 4, &len, 8);
    write_raw(header, sizeof header);
    hang();
  }
  return "unknown request: " + request;
}

}  // namespace

int main(int argc, char** argv) {
  // A crash must end at once: a core dump delays the pipe's EOF and fills the disk.
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fail-start") == 0) {
      std::fprintf(stderr, "fake_worker: cannot initialise the device\n");
      return 3;
    }
    if (std::strcmp(argv[i], "--not-a-worker") == 0) {
      std::printf("hello, I print to stdout\n");
      std::fflush(stdout);
      hang();
    }
  }
  // The raw misbehaviours need the pipe the frames travel on, which serve_worker_on_stdio
  // moves off fd 1.
  g_frames_fd = ::dup(1);
  return kevo::serve_worker_on_stdio(handle);
}
