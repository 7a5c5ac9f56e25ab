// The HTML report and its inline SVG plots of best-so-far curves, drawn by kevo (no scripts,
// no external resources). Every text is escaped; every number is printed with a fixed format, so
// the same data gives the same bytes.
#include "store/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "core/fitness.h"

namespace kevo::store {

namespace {

// ---- text --------------------------------------------------------------------------------

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length (2..4) of the valid UTF-8 sequence starting at s[i], or 0 when there is none. Code
// points XML does not allow (surrogates, U+FFFE, U+FFFF) count as invalid.
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp, min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
    return 0;
  return n;
}

// Text for HTML and XML, in element content or a quoted attribute. Task names and variant texts
// come from users' files: invalid UTF-8 and the control characters XML forbids become U+FFFD,
// so no byte of theirs can break the page or make an SVG unparseable.
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const size_t n = utf8_length(text, i);
      if (n == 0) {
        out += kReplacement;
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += kReplacement;
        else
          out += c;
    }
    ++i;
  }
  return out;
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// At most `max_chars` code points of `text` (the last one an ellipsis when it is cut).
std::string shorten(const std::string& text, size_t max_chars) {
  size_t chars = 0;
  for (char c : text) chars += !is_continuation(c);
  if (chars <= max_chars) return text;
  size_t cut = 0;
  for (size_t kept = 0; kept < max_chars - 1; ++kept)
    do ++cut; while (cut < text.size() && is_continuation(text[cut]));
  return text.substr(0, cut) + "\xE2\x80\xA6";  // U+2026
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "\xE2\x80\x94";  // U+2014: no figure
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  // "-0.00" reads as a figure that is not there.
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

// A figure that may be unknown (0 means unknown in ReportData).
std::string known(double v, int decimals, const char* unit = "") {
  if (v == 0 || !std::isfinite(v)) return "\xE2\x80\x94";
  return fixed(v, decimals) + unit;
}

// ---- axes --------------------------------------------------------------------------------

// m * 10^e as the double nearest to the decimal value (10^-2 is not exact; 1/10^2 rounds once).
double decimal(double m, int e) { return e >= 0 ? m * std::pow(10.0, e) : m / std::pow(10.0, -e); }

// Ticks of a log axis: 1-2-5 within each decade while the range spans at most three decades,
// powers of ten (every few when the range is vast) beyond; the first at or below lo, the last
// at or above hi. lo > 0.
std::vector<double> log_ticks(double lo, double hi) {
  const int k0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int k1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (k1 <= k0) k1 = k0 + 1;
  const bool fine = k1 - k0 <= 3;
  const int stride = fine ? 1 : std::max(1, (k1 - k0 + 7) / 8);
  std::vector<double> all;
  for (int k = k0; k <= k1 + stride; k += stride)
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1})
      all.push_back(decimal(m, k));
  size_t first = 0, last = all.size() - 1;
  while (first + 1 < all.size() && all[first + 1] <= lo * (1 + 1e-9)) ++first;
  while (last > first + 1 && all[last - 1] >= hi * (1 - 1e-9)) --last;
  return {all.begin() + first, all.begin() + last + 1};
}

// A 1-2-5 tick's label: as many decimals as the step needs.
std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fixed(v, decimals);
}

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;

  // Where v lies between lo (0) and hi (1), clamped; values a log axis cannot show sit at lo.
  double fraction(double v) const {
    if (log && !(v > 0)) return 0;
    const double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                         : (v - lo) / (hi - lo);
    return std::isfinite(f) ? std::clamp(f, 0.0, 1.0) : 0;
  }

  std::string label(size_t i) const {
    if (log) return tick_label(ticks[i], ticks[i]);
    return tick_label(ticks[i], ticks.size() > 1 ? ticks[1] - ticks[0] : 1);
  }
};

Axis with_ticks(std::vector<double> ticks, bool log) {
  Axis a;
  a.lo = ticks.front();
  a.hi = ticks.back();
  a.log = log;
  a.ticks = std::move(ticks);
  return a;
}

// Evaluations: from 0, whole-number ticks.
Axis x_axis(double max_evaluations) {
  const double hi = std::max(max_evaluations, 1.0);
  std::vector<double> ticks = nice_ticks(0, hi, 6);
  if (ticks.size() > 1 && ticks[1] - ticks[0] < 1) {
    ticks.clear();
    for (int i = 0; i <= static_cast<int>(std::ceil(hi)); ++i) ticks.push_back(i);
  }
  return with_ticks(std::move(ticks), false);
}

// Speedups: log-scaled when the values span a factor of 10 or more (early random candidates are
// often 100× slower than the final best, and a linear axis would flatten every late gain).
Axis y_axis(const std::vector<double>& values) {
  if (values.empty()) return with_ticks(nice_ticks(0, 1, 5), false);
  double lo = *std::min_element(values.begin(), values.end());
  double hi = *std::max_element(values.begin(), values.end());
  if (hi / lo >= 10) return with_ticks(log_ticks(lo, hi), true);
  if (hi - lo < 1e-9 * hi) {  // one value: a window around it
    const double pad = std::max(0.1 * hi, 0.05);
    lo = std::max(lo - pad, 0.0);
    hi += pad;
  }
  return with_ticks(nice_ticks(lo, hi, 5), false);
}

// ---- plot --------------------------------------------------------------------------------

// Layout of a plot, in SVG user units.
constexpr double kLeft = 64, kTop = 40, kPlotW = 460, kPlotH = 300, kBottom = 52;
constexpr double kLegendX = kLeft + kPlotW + 20, kLegendW = 240, kRight = 16;
constexpr double kWidth = kLegendX + kLegendW + kRight;
constexpr double kLegendRow = 18, kLegendNote = 14;

// Tableau 10: distinct in colour and readable for most colour-blind readers; after ten series
// the dash pattern changes so no two lines look alike.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr const char* kDashes[] = {"", "6 3", "2 2", "8 3 2 3"};
constexpr size_t kColours = sizeof kPalette / sizeof kPalette[0];

struct Style {
  const char* colour;
  const char* dash;
};

Style style_of(size_t i) {
  return {kPalette[i % kColours], kDashes[(i / kColours) % (sizeof kDashes / sizeof kDashes[0])]};
}

std::string coord(double v) { return fixed(v, 2); }

struct Pt {
  double x, y;
};

bool drawable(double best) { return std::isfinite(best) && best > 0; }

// A series' drawable points (and their band entries) in SVG coordinates.
struct Mapped {
  std::vector<Pt> line, upper, lower;
};

Mapped map_series(const ReportSeries& s, const Axis& x, const Axis& y) {
  if (!s.band.empty() && s.band.size() != s.points.size())
    throw std::invalid_argument("report: series " + s.task + "/" + s.arm + "/" + s.seed + " has " +
                                std::to_string(s.band.size()) + " band entries for " +
                                std::to_string(s.points.size()) + " points");
  const auto sx = [&](double v) { return kLeft + x.fraction(v) * kPlotW; };
  const auto sy = [&](double v) { return kTop + (1 - y.fraction(v)) * kPlotH; };
  Mapped m;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const CurvePoint& p = s.points[i];
    if (!drawable(p.best)) continue;
    const double px = sx(static_cast<double>(p.evaluations));
    m.line.push_back({px, sy(p.best)});
    if (s.band.empty()) continue;
    const BandPoint& b = s.band[i];
    if (!std::isfinite(b.lower) || !std::isfinite(b.upper)) continue;
    m.upper.push_back({px, sy(b.upper)});
    m.lower.push_back({px, sy(b.lower)});
  }
  return m;
}

// A best-so-far curve only changes where a better candidate is found, so it is drawn as steps:
// level until the next point, then up. Repeated vertices are dropped.
std::vector<Pt> steps(const std::vector<Pt>& p) {
  std::vector<Pt> out;
  const auto add = [&](Pt q) {
    if (out.empty() || out.back().x != q.x || out.back().y != q.y) out.push_back(q);
  };
  for (size_t i = 0; i < p.size(); ++i) {
    if (i > 0) add({p[i].x, p[i - 1].y});
    add(p[i]);
  }
  return out;
}

std::string points_attr(const std::vector<Pt>& pts) {
  std::string out;
  for (const Pt& p : pts) {
    if (!out.empty()) out += ' ';
    out += coord(p.x) + "," + coord(p.y);
  }
  return out;
}

std::string svg_line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" +
         coord(y2) + "\" " + attrs + "/>\n";
}

std::string svg_text(double x, double y, const std::string& attrs, const std::string& text) {
  return "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" " + attrs + ">" + escape(text) +
         "</text>\n";
}

// Frame, grid, ticks, labels and the eager-parity line.
std::string draw_axes(const Axis& x, const Axis& y) {
  std::string out = "<g class=\"axes\">\n";
  out += "<rect class=\"frame\" x=\"" + coord(kLeft) + "\" y=\"" + coord(kTop) + "\" width=\"" +
         coord(kPlotW) + "\" height=\"" + coord(kPlotH) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  const double bottom = kTop + kPlotH;
  for (size_t i = 0; i < x.ticks.size(); ++i) {
    const double px = kLeft + x.fraction(x.ticks[i]) * kPlotW;
    out += svg_line(px, kTop, px, bottom, "stroke=\"#e5e5e5\"");
    out += svg_line(px, bottom, px, bottom + 5, "stroke=\"#444\"");
    out += svg_text(px, bottom + 18, "text-anchor=\"middle\"", x.label(i));
  }
  for (size_t i = 0; i < y.ticks.size(); ++i) {
    const double py = kTop + (1 - y.fraction(y.ticks[i])) * kPlotH;
    out += svg_line(kLeft, py, kLeft + kPlotW, py, "stroke=\"#e5e5e5\"");
    out += svg_line(kLeft - 5, py, kLeft, py, "stroke=\"#444\"");
    out += svg_text(kLeft - 8, py + 4, "text-anchor=\"end\"", y.label(i));
  }
  if (y.lo <= 1 && 1 <= y.hi) {  // where a candidate stops being slower than eager
    const double py = kTop + (1 - y.fraction(1)) * kPlotH;
    out += svg_line(kLeft, py, kLeft + kPlotW, py,
                    "class=\"parity\" stroke=\"#888\" stroke-dasharray=\"4 4\"");
    out += svg_text(kLeft + kPlotW - 4, py - 4, "text-anchor=\"end\" fill=\"#888\"", "eager");
  }
  out += svg_text(kLeft + kPlotW / 2, bottom + 40, "text-anchor=\"middle\"", "evaluations");
  const double ymid = kTop + kPlotH / 2;
  out += "<text x=\"16\" y=\"" + coord(ymid) + "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " +
         coord(ymid) + ")\">" +
         escape(y.log ? "best speedup over eager (\xC3\x97, log scale)"
                      : "best speedup over eager (\xC3\x97)") +
         "</text>\n";
  return out + "</g>\n";
}

std::string series_label(const ReportSeries& s) {
  const bool numeric = !s.seed.empty() && s.seed.find_first_not_of("0123456789") == std::string::npos;
  return s.arm + (numeric ? ", seed " : ", ") + s.seed;
}

bool is_aggregate(const ReportSeries& s) { return !s.band.empty() || s.seed == "mean"; }

std::string stroke_attrs(const Style& st, bool aggregate) {
  std::string a = "stroke=\"" + std::string(st.colour) + "\" stroke-width=\"" +
                  (aggregate ? "2.5" : "1.5") + "\"";
  if (*st.dash) a += " stroke-dasharray=\"" + std::string(st.dash) + "\"";
  return a;
}

// Bands under all lines, so no band hides a curve.
std::string draw_bands(const std::vector<ReportSeries>& series, const std::vector<Mapped>& mapped) {
  std::string out;
  for (size_t i = 0; i < series.size(); ++i) {
    const Mapped& m = mapped[i];
    if (m.upper.empty()) continue;
    std::vector<Pt> outline = steps(m.upper);
    std::vector<Pt> lower = steps(m.lower);
    outline.insert(outline.end(), lower.rbegin(), lower.rend());
    out += "<polygon class=\"band\" points=\"" + points_attr(outline) + "\" fill=\"" +
           style_of(i).colour + "\" fill-opacity=\"0.18\" stroke=\"none\"/>\n";
  }
  return out;
}

std::string draw_curves(const std::vector<ReportSeries>& series, const std::vector<Mapped>& mapped) {
  std::string out;
  for (size_t i = 0; i < series.size(); ++i) {
    const std::vector<Pt>& line = mapped[i].line;
    const std::string stroke = stroke_attrs(style_of(i), is_aggregate(series[i]));
    if (line.size() == 1) {  // a polyline of one point draws nothing
      out += "<circle class=\"curve\" cx=\"" + coord(line[0].x) + "\" cy=\"" + coord(line[0].y) +
             "\" r=\"3\" fill=\"" + style_of(i).colour + "\"/>\n";
    } else if (line.size() > 1) {
      out += "<polyline class=\"curve\" points=\"" + points_attr(steps(line)) + "\" fill=\"none\" " +
             stroke + "/>\n";
    }
  }
  return out;
}

// One row per series, a second, grey one for its band's meaning; `bottom` is where it ends.
std::string draw_legend(const std::vector<ReportSeries>& series, double& bottom) {
  std::string out = "<g class=\"legend\">\n";
  double y = kTop + 4;
  for (size_t i = 0; i < series.size(); ++i) {
    const ReportSeries& s = series[i];
    const Style st = style_of(i);
    if (!s.band.empty())
      out += "<rect x=\"" + coord(kLegendX) + "\" y=\"" + coord(y - 5) +
             "\" width=\"24\" height=\"10\" fill=\"" + st.colour + "\" fill-opacity=\"0.18\"/>\n";
    out += svg_line(kLegendX, y, kLegendX + 24, y, stroke_attrs(st, is_aggregate(s)));
    out += svg_text(kLegendX + 30, y + 4, "", shorten(series_label(s), 28));
    y += kLegendRow;
    if (!s.band.empty() && !s.band_label.empty()) {
      out += svg_text(kLegendX + 30, y - 2, "font-size=\"10\" fill=\"#666\"",
                      shorten(s.band_label, 36));
      y += kLegendNote;
    }
  }
  bottom = y;
  return out + "</g>\n";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (hi < lo) std::swap(lo, hi);
  if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi))) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  target = std::max(target, 2);
  const double raw = (hi - lo) / target;
  const int e = static_cast<int>(std::floor(std::log10(raw)));
  const double norm = raw / std::pow(10.0, e);
  const double m = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10;
  const double step = decimal(m, e);
  const auto first = static_cast<long long>(std::floor(lo / step + 1e-9));
  const auto last = static_cast<long long>(std::ceil(hi / step - 1e-9));
  std::vector<double> ticks;
  for (long long k = first; k <= last; ++k) ticks.push_back(k == 0 ? 0.0 : decimal(m * k, e));
  return ticks;
}

std::string render_svg_plot(const std::string& title, const std::vector<ReportSeries>& series) {
  double max_x = 0;
  std::vector<double> values;
  for (const ReportSeries& s : series)
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (!drawable(s.points[i].best)) continue;
      max_x = std::max(max_x, static_cast<double>(s.points[i].evaluations));
      values.push_back(s.points[i].best);
      if (i < s.band.size())
        for (double v : {s.band[i].lower, s.band[i].upper})
          if (drawable(v)) values.push_back(v);
    }
  const Axis x = x_axis(max_x), y = y_axis(values);

  std::vector<Mapped> mapped;
  for (const ReportSeries& s : series) mapped.push_back(map_series(s, x, y));

  double legend_bottom = 0;
  const std::string legend = draw_legend(series, legend_bottom);
  const double height = std::max(kTop + kPlotH + kBottom, legend_bottom + 8);

  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" +
                    coord(kWidth) + "\" height=\"" + coord(height) + "\" viewBox=\"0 0 " +
                    coord(kWidth) + " " + coord(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n";
  out += "<title>" + escape(title) + "</title>\n";
  out += svg_text(kLeft, 22, "font-size=\"14\" font-weight=\"bold\"", title);
  out += draw_axes(x, y);
  if (values.empty())
    out += svg_text(kLeft + kPlotW / 2, kTop + kPlotH / 2, "text-anchor=\"middle\" fill=\"#888\"",
                    "no valid candidate yet");
  out += "<g class=\"series\">\n" + draw_bands(series, mapped) + draw_curves(series, mapped) + "</g>\n";
  out += legend;
  return out + "</svg>\n";
}

// ---- the page ------------------------------------------------------------------------------

namespace {

constexpr const char* kStyle = R"(body{font-family:system-ui,sans-serif;color:#222;max-width:1200px;margin:2em auto;padding:0 1em}
h1{font-size:1.6em;margin-bottom:0.2em}
h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:0.5em 0 1em}
th,td{padding:0.25em 0.7em;border-bottom:1px solid #e5e5e5;text-align:right;vertical-align:top}
th{background:#f5f5f5}
.text{text-align:left}
code{font-family:ui-monospace,monospace;font-size:0.92em;overflow-wrap:anywhere}
table.meta th{text-align:left;background:none}
figure{margin:0.5em 0}
footer{margin-top:2em;color:#888;font-size:0.85em}
)";

const char* kNone = "\xE2\x80\x94";
const char* kTimes = "\xC3\x97";

std::string cell(const std::string& text, bool is_text = false) {
  return std::string(is_text ? "<td class=\"text\">" : "<td>") + escape(text) + "</td>";
}

std::string header_row(const std::vector<std::pair<std::string, bool>>& columns) {
  std::string out = "<tr>";
  for (const auto& [name, is_text] : columns)
    out += std::string(is_text ? "<th class=\"text\">" : "<th>") + escape(name) + "</th>";
  return out + "</tr>\n";
}

std::string meta_table(const ReportData& d) {
  std::string kevo = d.kevo_version;
  if (!d.kevo_commit.empty()) kevo += (kevo.empty() ? "" : " ") + std::string("(") + d.kevo_commit + ")";
  std::string out = "<table class=\"meta\">\n";
  const std::pair<const char*, std::string> rows[] = {
      {"Campaign", d.campaign_id}, {"kevo", kevo}, {"GPU", d.gpu}, {"Created", d.created},
      {"Fitness", fitness_description(d.fitness)}};
  for (const auto& [name, value] : rows)
    out += std::string("<tr><th>") + name + "</th>" + cell(value.empty() ? kNone : value, true) + "</tr>\n";
  out += "<tr><th>Command</th><td class=\"text\"><code>" + escape(d.command) + "</code></td></tr>\n";
  return out + "</table>\n";
}

std::string notes_list(const std::vector<std::string>& notes) {
  if (notes.empty()) return "";
  std::string out = "<h2>Notes</h2>\n<ul>\n";
  for (const std::string& n : notes) out += "<li>" + escape(n) + "</li>\n";
  return out + "</ul>\n";
}

// `order` names the task sections, whose anchors are #task-1, #task-2, ...
std::string summary_table(const std::vector<TaskSummary>& tasks, const std::vector<std::string>& order) {
  if (tasks.empty()) return "";
  // Screening's columns only where a campaign screened: the reports of others stay as they were.
  const bool screening = std::any_of(tasks.begin(), tasks.end(), [](const TaskSummary& t) { return t.screened > 0; });
  std::string out = "<h2>Summary</h2>\n<table class=\"summary\">\n";
  std::vector<std::pair<std::string, bool>> columns = {{"Task", true}, {"Runs", false}, {"Evaluations", false}};
  if (screening) columns.insert(columns.end(), {{"Screened out", false}, {"Fully verified", false}});
  columns.insert(columns.end(), {{"Unmeasured", false},
                     {"Duplicates", false}, {std::string("Best ") + kTimes + " eager", false},
                     {"Its geometric mean", false},
                     {std::string("Best ") + kTimes + " torch.compile", false}, {"GPU busy", false},
                     {"Best variant", true}});
  out += header_row(columns);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskSummary& t = tasks[i];
    const size_t section = std::find(order.begin(), order.end(), t.task) - order.begin();
    out += "<tr><td class=\"text\"><a href=\"#task-" + std::to_string(section + 1) + "\">" + escape(t.task) +
           "</a></td>" + cell(std::to_string(t.runs)) + cell(std::to_string(t.evaluations));
    if (screening)
      out += cell(std::to_string(t.screened)) + cell(std::to_string(t.evaluations - t.unmeasured - t.screened));
    out += cell(std::to_string(t.unmeasured)) + cell(std::to_string(t.duplicates)) +
           cell(known(t.best_fitness, 3, kTimes)) + cell(known(t.best_geometric_mean, 3, kTimes)) +
           cell(known(t.best_vs_compile, 3, kTimes)) +
           cell(known(t.gpu_busy * 100, 1, "%")) + "<td class=\"text\"><code>" +
           escape(t.best_variant.empty() ? kNone : t.best_variant) + "</code></td></tr>\n";
  }
  return out + "</table>\n";
}

// The weight a workload has in the fitness, or that it is only checked.
std::string weight_text(const WorkloadRow& w) {
  if (!w.timed) return "checked, not timed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", w.weight);
  return buf;
}

std::string workload_table(const TaskSummary& t) {
  if (t.workloads.empty()) return "<p>No valid candidate.</p>\n";
  std::string out = "<table class=\"workloads\">\n";
  out += header_row({{"#", false}, {"Axes", true}, {"Weight", false}, {"Best (ms)", false}, {"Eager (ms)", false},
                     {"torch.compile (ms)", false}, {"Launches", false}, {"Floor (ms)", false},
                     {std::string("Speedup ") + kTimes + " eager", false}, {"% of floor", false}});
  for (const WorkloadRow& w : t.workloads)
    out += "<tr>" + cell(std::to_string(w.workload)) + cell(w.axes, true) + cell(weight_text(w)) +
           cell(known(w.best_ms, 4)) + cell(known(w.eager_ms, 4)) + cell(known(w.compile_ms, 4)) +
           cell(w.launches > 0 ? std::to_string(w.launches) : kNone) + cell(known(w.floor_ms, 4)) +
           cell(known(w.speedup, 3, kTimes)) + cell(known(w.percent_of_floor, 1, "%")) + "</tr>\n";
  return out + "</table>\n";
}

// Tasks in summary order, then those that only have curves, each once.
std::vector<std::string> task_order(const ReportData& d) {
  std::vector<std::string> names;
  const auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const TaskSummary& t : d.tasks) add(t.task);
  for (const ReportSeries& s : d.series) add(s.task);
  return names;
}

std::string task_section(const ReportData& d, const std::string& task, size_t index) {
  std::vector<ReportSeries> curves;
  for (const ReportSeries& s : d.series)
    if (s.task == task) curves.push_back(s);
  std::string out = "<section id=\"task-" + std::to_string(index + 1) + "\">\n<h2>" + escape(task) + "</h2>\n";
  out += "<figure>\n" + render_svg_plot(task + ": best speedup over eager", curves) + "</figure>\n";
  for (const TaskSummary& t : d.tasks)
    if (t.task == task) {
      out += workload_table(t);
      break;
    }
  return out + "</section>\n";
}

}  // namespace

std::string render_html(const ReportData& d) {
  std::string title = "kevo report";
  if (!d.campaign_id.empty()) title += ": " + d.campaign_id;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                    escape(title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<h1>" + escape(title) + "</h1>\n";
  out += meta_table(d);
  out += notes_list(d.notes);
  const std::vector<std::string> tasks = task_order(d);
  out += summary_table(d.tasks, tasks);
  for (size_t i = 0; i < tasks.size(); ++i) out += task_section(d, tasks[i], i);
  out += "<footer>Written by kevo " + escape(d.kevo_version) + ".</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace kevo::store
