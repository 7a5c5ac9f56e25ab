// The child a language model's reply makes of a parent's source (used by the llm policy and by
// kevo serve's edit requests).
#pragma once

#include <string>

namespace kevo::mutate {

// The candidate a reply makes of a parent's source: blocks applied (or the rewrite taken), a json
// plan put in the kevo-plan comment. Throws mutate::EditError (one line) when the reply cannot be
// read or applied, std::runtime_error when the child would not be device code only.
std::string child_source(const std::string& parent_source, const std::string& reply);

}  // namespace kevo::mutate
