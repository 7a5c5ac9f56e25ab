// Where an evaluation's wall time goes, phase by phase (the screen, the trials, the timed runs, the
// references drawn, ...): each phase is charged its own time only, so a reference drawn inside a
// trial counts for the references, not for the trial, and the phases add up to the whole.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace kevo::eval {

class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PhaseClock(std::map<std::string, double>& seconds) : seconds_(seconds) {}

  // The time from its construction to its destruction goes to `name`, less the nested scopes'.
  class Scope {
   public:
    Scope(PhaseClock& clock, const char* name) : clock_(clock), outer_(clock.current_) { clock_.switch_to(name); }
    ~Scope() { clock_.switch_to(outer_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseClock& clock_;
    const char* outer_;
  };

  Scope enter(const char* name) { return Scope(*this, name); }

 private:
  void switch_to(const char* name) {
    const Clock::time_point now = Clock::now();
    if (current_) seconds_[current_] += std::chrono::duration<double>(now - mark_).count();
    current_ = name;
    mark_ = now;
  }

  std::map<std::string, double>& seconds_;
  const char* current_ = nullptr;
  Clock::time_point mark_ = Clock::now();
};

}  // namespace kevo::eval
