// Manifest parsing with positions, constraint evaluation, and access to the embedded templates.
#include "mutate/manifest.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <stdexcept>

#include "core/json_doc.h"
#include "core/sha256.h"
#include "core/shape_condition.h"

namespace kevo::mutate {

bool Constraint::holds(const std::map<std::string, int64_t>& values) const {
  return compare(lhs.eval(values), op, rhs.eval(values));
}

std::string Knob::enumerator(int64_t v) const {
  auto it = std::find(values.begin(), values.end(), v);
  if (enum_type.empty() || it == values.end())
    throw std::out_of_range("knob " + name + " has no enumerator for " + std::to_string(v));
  return "kevo::" + enum_type + "::" + names[static_cast<size_t>(it - values.begin())];
}

bool Knob::legal_on(int64_t v, const std::string& arch) const {
  auto it = archs.find(v);
  return it == archs.end() || std::find(it->second.begin(), it->second.end(), arch) != it->second.end();
}

int Manifest::knob(const std::string& name) const {
  for (size_t i = 0; i < knobs.size(); ++i)
    if (knobs[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// "enum" names the template's enum class and "names" its enumerators, one per value: both or
// neither, so that a rendered candidate can spell every value of the knob as a word.
void parse_enumerators(const Doc& doc, const json& k, const Path& p, Knob& knob) {
  if (knob.enum_type.empty() != !k.contains("names"))
    doc.fail(p, "a knob of choices has both 'enum' (the enum class) and 'names' (its enumerators)");
  if (knob.enum_type.empty()) return;
  if (!is_identifier(knob.enum_type)) doc.fail(p.key("enum"), "must be a C++ identifier");
  const json& names = k.at("names");
  if (!names.is_array() || names.size() != knob.values.size())
    doc.fail(p.key("names"), "one enumerator per value (" + std::to_string(knob.values.size()) + ")");
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string() || !is_identifier(names[i].get<std::string>()))
      doc.fail(p.key("names").index(i), "an enumerator is a C++ identifier");
    knob.names.push_back(names[i].get<std::string>());
  }
}

// "archs": {"VALUE": ["sm_90a", ...]}: the architectures a value of the knob is legal on.
void parse_archs(const Doc& doc, const json& k, const Path& p, Knob& knob) {
  if (!k.contains("archs")) return;
  const json& a = k.at("archs");
  if (!a.is_object()) doc.fail(p.key("archs"), "maps a knob value to the architectures it is legal on");
  for (const auto& [value, list] : a.items()) {
    const Path at = p.key("archs").key(value);
    int64_t v = 0;
    size_t used = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || std::find(knob.values.begin(), knob.values.end(), v) == knob.values.end())
      doc.fail(at, "a key is one of the knob's values");
    if (!list.is_array() || list.empty()) doc.fail(at, "a non-empty list of architectures");
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) doc.fail(at.index(i), "an architecture is a string (\"sm_90a\")");
      knob.archs[v].push_back(list[i].get<std::string>());
    }
  }
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& file) {
  Doc doc(file, text);
  json root = doc.parse();
  Path top;
  if (!root.is_object()) doc.fail(top, "a manifest is a JSON object");
  Manifest m;
  auto string_at = [&](const json& obj, const Path& p, const char* key, bool required) {
    if (!obj.contains(key)) {
      if (required) doc.fail(p, std::string("missing '") + key + "'");
      return std::string();
    }
    if (!obj.at(key).is_string()) doc.fail(p.key(key), "must be a string");
    return obj.at(key).get<std::string>();
  };
  m.family = string_at(root, top, "family", true);
  m.source = string_at(root, top, "source", true);
  m.doc = string_at(root, top, "doc", false);
  if (!root.contains("knobs") || !root.at("knobs").is_object() || root.at("knobs").empty())
    doc.fail(top.key("knobs"), "must be a non-empty object of knob name -> {\"values\": [...]}");
  for (const auto& [name, k] : root.at("knobs").items()) {
    Path p = top.key("knobs").key(name);
    if (!k.is_object() || !k.contains("values") || !k.at("values").is_array() || k.at("values").empty())
      doc.fail(p, "a knob needs a non-empty 'values' list");
    Knob knob{name, {}, string_at(k, p, "doc", false), string_at(k, p, "enum", false), {}, {}, {}};
    for (size_t i = 0; i < k.at("values").size(); ++i) {
      const json& v = k.at("values")[i];
      if (!v.is_number_integer()) doc.fail(p.key("values").index(i), "knob values are integers");
      knob.values.push_back(v.get<int64_t>());
    }
    parse_enumerators(doc, k, p, knob);
    parse_archs(doc, k, p, knob);
    if (k.contains("default")) {
      const json& d = k.at("default");
      if (!d.is_number_integer() || std::find(knob.values.begin(), knob.values.end(), d.get<int64_t>()) == knob.values.end())
        doc.fail(p.key("default"), "the default is one of the knob's values");
      knob.default_value = d.get<int64_t>();
    }
    m.knobs.push_back(std::move(knob));
  }
  if (root.contains("constraints")) {
    const json& cs = root.at("constraints");
    if (!cs.is_array()) doc.fail(top.key("constraints"), "must be a list");
    for (size_t i = 0; i < cs.size(); ++i) {
      Path p = top.key("constraints").index(i);
      const json& c = cs[i];
      if (!c.is_object()) doc.fail(p, "a constraint is {\"lhs\", \"op\", \"rhs\", \"why\"}");
      Constraint k{AxisExpr::parse("0"), AxisExpr::parse("0"), string_at(c, p, "op", true), string_at(c, p, "why", true)};
      for (const char* side : {"lhs", "rhs"}) {
        std::string e = string_at(c, p, side, true);
        try {
          (std::string(side) == "lhs" ? k.lhs : k.rhs) = AxisExpr::parse(e);
        } catch (const std::invalid_argument& err) {
          doc.fail(p.key(side), err.what());
        }
      }
      if (k.op != "<=" && k.op != "<" && k.op != ">=" && k.op != ">" && k.op != "==" && k.op != "!=")
        doc.fail(p.key("op"), "op is one of <= < >= > == !=");
      m.constraints.push_back(std::move(k));
    }
  }
  return m;
}

const std::string& templates_hash() {
  static const std::string hash = [] {
    std::string all;
    for (const auto& [path, text] : embedded_templates()) {
      all += path;
      all += '\0';
      all += std::to_string(text.size());
      all += '\0';
      all += text;
    }
    return sha256_hex(all);
  }();
  return hash;
}

const std::string& template_text(const std::string& path) {
  auto it = embedded_templates().find(path);
  if (it == embedded_templates().end()) throw std::out_of_range("no template file '" + path + "'");
  return it->second;
}

const Manifest& manifest_at(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, Manifest> parsed;  // node-based: references stay valid
  std::lock_guard<std::mutex> lock(mu);
  auto it = parsed.find(path);
  if (it != parsed.end()) return it->second;
  Manifest m = parse_manifest(template_text(path), "templates/" + path);
  const std::string folder = path.substr(0, path.find('/'));
  if (m.family != folder) throw std::logic_error("templates/" + path + " names family '" + m.family + "'");
  template_text(m.source);  // must exist
  return parsed.emplace(path, std::move(m)).first->second;
}

const Manifest& family_manifest(const std::string& family) { return manifest_at(family + "/manifest.json"); }

}  // namespace kevo::mutate
