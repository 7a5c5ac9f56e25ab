// The DesignSpace base (legality, sampling) and lower(): every family's lowering in turn.
#include "mutate/space.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>


namespace kevo::mutate {

std::string Genome::to_string() const {
  std::ostringstream s;
  s << space << "{";
  for (size_t i = 0; i < values.size(); ++i) s << (i ? "," : "") << values[i];
  s << "}";
  return s.str();
}

DesignSpace::DesignSpace(std::string id, std::string description, const std::string& family, std::vector<Facts> facts)
    : DesignSpace(std::move(id), std::move(description), family_manifest(family), std::move(facts)) {}

DesignSpace::DesignSpace(std::string id, std::string description, const Manifest& manifest, std::vector<Facts> facts)
    : id_(std::move(id)), description_(std::move(description)), manifest_(&manifest), facts_(std::move(facts)) {
  Facts device = device_facts();
  for (Facts& f : facts_) f.insert(device.begin(), device.end());
  for (const auto& [name, value] : device) fact_exprs_[name] = std::to_string(value);
}

std::map<std::string, int64_t> DesignSpace::values(const Genome& g) const {
  std::map<std::string, int64_t> v;
  for (size_t i = 0; i < knobs().size() && i < g.values.size(); ++i) v[knobs()[i].name] = g.values[i];
  return v;
}

std::string DesignSpace::enumerator(const Genome& g, const std::string& knob) const {
  const int k = manifest().knob(knob);
  if (k < 0 || static_cast<size_t>(k) >= g.values.size()) throw std::out_of_range(id_ + " has no knob " + knob);
  return knobs()[static_cast<size_t>(k)].enumerator(g.values[static_cast<size_t>(k)]);
}

bool DesignSpace::legal(const Genome& g, std::string* why) const {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (g.space != id_) return fail("genome of space '" + g.space + "', not '" + id_ + "'");
  if (g.values.size() != knobs().size()) return fail("wrong number of knob values");
  for (size_t i = 0; i < knobs().size(); ++i) {
    const auto& dom = knobs()[i].values;
    if (std::find(dom.begin(), dom.end(), g.values[i]) == dom.end())
      return fail(knobs()[i].name + "=" + std::to_string(g.values[i]) + " is outside its domain");
    if (!arch_.empty() && !knobs()[i].legal_on(g.values[i], arch_))
      return fail(knobs()[i].name + "=" + std::to_string(g.values[i]) + " is not legal on " + arch_);
  }
  std::map<std::string, int64_t> v = values(g);
  for (size_t w = 0; w < facts_.size(); ++w) {
    std::map<std::string, int64_t> all = facts_[w];
    all.insert(v.begin(), v.end());
    for (const Constraint& c : manifest().constraints) {
      bool ok = false;
      try {
        ok = c.holds(all);
      } catch (const std::invalid_argument& e) {
        return fail(std::string("constraint '") + c.lhs.text() + " " + c.op + " " + c.rhs.text() + "': " + e.what());
      }
      if (!ok)
        return fail(c.why + " (" + c.lhs.text() + " " + c.op + " " + c.rhs.text() + ", workload " + std::to_string(w) + ")");
    }
  }
  return true;
}

uint64_t DesignSpace::size() const {
  uint64_t n = 1;
  for (const Knob& k : knobs()) n *= k.values.size();
  return n;
}

Genome DesignSpace::random_genome(std::mt19937_64& rng) const {
  constexpr int kDraws = 10000, kDrawsUnwalkable = 100000;
  const bool walkable = size() <= kWalkLimit;
  Genome g{id_, std::vector<int64_t>(knobs().size())};
  for (int attempt = 0; attempt < (walkable ? kDraws : kDrawsUnwalkable); ++attempt) {
    for (size_t i = 0; i < knobs().size(); ++i) {
      const auto& dom = knobs()[i].values;
      g.values[i] = dom[std::uniform_int_distribution<size_t>(0, dom.size() - 1)(rng)];
    }
    if (legal(g)) return g;
  }
  if (walkable) {
    const std::vector<Genome>& all = walked_legal();
    if (!all.empty()) return all[std::uniform_int_distribution<size_t>(0, all.size() - 1)(rng)];
    throw std::runtime_error("space " + id_ + " has no legal genome (all " + std::to_string(size()) + " walked)");
  }
  throw std::runtime_error("space " + id_ + " has no legal genome in " + std::to_string(kDrawsUnwalkable) + " draws");
}

void DesignSpace::restrict_to(const std::string& arch) {
  std::lock_guard<std::mutex> lock(walked_mutex_);
  arch_ = arch;
  walked_.reset();  // legality changed
}

const std::vector<Genome>& DesignSpace::walked_legal() const {
  std::lock_guard<std::mutex> lock(walked_mutex_);
  if (!walked_) walked_ = std::make_unique<const std::vector<Genome>>(legal_genomes(*this));
  return *walked_;
}

Facts device_facts() {
  return {{"max_threads", 1024}, {"max_shared_bytes", 232448}, {"max_registers", 65536}, {"warp", 32}};
}

}  // namespace kevo::mutate
