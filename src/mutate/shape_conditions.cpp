// A genome's manifest constraints turned into conditions over the task's axes: knobs replaced by
// their values, facts by their expressions, what is left constant folded away.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include "mutate/space.h"

namespace kevo::mutate {

namespace {

// A subexpression as text, its value when constant, and whether it reads a fact without an expression.
struct Term {
  std::string text;
  std::optional<int64_t> value;
  bool pinned = false;
};

Term constant(int64_t v) { return {v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v), v, false}; }

// e with knobs replaced by their values and facts by their parenthesised expressions, constant
// parts folded (so that "kIndex32 * max_elems" with kIndex32 = 0 reads no fact); a fact without an
// expression is added to `pinned` and marks the result.
Term substitute(const AxisExpr& e, const std::map<std::string, int64_t>& knobs,
                const std::map<std::string, std::string>& facts, std::vector<std::string>& pinned) {
  return e.reduce<Term>(
      [](int64_t v) { return constant(v); },
      [&](const std::string& name) -> Term {
        if (auto k = knobs.find(name); k != knobs.end()) return constant(k->second);
        if (auto f = facts.find(name); f != facts.end()) {
          try {
            if (AxisExpr::parse(f->second).names().empty()) return constant(AxisExpr::parse(f->second).eval({}));
          } catch (const std::invalid_argument&) {
          }
          return {"(" + f->second + ")", std::nullopt, false};
        }
        if (std::find(pinned.begin(), pinned.end(), name) == pinned.end()) pinned.push_back(name);
        return {name, std::nullopt, true};
      },
      [](Term v) -> Term {
        if (v.value && *v.value != INT64_MIN) return constant(-*v.value);
        return {"-" + v.text, std::nullopt, v.pinned};
      },
      [](const std::string& op, Term a, Term b) -> Term {
        int64_t r = 0;
        if (a.value && b.value && AxisExpr::apply(op, *a.value, *b.value, &r)) return constant(r);
        if (op == "*" && ((a.value && *a.value == 0) || (b.value && *b.value == 0))) return constant(0);
        if (op == "*" && a.value && *a.value == 1) return b;
        if ((op == "*" || op == "//") && b.value && *b.value == 1) return a;
        if ((op == "+" || op == "-") && b.value && *b.value == 0) return a;
        if (op == "+" && a.value && *a.value == 0) return b;
        return {"(" + a.text + " " + op + " " + b.text + ")", std::nullopt, a.pinned || b.pinned};
      });
}

std::string bare(const std::string& t) {  // the outer parentheses of a whole condition side dropped
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') return t;
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    depth += t[i] == '(' ? 1 : t[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < t.size()) return t;
  }
  return t.substr(1, t.size() - 2);
}

// The conditions of constraint c: one, or none when it is constant (g is legal); with a fact
// that is the largest of several expressions on the left of a <= or <, one per expression.
void add_conditions(const Constraint& c, const DesignSpace& s, const std::map<std::string, int64_t>& knobs,
                    ShapeConditions& out) {
  std::vector<std::map<std::string, std::string>> variants{s.fact_exprs()};
  const auto& lnames = c.lhs.names();
  const auto& rnames = c.rhs.names();
  auto reads = [](const std::vector<std::string>& names, const std::string& f) {
    return std::find(names.begin(), names.end(), f) != names.end();
  };
  auto expand = [&](const std::string& fact, const std::vector<std::string>& alternatives) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& v : variants)
      for (const std::string& alt : alternatives) {
        next.push_back(v);
        next.back()[fact] = alt;
      }
    variants = std::move(next);
  };
  for (const auto& [fact, alternatives] : s.fact_maxima())
    if (reads(lnames, fact) && !reads(rnames, fact) && (c.op == "<=" || c.op == "<")) expand(fact, alternatives);
  for (const auto& [fact, alternatives] : s.fact_gcds()) {
    const std::string lhs = c.lhs.text();
    const size_t at = lhs.find_first_not_of(' ');
    const bool divides = c.op == "==" && c.rhs.text().find_first_not_of(" 0") == std::string::npos &&
                         lhs.compare(at, fact.size(), fact) == 0 &&
                         lhs.find_first_not_of(' ', at + fact.size()) != std::string::npos &&
                         lhs[lhs.find_first_not_of(' ', at + fact.size())] == '%' && !reads(rnames, fact);
    if (divides) expand(fact, alternatives);
  }
  for (const auto& facts : variants) {
    std::vector<std::string> pinned;
    Term l = substitute(c.lhs, knobs, facts, pinned), r = substitute(c.rhs, knobs, facts, pinned);
    if (l.value && r.value) continue;  // constant: holds, g being legal
    if (l.pinned || r.pinned) {
      for (const std::string& p : pinned)
        if (std::find(out.pinned.begin(), out.pinned.end(), p) == out.pinned.end()) out.pinned.push_back(p);
      continue;
    }
    ShapeCondition cond{bare(l.text), c.op, bare(r.text), c.why};
    bool seen = false;
    for (const ShapeCondition& o : out.conditions) seen = seen || (o.text() == cond.text());
    if (!seen) out.conditions.push_back(std::move(cond));
  }
}

}  // namespace

ShapeConditions shape_conditions(const DesignSpace& s, const Genome& g) {
  ShapeConditions out;
  const std::map<std::string, int64_t> knobs = s.values(g);
  for (const Constraint& c : s.manifest().constraints) add_conditions(c, s, knobs, out);
  for (const ShapeCondition& a : s.assumptions()) out.conditions.push_back(a);
  return out;
}

}  // namespace kevo::mutate
