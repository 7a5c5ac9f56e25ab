// A template family's manifest: its knobs (template parameters) with their domains, and the
// constraints between knobs and against the problem and the device. The manifest, not the
// compiler, rejects an invalid knob combination.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/axis_expr.h"
#include "core/template_library.h"

namespace kevo::mutate {

struct Knob {
  std::string name;              // the template parameter: "kVec"
  std::vector<int64_t> values;   // its domain, in order
  std::string doc;
  // A knob whose values name choices is an enum class of the template ("Cache"), one enumerator
  // per value ("Global", "Shared", "Registers"); empty for a number. Genomes keep the integers.
  std::string enum_type;
  std::vector<std::string> names;
  // Values legal only on some architectures ("archs": {"1": ["sm_90a"]} in the manifest: wgmma
  // is sm_90a's); a value not listed is legal on every architecture.
  std::map<int64_t, std::vector<std::string>> archs;
  // The value the template had before the knob existed ("default" in the manifest): a genome
  // recorded without the knob reads as one with this value (store/genome_names.h). None where the
  // knob has been there from the start.
  std::optional<int64_t> default_value;
  // Whether value v may run on `arch` ("sm_100a").
  bool legal_on(int64_t v, const std::string& arch) const;

  // The C++ enumerator of value v ("kevo::Cache::Shared"); throws std::out_of_range when the knob
  // is a number or v is outside its domain.
  std::string enumerator(int64_t v) const;
};

// lhs OP rhs over knob values and the space's facts ("row", "n", "max_shared_bytes", ...).
struct Constraint {
  AxisExpr lhs, rhs;
  std::string op;   // "<=", "<", ">=", ">", "==", "!="
  std::string why;  // said when it fails
  bool holds(const std::map<std::string, int64_t>& values) const;
};

struct Manifest {
  std::string family;  // "elementwise"
  std::string source;  // the template file, relative to templates/: "elementwise/elementwise.cuh"
  std::string doc;
  std::vector<Knob> knobs;
  std::vector<Constraint> constraints;

  int knob(const std::string& name) const;  // index, or -1
};

// Parses a manifest. Throws InputError (FILE:LINE:COL: field: message) when malformed.
Manifest parse_manifest(const std::string& text, const std::string& file);

// Every file under templates/, embedded at build time: relative path -> text.
inline const std::map<std::string, std::string>& embedded_templates() { return templates::files(); }
// Hex SHA-256 over every embedded template file (path and text, in path order): renders of a
// genome are the same exactly when this is.
const std::string& templates_hash();
// The text of one file ("elementwise/elementwise.cuh"); throws std::out_of_range naming it.
const std::string& template_text(const std::string& path);
// A manifest under templates/ by its path ("normalize/columns.json"), parsed once: a family's
// second kernel may have its own knobs beside the family's manifest.json.
const Manifest& manifest_at(const std::string& path);
// The manifest of a family ("elementwise" -> templates/elementwise/manifest.json).
const Manifest& family_manifest(const std::string& family);

}  // namespace kevo::mutate
