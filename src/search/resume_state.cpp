// The resume state's binary form: "kevo-resume 1\n", then little-endian fields in the order
// save_resume_state writes them; strings and lists carry their lengths. Doubles keep their bits.
#include "search/resume_state.h"

#include <algorithm>

#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "search/feedback.h"

namespace kevo::search {

namespace {

constexpr const char* kMagic = "kevo-resume 1\n";

class Out {
 public:
  template <class T>
  void num(T v) {
    static_assert(std::is_arithmetic_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    s_.append(b, sizeof(T));
  }
  void str(const std::string& v) {
    num<uint64_t>(v.size());
    s_ += v;
  }
  void parent(const policy::Parent& p) {
    num<int64_t>(p.variant);
    str(p.genome.space);
    num<uint64_t>(p.genome.values.size());
    for (int64_t x : p.genome.values) num<int64_t>(x);
    num<double>(p.fitness);
    num<double>(p.floor_fraction);
    num<int32_t>(p.registers);
    num<int32_t>(p.shared_bytes);
    num<int32_t>(p.spill_bytes);
    num<double>(p.occupancy);
    str(p.source);
    str(p.report);
  }
  void elite(const Elite& e) {
    parent(e.parent);
    str(e.cell);
    num<int32_t>(e.generation);
  }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class In {
 public:
  explicit In(const std::string& s) : s_(s) {}
  template <class T>
  T num() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, s_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string str() {
    const uint64_t n = num<uint64_t>();
    need(n);
    std::string v = s_.substr(at_, static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return v;
  }
  uint64_t count(size_t min_bytes_each) {
    const uint64_t n = num<uint64_t>();
    if (n > (s_.size() - at_) / std::max<size_t>(min_bytes_each, 1)) throw std::runtime_error("a count runs past the end");
    return n;
  }
  policy::Parent parent() {
    policy::Parent p;
    p.variant = num<int64_t>();
    p.genome.space = str();
    for (uint64_t i = 0, n = count(8); i < n; ++i) p.genome.values.push_back(num<int64_t>());
    p.fitness = num<double>();
    p.floor_fraction = num<double>();
    p.registers = num<int32_t>();
    p.shared_bytes = num<int32_t>();
    p.spill_bytes = num<int32_t>();
    p.occupancy = num<double>();
    p.source = str();
    p.report = str();
    return p;
  }
  Elite elite() {
    Elite e;
    e.parent = parent();
    e.cell = str();
    e.generation = num<int32_t>();
    return e;
  }
  bool done() const { return at_ == s_.size(); }
  bool magic(const char* m) {
    const size_t n = std::strlen(m);
    if (s_.compare(0, n, m) != 0) return false;
    at_ = n;
    return true;
  }

 private:
  void need(uint64_t n) const {
    if (n > s_.size() - at_) throw std::runtime_error("it ends early");
  }
  const std::string& s_;
  size_t at_ = 0;
};

void save_run(Out& o, const Run& r, const std::string& policy) {
  o.num<int32_t>(r.id);
  o.num<int64_t>(r.proposed);
  o.num<int64_t>(r.evaluations);
  o.num<int64_t>(r.unmeasured);
  o.num<int64_t>(r.duplicates);
  o.num<double>(r.best);
  o.num<int64_t>(r.best_variant);
  o.num<uint8_t>(r.best_elite ? 1 : 0);
  if (r.best_elite) o.elite(*r.best_elite);
  o.num<uint8_t>(r.done ? 1 : 0);
  o.num<int32_t>(r.idle_generations);
  o.num<uint64_t>(r.islands.size());
  for (const Island& isl : r.islands) {
    o.num<double>(isl.best);
    o.num<int32_t>(isl.stale);
    o.num<uint8_t>(isl.reseed ? 1 : 0);
    o.num<uint64_t>(isl.archive.size());
    for (const auto& [cell, e] : isl.archive.cells()) o.elite(e);
  }
  o.str(policy);
}

void load_run(In& in, Run& r) {
  if (in.num<int32_t>() != r.id) throw std::runtime_error("its runs are not the file's");
  r.proposed = in.num<int64_t>();
  r.evaluations = in.num<int64_t>();
  r.unmeasured = in.num<int64_t>();
  r.duplicates = in.num<int64_t>();
  r.best = in.num<double>();
  r.best_variant = in.num<int64_t>();
  r.best_elite.reset();
  if (in.num<uint8_t>()) r.best_elite = in.elite();
  r.done = in.num<uint8_t>() != 0;
  r.idle_generations = in.num<int32_t>();
  if (in.count(1) != r.islands.size()) throw std::runtime_error("its islands are not the configuration's");
  for (Island& isl : r.islands) {
    isl.best = in.num<double>();
    isl.stale = in.num<int32_t>();
    isl.reseed = in.num<uint8_t>() != 0;
    isl.archive.clear();
    for (uint64_t i = 0, n = in.count(1); i < n; ++i) isl.archive.insert(in.elite());
  }
  const std::string policy = in.str();
  if (!policy.empty()) r.policy->restore(policy);
  outcomes_of_elites(r);
}

}  // namespace

std::string save_resume_state(const SearchState& s, const std::vector<std::string>& policies) {
  Out o;
  std::string magic = kMagic;
  std::string out;
  o.num<int64_t>(s.next_variant);
  o.num<uint64_t>(s.runs.size());
  for (size_t r = 0; r < s.runs.size(); ++r) save_run(o, s.runs[r], policies[r]);
  // The runs' screened-out counts, after them and only where a run screened: the states of campaigns
  // without screening stay byte for byte as they were.
  if (std::any_of(s.runs.begin(), s.runs.end(), [](const Run& r) { return r.screened > 0; }))
    for (const Run& r : s.runs) o.num<int64_t>(r.screened);
  return magic + o.take();
}

void load_resume_state(SearchState& s, const std::string& bytes) {
  In in(bytes);
  try {
    if (!in.magic(kMagic)) throw std::runtime_error("it is not one");
    s.next_variant = in.num<int64_t>();
    if (in.count(1) != s.runs.size()) throw std::runtime_error("its runs are not the file's");
    for (Run& r : s.runs) load_run(in, r);
    for (Run& r : s.runs) r.screened = in.done() ? 0 : in.num<int64_t>();
    if (!in.done()) throw std::runtime_error("bytes follow its end");
  } catch (const std::runtime_error& e) {
    throw InputError(Location{s.path, 0, 0}, "campaign file", std::string("resume state: ") + e.what());
  }
}

}  // namespace kevo::search
