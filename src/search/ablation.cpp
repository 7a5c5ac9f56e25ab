// Ablation statistics from a campaign file's generation records. A run's best-so-far curve is a
// step function of evaluations; seeds are resampled with replacement (the same resamples for every
// point of a curve) and the 2.5th and 97.5th percentiles of the resampled means bound the band.
#include "search/ablation.h"

#include <Eigen/Dense>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "search/campaign.h"

namespace kevo::search {

namespace {

// Resample weights: row r counts how often each of n seeds was drawn in resample r, over n.
Eigen::MatrixXd resample_weights(int n, int resamples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, n - 1);
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(resamples, n);
  for (int r = 0; r < resamples; ++r)
    for (int k = 0; k < n; ++k) w(r, pick(rng)) += 1.0 / n;
  return w;
}

double percentile(std::vector<double>& v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// One run's curve: (evaluations, best so far) per generation.
std::vector<store::CurvePoint> curve_of(const store::CampaignContents& c, int32_t run) {
  std::vector<const store::GenerationRecord*> gens;
  for (const auto& g : c.generations)
    if (g.run == run) gens.push_back(&g);
  std::sort(gens.begin(), gens.end(), [](auto* a, auto* b) { return a->generation < b->generation; });
  std::vector<store::CurvePoint> out;
  for (const auto* g : gens) out.push_back({g->evaluations, g->best_fitness});
  return out;
}

double value_at(const std::vector<store::CurvePoint>& curve, int64_t x) {
  double v = 0;
  for (const auto& p : curve) {
    if (p.evaluations > x) break;
    v = p.best;
  }
  return v;
}

int64_t budget_of(const store::RunRecord& r, const std::vector<store::CurvePoint>& curve) {
  try {
    return config_from_json(r.config).budget_evals;
  } catch (const std::exception&) {
    return curve.empty() ? 0 : curve.back().evaluations;
  }
}

}  // namespace

bool is_ablation(const store::CampaignContents& c) {
  std::set<std::string> tasks;
  for (const auto& r : c.runs)
    if (!tasks.insert(r.task).second) return true;
  return false;
}

int64_t evaluations_to_reach(const std::vector<store::CurvePoint>& curve, double target, int64_t budget) {
  for (const auto& p : curve)
    if (p.best > 0 && p.best >= target) return p.evaluations;
  return budget;
}

std::vector<Interval> bootstrap_curve(const std::vector<std::vector<double>>& per_seed, int resamples, uint64_t seed) {
  if (per_seed.empty()) return {};
  const int n = static_cast<int>(per_seed.size());
  const int points = static_cast<int>(per_seed.front().size());
  Eigen::MatrixXd y(n, points);
  for (int s = 0; s < n; ++s)
    for (int j = 0; j < points; ++j) y(s, j) = per_seed[static_cast<size_t>(s)][static_cast<size_t>(j)];
  const Eigen::MatrixXd means = resample_weights(n, std::max(resamples, 1), seed) * y;  // resamples x points
  std::vector<Interval> out(static_cast<size_t>(points));
  std::vector<double> column(static_cast<size_t>(means.rows()));
  for (int j = 0; j < points; ++j) {
    Interval& iv = out[static_cast<size_t>(j)];
    iv.mean = y.col(j).mean();
    for (Eigen::Index r = 0; r < means.rows(); ++r) column[static_cast<size_t>(r)] = means(r, j);
    iv.lower = percentile(column, 0.025);
    iv.upper = percentile(column, 0.975);
  }
  return out;
}

Interval bootstrap_mean(const std::vector<double>& values, int resamples, uint64_t seed) {
  std::vector<std::vector<double>> rows;
  for (double v : values) rows.push_back({v});
  std::vector<Interval> one = bootstrap_curve(rows, resamples, seed);
  return one.empty() ? Interval{} : one.front();
}

Ablation ablation_stats(const store::CampaignContents& c, int resamples, uint64_t seed) {
  Ablation out;
  for (const store::TaskRecord& t : c.tasks) {
    // The task's runs grouped by arm (in run order), with their curves.
    std::vector<std::string> arm_order;
    std::map<std::string, std::vector<const store::RunRecord*>> runs_of;
    std::map<int32_t, std::vector<store::CurvePoint>> curve;
    std::set<int64_t> grid;
    double best_any = 0;
    for (const auto& r : c.runs) {
      if (r.task != t.name) continue;
      if (!runs_of.count(r.arm)) arm_order.push_back(r.arm);
      runs_of[r.arm].push_back(&r);
      curve[r.id] = curve_of(c, r.id);
      for (const auto& p : curve[r.id]) {
        grid.insert(p.evaluations);
        best_any = std::max(best_any, p.best);
      }
    }
    const double target = 0.95 * best_any;
    // Per arm and seed: evaluations to the target and final fitness, for the pairing below.
    std::map<std::string, std::map<uint64_t, std::pair<double, double>>> per_seed;
    for (const std::string& arm : arm_order) {
      ArmStats a;
      a.task = t.name;
      a.arm = arm;
      a.grid.assign(grid.begin(), grid.end());
      a.target = target;
      std::vector<std::vector<double>> rows;
      std::vector<double> finals, evals;
      for (const store::RunRecord* r : runs_of[arm]) {
        const auto& cv = curve[r->id];
        a.seeds.push_back(r->seed);
        a.budget = std::max(a.budget, budget_of(*r, cv));
        std::vector<double> row;
        for (int64_t x : a.grid) row.push_back(value_at(cv, x));
        rows.push_back(std::move(row));
        const double final_best = cv.empty() ? 0 : cv.back().best;
        const int64_t reach = evaluations_to_reach(cv, target, -1);
        if (reach < 0) a.not_reached++;
        finals.push_back(final_best);
        evals.push_back(static_cast<double>(reach < 0 ? budget_of(*r, cv) : reach));
        per_seed[arm][r->seed] = {evals.back(), final_best};
      }
      a.curve = bootstrap_curve(rows, resamples, seed);
      a.final_fitness = bootstrap_mean(finals, resamples, seed);
      a.evals_to_target = bootstrap_mean(evals, resamples, seed);
      out.arms.push_back(std::move(a));
    }
    if (!per_seed.count("random")) continue;
    for (const std::string& arm : arm_order) {
      if (arm == "random") continue;
      PairedComparison p;
      p.task = t.name;
      p.arm = arm;
      std::vector<double> de, df;
      for (const auto& [s, mine] : per_seed[arm]) {
        auto base = per_seed["random"].find(s);
        if (base == per_seed["random"].end()) continue;
        de.push_back(mine.first - base->second.first);
        df.push_back(mine.second - base->second.second);
        if (de.back() < 0) p.wins++;
        else if (de.back() == 0) p.ties++;
        else p.losses++;
      }
      p.seeds = static_cast<int>(de.size());
      if (p.seeds == 0) continue;
      p.evals_to_target_diff = bootstrap_mean(de, resamples, seed);
      p.final_fitness_diff = bootstrap_mean(df, resamples, seed);
      out.paired.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace kevo::search
