// Worker processes under supervision: one thread per worker talks to it, a killer thread
// enforces deadlines, and every job ends in exactly one outcome whatever the worker does.
#include "eval/worker_pool.h"

#include "core/frame.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

extern char** environ;

namespace kevo {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The first frame a worker sends: it is initialised and reads requests. A binary that prints
// anything else on stdout is not a kevo worker.
const char kReadyFrame[] = "kevo-worker-ready";
// Tells a worker which process supervises it, so it can tell when that process has died.
const char kSupervisorEnv[] = "KEVO_SUPERVISOR_PID";

// How long after its deadline a worker's pipes may stay open (something it forked still holds
// them) before the supervisor stops reading them.
constexpr milliseconds kAbandonAfter{2000};
// How long a worker whose output broke gets to exit by itself, so that a crash mid-answer is
// reported as a crash rather than as garbage.
constexpr milliseconds kExitWait{250};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// pipe2 with O_CLOEXEC so no worker inherits another's pipes; ends kept above stdio so the
// child's dup2 onto 0/1/2 always makes a fresh, inheritable descriptor.
bool make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (fds[i] > 2) continue;
    int moved = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    ::close(fds[i]);
    fds[i] = moved;
  }
  if (fds[0] >= 0 && fds[1] >= 0) return true;
  close_fd(fds[0]);
  close_fd(fds[1]);
  return false;
}

std::string describe_exit(int wstatus) {
  if (WIFEXITED(wstatus)) return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    return "was killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "ended with wait status " + std::to_string(wstatus);
}

// The last bytes a worker wrote to stderr: the useful part of a crash report.
class StderrTail {
 public:
  explicit StderrTail(size_t cap) : cap_(cap) {}
  void append(const char* p, size_t n) {
    text_.append(p, n);
    if (text_.size() > cap_) {
      text_.erase(0, text_.size() - cap_);
      cut_ = true;
    }
  }
  void clear() {
    text_.clear();
    cut_ = false;
  }
  std::string report() const {
    if (text_.empty()) return "";
    return std::string("\n--- stderr") + (cut_ ? " (tail)" : "") + " ---\n" + text_;
  }

 private:
  size_t cap_;
  std::string text_;
  bool cut_ = false;
};

// A SIGPIPE is raised in the writing thread, which blocks it: take it so it is not left pending.
void discard_pending_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  timespec zero{0, 0};
  while (::sigtimedwait(&set, nullptr, &zero) == SIGPIPE) {
  }
}

struct Process {
  pid_t pid = 0;
  int in = -1;   // the worker's stdin
  int out = -1;  // its stdout: frames
  int err = -1;  // its stderr, non-blocking
};

// The parent's environment with the spec's variables added or replaced.
std::vector<std::string> worker_environment(const WorkerSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool replaced = key == kSupervisorEnv ||
                    std::any_of(spec.env.begin(), spec.env.end(),
                                [&](const auto& kv) { return kv.first == key; });
    if (!replaced) env.push_back(std::move(entry));
  }
  for (const auto& [key, value] : spec.env) env.push_back(key + "=" + value);
  env.push_back(std::string(kSupervisorEnv) + "=" + std::to_string(::getpid()));
  return env;
}

// Starts one worker in its own process group (so a kill reaches anything it forked), with
// default signal dispositions and an empty mask whatever the parent's thread had.
std::string spawn_process(const WorkerSpec& spec, Process& proc) {
  if (spec.argv.empty()) return "has no command";
  // Child ends: stdin's read end, stdout's and stderr's write ends.
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err}) close_fd(p[0]), close_fd(p[1]);
  };
  for (int* p : {in, out, err}) {
    if (make_pipe(p)) continue;
    std::string why = std::string("pipe: ") + std::strerror(errno);
    close_all();
    return why;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Descriptors the engine itself inherited without O_CLOEXEC are no business of a worker's.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  std::vector<std::string> env_strings = worker_environment(spec);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    close_all();
    return "cannot start " + spec.argv[0] + ": " + std::strerror(rc);
  }
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  ::fcntl(err[0], F_SETFL, ::fcntl(err[0], F_GETFL) | O_NONBLOCK);
  proc = Process{pid, in[1], out[0], err[0]};
  return "";
}

// Whether `pid` has ended, without reaping it: the pid (and so its process group id) stays
// reserved until the supervisor has killed the group and reaped it.
bool has_exited(pid_t pid, milliseconds wait) {
  auto until = Clock::now() + wait;
  for (;;) {
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    int rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid) return true;
    if (rc != 0 && errno != EINTR) return true;  // not our child any more
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

enum class KillReason { None, Deadline, Shutdown };

struct Slot {
  explicit Slot(WorkerSpec s, size_t tail_bytes) : spec(std::move(s)), tail(tail_bytes) {}
  WorkerSpec spec;
  std::thread thread;
  // Owned by the slot's thread.
  Process proc;
  StderrTail tail;
  int start_failures = 0;
  std::string start_error;  // why the last start failed
  pid_t last_pid = 0;       // for error text after the process is gone
  // Guarded by the pool mutex: the killer may SIGKILL proc.pid only while `armed`, and the slot
  // thread reaps only after disarming, so a kill never reaches a recycled pid.
  pid_t live_pid = 0;
  bool armed = false;
  Clock::time_point kill_at;
  KillReason killed = KillReason::None;
};

enum class StartResult { Started, Failed, Stopping };

struct Awaited {
  FrameStatus status = FrameStatus::Error;
  bool abandoned = false;  // the pipes stayed open long after the deadline
};

}  // namespace

const char* to_string(JobStatus status) {
  switch (status) {
    case JobStatus::Ok: return "ok";
    case JobStatus::Timeout: return "timeout";
    case JobStatus::Crashed: return "crashed";
    case JobStatus::ProtocolError: return "protocol-error";
    case JobStatus::Unavailable: return "unavailable";
  }
  return "?";
}

class WorkerPool::Impl {
 public:
  explicit Impl(WorkerPoolConfig config) : cfg_(std::move(config)) {
    for (const auto& spec : cfg_.workers)
      slots_.push_back(std::make_unique<Slot>(spec, cfg_.stderr_tail_bytes));
    available_ = slots_.size();
    killer_ = std::thread([this] { killer_loop(); });
    for (auto& slot : slots_) slot->thread = std::thread([this, s = slot.get()] { slot_loop(*s); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      shutdown_at_ = Clock::now() + cfg_.shutdown_grace;
    }
    work_cv_.notify_all();
    killer_cv_.notify_all();
    for (auto& slot : slots_) slot->thread.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      killer_exit_ = true;
    }
    killer_cv_.notify_all();
    killer_.join();
  }

  void submit(Job job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!outstanding_.insert(job.id).second)
      throw std::invalid_argument("worker pool: job id " + std::to_string(job.id) +
                                  " is already outstanding");
    if (available_ == 0) {
      outcomes_.push_back(unavailable_outcome(job.id));
      outcome_cv_.notify_all();
      return;
    }
    queue_.push_back(std::move(job));
    work_cv_.notify_one();
  }

  JobOutcome next_outcome() {
    std::unique_lock<std::mutex> lock(mu_);
    if (outstanding_.empty()) throw std::logic_error("worker pool: no job is outstanding");
    outcome_cv_.wait(lock, [&] { return !outcomes_.empty(); });
    JobOutcome out = std::move(outcomes_.front());
    outcomes_.pop_front();
    outstanding_.erase(out.id);
    return out;
  }

  bool nothing_outstanding() const {
    std::lock_guard<std::mutex> lock(mu_);
    return outstanding_.empty();
  }

  std::vector<pid_t> pids() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<pid_t> out;
    for (const auto& slot : slots_) out.push_back(slot->live_pid);
    return out;
  }

  size_t available() const {
    std::lock_guard<std::mutex> lock(mu_);
    return available_;
  }

 private:
  // --- the slot thread: one per worker --------------------------------------------------

  void slot_loop(Slot& slot) {
    // Writes to a dead worker's stdin must fail with EPIPE, not kill the engine.
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

    if (!start_or_give_up(slot, std::nullopt)) return;
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) break;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      // A worker that died while idle is replaced before it is handed a job it never saw.
      if (has_exited(slot.proc.pid, milliseconds(0))) {
        terminate(slot, false);
        if (!start_or_give_up(slot, std::move(job))) return;
      }
      JobOutcome out = run_job(slot, job);
      if (out.status == JobStatus::Ok && !out.worker_replaced && cfg_.respawn_after &&
          cfg_.respawn_after(out.answer))
        out.worker_replaced = true;
      bool replace = out.worker_replaced;
      if (replace && slot.proc.pid > 0) terminate(slot, false);
      deliver(std::move(out));
      if (replace && !start_or_give_up(slot, std::nullopt)) return;
    }
    terminate(slot, true);
  }

  // False when the slot thread should end: the pool is stopping or the worker is Unavailable.
  bool start_or_give_up(Slot& slot, std::optional<Job> held) {
    StartResult started = start(slot);
    if (started == StartResult::Failed) give_up(slot, std::move(held));
    return started == StartResult::Started;
  }

  // Spawns the worker and waits for its ready frame; gives up after max_start_failures in a row.
  StartResult start(Slot& slot) {
    while (slot.start_failures < cfg_.max_start_failures) {
      if (slot.start_failures > 0) {
        std::unique_lock<std::mutex> lock(mu_);
        if (work_cv_.wait_for(lock, cfg_.restart_backoff * slot.start_failures,
                              [&] { return stopping_; }))
          return StartResult::Stopping;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return StartResult::Stopping;
      }
      slot.tail.clear();
      std::string error = spawn_process(slot.spec, slot.proc);
      if (!error.empty()) {
        error = "worker " + slot.spec.name + ": " + error;
      } else {
        {
          std::lock_guard<std::mutex> lock(mu_);
          slot.live_pid = slot.proc.pid;
        }
        arm(slot, cfg_.start_timeout);
        std::string hello;
        Awaited got = await_frame(slot, hello);
        KillReason killed = disarm(slot);
        if (got.status == FrameStatus::Ok && hello == kReadyFrame) {
          slot.start_failures = 0;
          return StartResult::Started;
        }
        if (killed == KillReason::Shutdown) {
          terminate(slot, false);
          return StartResult::Stopping;
        }
        bool exited = has_exited(slot.proc.pid, kExitWait);
        std::string how = terminate(slot, false);
        if (killed == KillReason::Deadline || got.abandoned)
          error = "no ready frame within " + std::to_string(cfg_.start_timeout.count()) + " ms";
        else if (exited)
          error = how;
        else
          error = "did not send the ready frame (not a kevo worker?)";
        error = "worker " + slot.spec.name + " " + error + slot.tail.report();
      }
      slot.start_error = error;
      ++slot.start_failures;
    }
    return StartResult::Failed;
  }

  // The worker cannot be started: its job (if it held one) goes back to the queue for the
  // others; when no worker is left, everything queued gets Unavailable instead of waiting.
  void give_up(Slot& slot, std::optional<Job> held) {
    std::lock_guard<std::mutex> lock(mu_);
    if (held) queue_.push_front(std::move(*held));
    --available_;
    unavailable_reasons_ += (unavailable_reasons_.empty() ? "" : "\n") +
                            std::to_string(slot.start_failures) + " failed starts in a row: " +
                            slot.start_error;
    if (available_ > 0) {
      work_cv_.notify_all();
      return;
    }
    for (const Job& job : queue_) outcomes_.push_back(unavailable_outcome(job.id));
    queue_.clear();
    outcome_cv_.notify_all();
  }

  JobOutcome run_job(Slot& slot, const Job& job) {
    JobOutcome out;
    out.id = job.id;
    out.worker = slot.spec.name;
    drain_stderr(slot);
    auto t0 = Clock::now();
    arm(slot, job.timeout);
    Awaited got;
    std::string answer;
    bool sent = write_frame(slot.proc.in, job.payload);
    if (sent) {
      got = await_frame(slot, answer);
    } else {
      discard_pending_sigpipe();
      got.status = FrameStatus::Eof;
    }
    KillReason killed = disarm(slot);
    out.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (got.status == FrameStatus::Ok) {
      out.status = JobStatus::Ok;
      out.answer = std::move(answer);
      out.worker_replaced = killed != KillReason::None;  // answered, then the killer struck
      return out;
    }

    out.worker_replaced = true;
    std::string what;
    if (killed == KillReason::Deadline || got.abandoned) {
      out.status = JobStatus::Timeout;
      what = "gave no answer within " + std::to_string(job.timeout.count()) + " ms; killed";
    } else if (killed == KillReason::Shutdown) {
      out.status = JobStatus::Crashed;
      what = "was killed: the pool is shutting down";
    } else if (got.status == FrameStatus::TooLarge) {
      out.status = JobStatus::ProtocolError;
      what = "announced an answer larger than " + std::to_string(cfg_.max_message_bytes) +
             " bytes; killed";
    } else if (has_exited(slot.proc.pid, kExitWait)) {
      out.status = JobStatus::Crashed;  // terminate() reports how it ended
    } else if (got.status == FrameStatus::Garbage) {
      out.status = JobStatus::ProtocolError;
      what = "sent a malformed answer frame; killed";
    } else {
      out.status = JobStatus::Crashed;
      what = sent ? "closed its output without answering; killed"
                  : "stopped reading its input; killed";
    }
    std::string how = terminate(slot, false);
    if (what.empty()) what = how.empty() ? "ended (its exit status was reaped elsewhere)" : how;
    out.error = "worker " + slot.spec.name + " (pid " + std::to_string(slot.last_pid) + ") " +
                what + slot.tail.report();
    return out;
  }

  // Waits for one frame on the worker's stdout while collecting its stderr.
  Awaited await_frame(Slot& slot, std::string& payload) {
    Clock::time_point give_up_at;
    {
      std::lock_guard<std::mutex> lock(mu_);
      give_up_at = slot.kill_at + kAbandonAfter;
    }
    for (;;) {
      pollfd fds[2] = {{slot.proc.out, POLLIN, 0}, {slot.proc.err, POLLIN, 0}};
      nfds_t n = slot.proc.err >= 0 ? 2 : 1;
      auto left = std::chrono::duration_cast<milliseconds>(give_up_at - Clock::now()).count();
      int rc = ::poll(fds, n, static_cast<int>(std::clamp<long long>(left, 0, 1 << 30)));
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) return {FrameStatus::Error, false};
      if (rc == 0) return {FrameStatus::Error, true};
      if (n == 2 && fds[1].revents != 0) drain_stderr(slot);
      if (fds[0].revents != 0)
        return {read_frame(slot.proc.out, payload, cfg_.max_message_bytes), false};
    }
  }

  // Reads whatever stderr holds now; closes it at EOF.
  void drain_stderr(Slot& slot) {
    char buf[4096];
    while (slot.proc.err >= 0) {
      ssize_t r = ::read(slot.proc.err, buf, sizeof buf);
      if (r > 0) {
        slot.tail.append(buf, static_cast<size_t>(r));
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) close_fd(slot.proc.err);
      return;  // EAGAIN: nothing more for now
    }
  }

  // Ends the worker: closing stdin asks it to exit (graceful waits the grace period for that),
  // then SIGKILL to its process group and reap. Returns how the process ended.
  std::string terminate(Slot& slot, bool graceful) {
    Process& p = slot.proc;
    close_fd(p.in);
    std::string how;
    if (p.pid > 0) {
      if (graceful) has_exited(p.pid, cfg_.shutdown_grace);
      ::kill(-p.pid, SIGKILL);
      int status = 0;
      pid_t rc;
      do {
        rc = ::waitpid(p.pid, &status, 0);
      } while (rc < 0 && errno == EINTR);
      if (rc == p.pid) how = describe_exit(status);
      slot.last_pid = p.pid;
    }
    if (p.err >= 0) {
      // The group is dead, so what is in the pipe is all there will be.
      ::fcntl(p.err, F_SETFL, ::fcntl(p.err, F_GETFL) | O_NONBLOCK);
      drain_stderr(slot);
    }
    close_fd(p.out);
    close_fd(p.err);
    p.pid = 0;
    std::lock_guard<std::mutex> lock(mu_);
    slot.live_pid = 0;
    return how;
  }

  void deliver(JobOutcome out) {
    std::lock_guard<std::mutex> lock(mu_);
    outcomes_.push_back(std::move(out));
    outcome_cv_.notify_all();
  }

  JobOutcome unavailable_outcome(uint64_t id) const {
    JobOutcome out;
    out.id = id;
    out.status = JobStatus::Unavailable;
    out.error = "no worker could be started:\n" + unavailable_reasons_;
    return out;
  }

  // --- deadlines ---------------------------------------------------------------------------

  void arm(Slot& slot, milliseconds timeout) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot.armed = true;
      slot.kill_at = Clock::now() + timeout;
      slot.killed = KillReason::None;
    }
    killer_cv_.notify_all();
  }

  KillReason disarm(Slot& slot) {
    std::lock_guard<std::mutex> lock(mu_);
    slot.armed = false;
    return slot.killed;
  }

  // SIGKILLs the process group of any worker past its deadline (or past the shutdown grace),
  // which also unblocks a slot thread stuck in read_frame or write_frame on a half-sent frame.
  void killer_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!killer_exit_) {
      auto now = Clock::now();
      std::optional<Clock::time_point> next;
      for (auto& slot : slots_) {
        if (!slot->armed || slot->live_pid <= 0 || slot->killed != KillReason::None) continue;
        auto at = slot->kill_at;
        KillReason why = KillReason::Deadline;
        if (stopping_ && shutdown_at_ < at) at = shutdown_at_, why = KillReason::Shutdown;
        if (at <= now) {
          ::kill(-slot->live_pid, SIGKILL);
          slot->killed = why;
        } else if (!next || at < *next) {
          next = at;
        }
      }
      if (next)
        killer_cv_.wait_until(lock, *next);
      else
        killer_cv_.wait(lock);
    }
  }

  WorkerPoolConfig cfg_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::thread killer_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, outcome_cv_, killer_cv_;
  std::deque<Job> queue_;
  std::deque<JobOutcome> outcomes_;
  std::unordered_set<uint64_t> outstanding_;
  size_t available_ = 0;
  std::string unavailable_reasons_;
  bool stopping_ = false;
  bool killer_exit_ = false;
  Clock::time_point shutdown_at_;
};

WorkerPool::WorkerPool(WorkerPoolConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

WorkerPool::~WorkerPool() = default;

void WorkerPool::submit(Job job) { impl_->submit(std::move(job)); }

JobOutcome WorkerPool::next_outcome() { return impl_->next_outcome(); }

std::vector<JobOutcome> WorkerPool::run_all(std::vector<Job> jobs) {
  if (!impl_->nothing_outstanding())
    throw std::logic_error("worker pool: run_all with other jobs outstanding");
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!index.emplace(jobs[i].id, i).second)
      throw std::invalid_argument("worker pool: duplicate job id " + std::to_string(jobs[i].id));
  for (auto& job : jobs) submit(std::move(job));
  std::vector<JobOutcome> outcomes(index.size());
  for (size_t n = 0; n < index.size(); ++n) {
    JobOutcome out = next_outcome();
    outcomes[index.at(out.id)] = std::move(out);
  }
  return outcomes;
}

std::vector<pid_t> WorkerPool::worker_pids() const { return impl_->pids(); }

size_t WorkerPool::available_workers() const { return impl_->available(); }

// --- the worker side ------------------------------------------------------------------------

int serve_worker(int in_fd, int out_fd, std::function<std::string(const std::string&)> handler,
                 uint64_t max_request_bytes) {
  // If the engine is killed outright, its workers must not linger holding GPUs mid-job. The
  // signal follows the spawning thread, which in the pool outlives its worker.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (const char* supervisor = std::getenv(kSupervisorEnv))
    if (std::to_string(::getppid()) != supervisor) return 1;  // died before the prctl
  if (!write_frame(out_fd, kReadyFrame)) return 1;
  std::string request;
  for (;;) {
    FrameStatus status = read_frame(in_fd, request, max_request_bytes);
    if (status == FrameStatus::Eof) return 0;
    if (status != FrameStatus::Ok) return 1;
    if (!write_frame(out_fd, handler(request))) return 1;
  }
}

int serve_worker_on_stdio(std::function<std::string(const std::string&)> handler) {
  int frames = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (frames < 0 || ::dup2(2, 1) < 0) return 1;
  int rc = serve_worker(0, frames, std::move(handler));
  ::close(frames);
  return rc;
}

}  // namespace kevo
