// The screening rule.
#include "core/screening.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kevo {

double AdmissionBar::admit(double occupancy) const {
  if (!screen || !(island_best > 0) || band_elite.empty()) return 0;
  const int bands = static_cast<int>(band_elite.size());
  const int band = std::clamp(static_cast<int>(occupancy * bands), 0, bands - 1);  // as search/archive.cpp's cell_of
  const double elite = band_elite[static_cast<size_t>(band)];
  return elite > 0 ? elite : island_best;
}

ScreenVerdict screen_verdict(double fitness, double spread, double admit_fitness) {
  ScreenVerdict v;
  v.margin = std::max(kScreenMarginFloor, kScreenSpreadFactor * (std::isfinite(spread) ? spread : 0.0));
  if (!(admit_fitness > 0) || fitness * (1 + v.margin) >= admit_fitness) return v;
  v.verify = false;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "screened out: its short timing gives a fitness of %.4g, %.1f%% under the %.4g its cell admits from "
                "(given a margin of %.0f%%)",
                fitness, 100 * (1 - fitness / admit_fitness), admit_fitness, 100 * v.margin);
  v.reason = buf;
  return v;
}

}  // namespace kevo
