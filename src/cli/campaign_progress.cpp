// The progress a campaign shows as it runs (a line per generation, a line per task's committed part)
// and the signals that stop it cleanly (SIGINT, SIGTERM).
#include "cli/campaign_progress.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/options.h"

namespace kevo::cli {

std::string duration(double s) {
  if (!(s >= 0) || s > 1e8) return "?";
  long t = std::lround(s);
  if (t >= 3600) return std::to_string(t / 3600) + "h" + fmt("%02.0f", (t % 3600) / 60.0) + "m";
  if (t >= 60) return std::to_string(t / 60) + "m" + fmt("%02.0f", static_cast<double>(t % 60)) + "s";
  return std::to_string(t) + "s";
}

// SIGINT and SIGTERM (Ctrl-C, a deadline's `timeout`) stop a campaign cleanly: the handler notes
// the signal and the default action comes back, so a second one ends the process at once.
namespace {

volatile std::sig_atomic_t stop_signal = 0;

extern "C" void note_stop_signal(int sig) { stop_signal = sig; }

}  // namespace

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = note_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

bool stop_signalled() { return stop_signal != 0; }

// Lines reach a log file as they are printed (stdout is block-buffered when it is not a terminal,
// and a process killed at a deadline would lose what the buffer held).
void line_buffered_stdout() { std::setvbuf(stdout, nullptr, _IOLBF, 0); }

// After a stop: one line, and the process ends at once. What was measured is committed and the file
// is closed; the evaluations still under way are abandoned (their workers die with kevo) rather than
// waited for, since a deadline's `timeout -k` kills soon after its SIGTERM.
[[noreturn]] void exit_stopped(const std::string& cmd, const std::string& path, const search::Progress& last,
                               bool reported) {
  const int sig = stop_signal;
  if (::isatty(STDERR_FILENO)) std::cerr << "\n";
  std::cerr << "kevo " << cmd << ": stopped by " << (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal");
  if (reported)
    std::cerr << " in generation " << last.generation << ": " << path << " holds " << last.evaluations
              << " evaluations, every one measured in time";
  else
    std::cerr << " before anything new was measured: " << path << " is as it was";
  std::cerr << "; `kevo resume " << path << "` continues" << std::endl;
  std::fflush(nullptr);
  std::_Exit(128 + (sig > 0 ? sig : SIGTERM));
}

namespace {

// A run's part of a generation, committed: one line on stdout (a log shows the campaign's progress
// task by task).
void show_part(const search::Progress& p) {
  static const bool tty = ::isatty(STDERR_FILENO);
  if (tty) std::cerr << "\r\033[K" << std::flush;  // the status line goes; the next generation's redraws it
  std::ostringstream line;
  line << "gen " << p.generation << " | " << p.part_task << ": " << p.part_evaluations << " evaluations, ";
  if (p.part_best > 0) line << "best " << fmt("%.3f", p.part_best) << "x";
  else line << "no correct variant yet";
  line << " | campaign " << p.evaluations << "/" << p.budget << " evaluations";
  if (p.commit_seconds > 0) line << " | commit " << fmt("%.0f", 1000 * p.commit_seconds) << " ms";
  line << " | " << duration(p.elapsed_seconds) << " elapsed";
  std::cout << line.str() << std::endl;
}

}  // namespace

// One progress line: rewritten in place on a terminal, one line per generation otherwise; a run's
// part of a generation gets a line of its own on stdout.
void show(const search::Progress& p) {
  if (p.part_run >= 0) return show_part(p);
  static const bool tty = ::isatty(STDERR_FILENO);
  std::ostringstream line;
  line << (p.replaying_file ? "re-deriving gen " : "gen ") << p.generation << " | evals " << p.evaluations << "/"
       << p.budget;
  if (p.screened > 0)
    line << " (" << p.screened << " screened out, " << p.evaluations - p.unmeasured - p.screened << " verified fully)";
  line << " | best";
  for (const auto& [task, best] : p.best) line << " " << task << " " << fmt("%.2f", best) << "x";
  if (p.gpu_busy_fraction > 0) line << " | GPU busy " << fmt("%.0f", 100 * p.gpu_busy_fraction) << "%";
  if (p.llm_requests > 0)
    line << " | llm " << p.llm_requests << " requests, " << p.llm_failed << " failed (" << p.llm_rate_limited
         << " rate-limited, " << p.llm_timeouts << " timeouts), " << p.llm_bad_replies << " unusable replies, "
         << p.llm_tokens << " tokens";
  if (p.commit_seconds > 0) line << " | commit " << fmt("%.0f", 1000 * p.commit_seconds) << " ms";
  line << " | " << duration(p.elapsed_seconds) << " elapsed, ~" << duration(p.seconds_left) << " left";
  if (tty) std::cerr << "\r\033[K" << line.str() << std::flush;
  else std::cerr << line.str() << "\n";
}

}  // namespace kevo::cli
