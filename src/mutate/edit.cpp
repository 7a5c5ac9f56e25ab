// Parsing SEARCH/REPLACE replies and applying them: line-based, with rolling hashes over lines so
// that matching stays linear on untrusted text (no std::regex, no backtracking).
#include "mutate/edit.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string_view>

namespace kevo::mutate {
namespace {

constexpr size_t kMaxReply = 256 * 1024;
constexpr size_t kMaxListed = 8;  // ambiguous matches named in an error

enum class Marker { None, Search, Divider, Replace };

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\f\v");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\f\v") - b + 1);
}
std::string_view rtrim(std::string_view s) {
  size_t e = s.find_last_not_of(" \t\r\f\v");
  return e == std::string_view::npos ? std::string_view{} : s.substr(0, e + 1);
}
std::string_view indent_of(std::string_view s) { return s.substr(0, std::min(s.size(), s.find_first_not_of(" \t"))); }

Marker marker(std::string_view line) {
  line = trim(line);
  if (line.empty()) return Marker::None;
  char c = line[0];
  size_t n = line.find_first_not_of(c);
  size_t run = n == std::string_view::npos ? line.size() : n;
  if (run < 5 || run > 9) return Marker::None;
  std::string_view rest = trim(line.substr(run));
  if (c == '<' && rest == "SEARCH") return Marker::Search;
  if (c == '=' && rest.empty()) return Marker::Divider;
  if (c == '>' && rest == "REPLACE") return Marker::Replace;
  return Marker::None;
}

// Lines without their '\n' (a final line without one counts; an empty tail does not).
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Source lines starting a run equal to `needle` under `key`, in order, at most kMaxListed + 1.
template <class Key>
std::vector<size_t> find_runs(const std::vector<std::string_view>& hay, const std::vector<std::string_view>& needle,
                              Key key) {
  const uint64_t kBase = 1000003;
  size_t n = hay.size(), m = needle.size();
  std::vector<size_t> found;
  if (m == 0 || m > n) return found;
  auto h = [&](std::string_view s) { return std::hash<std::string_view>{}(key(s)) * 0x9E3779B97F4A7C15ull + 1; };
  uint64_t target = 0, window = 0, top = 1;
  for (size_t k = 0; k < m; ++k) {
    target = target * kBase + h(needle[k]);
    window = window * kBase + h(hay[k]);
    if (k) top *= kBase;
  }
  for (size_t i = 0;; ++i) {
    if (window == target) {
      size_t k = 0;
      while (k < m && key(hay[i + k]) == key(needle[k])) ++k;
      if (k == m) found.push_back(i);
      if (found.size() > kMaxListed) break;
    }
    if (i + m >= n) break;
    window = (window - h(hay[i]) * top) * kBase + h(hay[i + m]);
  }
  return found;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  a = a.substr(0, 100), b = b.substr(0, 100);  // similarity for a message, not an exact score
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string quoted(std::string_view s) {
  s = trim(s);
  std::string out(s.substr(0, 80));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return "`" + out + (s.size() > 80 ? "...`" : "`");
}

std::string nowhere_message(const std::vector<std::string_view>& source, const std::vector<std::string_view>& search) {
  auto first = std::find_if(search.begin(), search.end(), [](std::string_view s) { return !trim(s).empty(); });
  std::string msg = "SEARCH text matches nowhere in the source";
  if (first == search.end() || source.empty()) return msg;
  size_t best = 0, best_d = SIZE_MAX;
  const std::string_view want = trim(*first).substr(0, 100);
  for (size_t i = 0; i < source.size() && best_d > 0; ++i) {
    std::string_view line = trim(source[i]).substr(0, 100);
    if (std::max(line.size(), want.size()) - std::min(line.size(), want.size()) >= best_d) continue;  // cannot win
    size_t d = edit_distance(want, line);
    if (d < best_d) best = i, best_d = d;
  }
  return msg + "; its first line " + quoted(*first) + " is most like source line " + std::to_string(best + 1) + " " +
         quoted(source[best]);
}

// The replacement for source lines [at, at + search.size()) matched ignoring indentation.
std::vector<std::string> reindent(const std::vector<std::string_view>& source, size_t at,
                                  const std::vector<std::string_view>& search,
                                  const std::vector<std::string_view>& replace) {
  std::map<std::string_view, std::string_view> same_line, same_indent;  // search text/indent -> source's
  std::string_view from, to;  // the first non-blank pair: the offset for new indentation levels
  bool have_offset = false;
  for (size_t k = 0; k < search.size(); ++k) {
    if (trim(search[k]).empty()) continue;
    same_line.emplace(rtrim(search[k]), source[at + k]);
    same_indent.emplace(indent_of(search[k]), indent_of(source[at + k]));
    if (!have_offset) from = indent_of(search[k]), to = indent_of(source[at + k]), have_offset = true;
  }
  std::vector<std::string> out;
  for (std::string_view line : replace) {
    if (auto it = same_line.find(rtrim(line)); it != same_line.end()) {
      out.emplace_back(it->second);
      continue;
    }
    std::string_view ind = indent_of(line), body = line.substr(ind.size());
    std::string new_ind(ind);
    if (auto it = same_indent.find(ind); it != same_indent.end()) {
      new_ind = std::string(it->second);
    } else if (have_offset && ind.substr(0, from.size()) == from) {
      new_ind = std::string(to) + std::string(ind.substr(from.size()));
    } else if (have_offset) {
      size_t less = from.size() - std::min(from.size(), ind.size());
      new_ind = std::string(to.substr(0, to.size() - std::min(to.size(), less)));
    }
    out.push_back(trim(line).empty() ? std::string(line) : new_ind + std::string(body));
  }
  return out;
}

std::string list_lines(const std::vector<size_t>& at) {
  std::string s;
  for (size_t k = 0; k < std::min(at.size(), kMaxListed); ++k) s += (k ? ", " : "") + std::to_string(at[k] + 1);
  return at.size() > kMaxListed ? s + ", ..." : s;
}

}  // namespace

EditError::EditError(int reply_line, const std::string& message) : std::runtime_error(message), reply_line_(reply_line) {}

ParsedReply parse_reply(const std::string& reply) {
  if (reply.size() > kMaxReply)
    throw EditError(1, "reply line 1: the reply is " + std::to_string(reply.size()) + " bytes, over the 256 KiB limit");
  auto fail = [](int line, const std::string& what) {
    throw EditError(line, "reply line " + std::to_string(line) + ": " + what);
  };
  ParsedReply out;
  enum class State { Text, Search, Replace } state = State::Text;
  EditBlock block;
  std::string fence_lang, fence_text;  // the open ``` block, if any
  int fence_line = 0;
  bool in_fence = false, have_code = false, have_plan = false;
  std::vector<std::string_view> lines = split_lines(reply);
  for (size_t i = 0; i < lines.size(); ++i) {
    const int no = static_cast<int>(i) + 1;
    std::string_view line = lines[i];
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string opened = " (block opened on line " + std::to_string(block.line) + ")";
    switch (marker(line)) {
      case Marker::Search:
        if (state != State::Text) fail(no, "SEARCH marker inside another block" + opened);
        block = EditBlock{{}, {}, no};
        state = State::Search;
        continue;
      case Marker::Divider:
        if (state != State::Search) fail(no, state == State::Text ? "======= outside a SEARCH/REPLACE block"
                                                                  : "a second ======= in one block" + opened);
        state = State::Replace;
        continue;
      case Marker::Replace:
        if (state != State::Replace) fail(no, state == State::Text ? "REPLACE marker without a SEARCH marker"
                                                                   : "REPLACE marker before =======" + opened);
        out.blocks.push_back(std::move(block));
        state = State::Text;
        continue;
      case Marker::None:
        break;
    }
    if (state != State::Text) {
      (state == State::Search ? block.search : block.replace).append(line).push_back('\n');
      continue;
    }
    std::string_view t = trim(line);
    if (t.substr(0, 3) == "```") {
      if (!in_fence) {
        in_fence = true, fence_line = no, fence_text.clear(), fence_lang = lower(trim(t.substr(3)));
      } else if (t == "```") {
        in_fence = false;
        bool code = fence_lang == "cuda" || fence_lang == "cpp" || fence_lang == "c++" || fence_lang == "cu";
        if (code && !have_code) out.rewrite = fence_text, have_code = true;
        if (fence_lang == "json" && !have_plan) out.plan = fence_text, have_plan = true;
      }
      continue;
    }
    if (in_fence) fence_text.append(line).push_back('\n');
  }
  if (state == State::Search) fail(block.line, "unterminated block: SEARCH marker without =======");
  if (state == State::Replace) fail(block.line, "unterminated block: no >>>>>>> REPLACE after =======");
  if (!out.blocks.empty()) {
    out.rewrite.clear();
  } else if (!have_code) {
    fail(in_fence ? fence_line : 1, in_fence ? "code block never closed with ```"
                                             : "no SEARCH/REPLACE block and no ```cuda/```cpp code block");
  }
  return out;
}

std::string apply_edits(const std::string& source, const std::vector<EditBlock>& blocks) {
  std::string text = source;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const EditBlock& block = blocks[b];
    const std::string where = "block " + std::to_string(b + 1) + " (reply line " + std::to_string(block.line) + "): ";
    if (block.search.empty()) {
      if (!text.empty() && text.back() != '\n') text.push_back('\n');
      text += block.replace;
      continue;
    }
    std::vector<std::string_view> src = split_lines(text), search = split_lines(block.search),
                                  replace = split_lines(block.replace);
    std::vector<std::string> repl(replace.begin(), replace.end());
    std::vector<size_t> at = find_runs(src, search, [](std::string_view s) { return s; });
    if (at.empty()) {
      at = find_runs(src, search, [](std::string_view s) { return trim(s); });
      if (at.size() == 1) repl = reindent(src, at[0], search, replace);
    }
    if (at.empty()) throw EditError(block.line, where + nowhere_message(src, search));
    if (at.size() > 1)
      throw EditError(block.line, where + "SEARCH text matches " + (at.size() > kMaxListed ? "more than 8" : std::to_string(at.size())) +
                                      " times, at source lines " + list_lines(at) + "; add context to make it unique");
    std::string out;
    for (size_t i = 0; i < at[0]; ++i) out.append(src[i]).push_back('\n');
    for (const std::string& line : repl) out.append(line).push_back('\n');
    for (size_t i = at[0] + search.size(); i < src.size(); ++i) out.append(src[i]).push_back('\n');
    if (!text.empty() && text.back() != '\n' && at[0] + search.size() < src.size()) out.pop_back();
    text = std::move(out);
  }
  return text;
}

}  // namespace kevo::mutate
