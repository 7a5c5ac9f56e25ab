// Design spaces: how a task's op graph maps onto a template family, the knob domains, and the
// deterministic rendering of a genome into a candidate (device source + launch plan).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "core/shape_condition.h"
#include "core/task.h"
#include "mutate/manifest.h"

namespace kevo::mutate {

// A point of a space: one value per knob, in the space's knob order.
struct Genome {
  std::string space;
  std::vector<int64_t> values;
  std::string to_string() const;  // "reduce_rows/softmax{kThreads=256,kVec=4}"
  bool operator==(const Genome& o) const { return space == o.space && values == o.values; }
};

// Named sizes of one workload that constraints may use ("n", "rows", "row", "inner"), plus the
// device limits every space gets ("max_threads", "max_shared_bytes", "max_registers": 32-bit
// registers of an SM, which one block may use all of).
using Facts = std::map<std::string, int64_t>;

class DesignSpace {
 public:
  virtual ~DesignSpace() = default;

  const std::string& id() const { return id_; }          // unique within the task: "reduce_rows/softmax"
  const std::string& description() const { return description_; }  // how the graph maps, one line
  const Manifest& manifest() const { return *manifest_; }
  const std::vector<Knob>& knobs() const { return manifest_->knobs; }
  const std::vector<Facts>& facts() const { return facts_; }  // one per workload

  // Every constraint of the manifest for every workload, and, for a space lowered for one
  // architecture, every knob value legal there; the first that fails in `why`.
  bool legal(const Genome& g, std::string* why = nullptr) const;
  // The architecture the space was lowered for ("sm_100a"), or "" when it takes every value.
  const std::string& arch() const { return arch_; }
  void restrict_to(const std::string& arch);
  uint64_t size() const;  // product of the knob domains (legal or not)
  // A legal genome drawn uniformly: by rejection, or, where rejection finds none in 10,000 draws
  // and the space is small enough to walk, from the list of its legal genomes (walked once and
  // kept: a library space can hold 15 legal genomes of 108,000). Throws std::runtime_error when
  // the space has none.
  virtual Genome random_genome(std::mt19937_64& rng) const;
  // How many genomes are legal: the legal share of `draws` uniform draws (a fixed seed) times
  // size(). A space joined from parts estimates better from its parts' own draws.
  virtual double legal_estimate(int draws) const;
  // The knob values by name.
  std::map<std::string, int64_t> values(const Genome& g) const;
  // The template's enumerator for an enum knob's value in g ("kevo::Cache::Registers").
  std::string enumerator(const Genome& g, const std::string& knob) const;

  // Facts as expressions over the task's axes where the family knows one ("n" -> "B * D"; a flag
  // of the lowering -> its literal); device facts are literals. A fact without one holds only for
  // the workloads it was computed on (export pins it there).
  const std::map<std::string, std::string>& fact_exprs() const { return fact_exprs_; }
  void express(const std::string& fact, const std::string& expr) { fact_exprs_[fact] = expr; }
  // A fact that is the largest of several expressions (the generic family's "max_elems"): a
  // constraint reading it on the left of <= or < (non-decreasing in it, as the manifests write
  // them) becomes one condition per expression.
  const std::map<std::string, std::vector<std::string>>& fact_maxima() const { return fact_maxima_; }
  void express_max(const std::string& fact, std::vector<std::string> exprs) { fact_maxima_[fact] = std::move(exprs); }
  // A fact that is the gcd of several expressions (the alignment of every trailing input): a
  // constraint "fact % X == 0" becomes one condition per expression.
  const std::map<std::string, std::vector<std::string>>& fact_gcds() const { return fact_gcds_; }
  void express_gcd(const std::string& fact, std::vector<std::string> exprs) { fact_gcds_[fact] = std::move(exprs); }
  // Conditions on the axes that the family's lowering assumed beyond the manifest's constraints
  // (gemm's 16-byte loads along K: "K % 4 == 0"): an exported header checks them too.
  const std::vector<ShapeCondition>& assumptions() const { return assumptions_; }
  void assume(ShapeCondition c) { assumptions_.push_back(std::move(c)); }

  // The candidate as a .cu text: generated source (template family pasted in, fused functors,
  // one instantiation per kernel) with its kevo-plan block. Deterministic; the genome must be legal.
  virtual std::string render(const Genome& g) const = 0;

 protected:
  // The family's manifest.json, or another manifest of the family (manifest_at("normalize/columns.json")).
  DesignSpace(std::string id, std::string description, const std::string& family, std::vector<Facts> facts);
  DesignSpace(std::string id, std::string description, const Manifest& manifest, std::vector<Facts> facts);
  std::string id_, description_;
  const Manifest* const manifest_;
  std::vector<Facts> facts_;
  std::string arch_;
  std::map<std::string, std::string> fact_exprs_;
  std::map<std::string, std::vector<std::string>> fact_maxima_, fact_gcds_;
  std::vector<ShapeCondition> assumptions_;

 private:
  const std::vector<Genome>& walked_legal() const;  // legal_genomes(*this), walked on first use
  mutable std::mutex walked_mutex_;
  mutable std::unique_ptr<const std::vector<Genome>> walked_;
};

// What genome g of space s is correct under, over the task's axes: every manifest constraint with
// the knobs' values and the facts' expressions put in (those that come out constant dropped: g is
// legal), then the family's assumptions. Facts a constraint reads without an expression are listed
// as pinned (shape_conditions.cpp).
ShapeConditions shape_conditions(const DesignSpace& s, const Genome& g);

// The legal genomes of `s` (for its architecture), counted by walking it, stopping once `enough`
// are found; -1 when the space has more than `walk_limit` genomes (legal_count.cpp).
constexpr uint64_t kWalkLimit = 200000;
int64_t count_legal(const DesignSpace& s, int64_t enough = INT64_MAX, uint64_t walk_limit = kWalkLimit);
// Every legal genome of `s`, walked (callers keep to spaces of at most kWalkLimit genomes).
std::vector<Genome> legal_genomes(const DesignSpace& s);
// s.legal_estimate(draws): the legal fraction of `draws` uniform draws times the space's size (for
// most spaces).
double estimate_legal(const DesignSpace& s, int draws);
// Whether `spaces` hold at least n legal genomes between them (walked, or estimated from 2,000
// draws where a space is too large to walk).
bool hold_legal_genomes(const std::vector<std::unique_ptr<DesignSpace>>& spaces, int64_t n);

// Device limits the constraints check against (those of the largest target, an H100/H200/B200 SM).
Facts device_facts();

}  // namespace kevo::mutate
