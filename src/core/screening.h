// The screening rule (docs/evaluation.md#screening): a candidate is first measured cheaply (one
// correctness trial, a short timing) and goes on to the full protocol only where that short timing
// could admit it to its island's archive. The evaluators that measure and the one that replays
// recordings decide by this one rule.
#pragma once

#include <string>
#include <vector>

namespace kevo {

// The least margin a short timing is given: its fitness times (1 + margin) must reach the bar.
inline constexpr double kScreenMarginFloor = 0.05;
// A short timing's spread (p80 - p20 over the median) widens the margin by this factor.
inline constexpr double kScreenSpreadFactor = 2.0;
// What a candidate's fitness must reach to enter its island's archive, known before it is built:
// its cell's elite, or for a cell with none yet the island's best (so that the cells a screened
// campaign fills are filled by candidates that could lead it, not by whatever is merely correct).
// A bar with no island best (an empty island) admits everything: the candidate is verified fully.
struct AdmissionBar {
  bool screen = false;             // false: no screening, the full protocol for every candidate
  double island_best = 0;
  std::vector<double> band_elite;  // per occupancy band of the candidate's space: its elite's fitness, 0 when empty

  // The fitness a candidate of occupancy `occupancy` must reach; 0 where it needs none.
  double admit(double occupancy) const;
};

struct ScreenVerdict {
  bool verify = true;  // go on to the full protocol
  double margin = 0;   // the margin the short timing was given
  std::string reason;  // why not, for the record's error text
};

// The verdict on a screen that estimated `fitness` with a short timing of relative spread `spread`,
// against the bar `admit_fitness` (0: verified fully).
ScreenVerdict screen_verdict(double fitness, double spread, double admit_fitness);

}  // namespace kevo
