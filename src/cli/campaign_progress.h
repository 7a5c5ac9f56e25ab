// The progress a campaign shows as it runs and the signals that stop it cleanly (cli only).
#pragma once

#include <string>

#include "search/campaign.h"

namespace kevo::cli {

// "42s", "3m05s", "2h10m"; "?" for a negative or absurd figure.
std::string duration(double seconds);

// SIGINT and SIGTERM (Ctrl-C, a deadline's `timeout`) stop a campaign cleanly: the handler notes
// the signal and the default action comes back, so a second one ends the process at once.
void catch_stop_signals();
bool stop_signalled();

// Lines reach a log file as they are printed (stdout is block-buffered when it is not a terminal).
void line_buffered_stdout();

// After a stop: one line, and the process ends at once with 128 + the signal. `reported`: `last`
// holds the last progress the campaign reported (else nothing new was measured).
[[noreturn]] void exit_stopped(const std::string& cmd, const std::string& path, const search::Progress& last,
                               bool reported);

// One progress line: rewritten in place on a terminal, one line per generation otherwise; a run's
// part of a generation gets a line of its own on stdout.
void show(const search::Progress& p);

}  // namespace kevo::cli
