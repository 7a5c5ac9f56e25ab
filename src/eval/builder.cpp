// The Builder: what untrusted source may ask of NVRTC (options, includes, name expressions), the
// headers it is offered, and the compile itself through the CUBIN cache. Sections follow that order.
#include "eval/builder.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "core/source_scan.h"
#include "core/template_library.h"
#include "eval/build_cache.h"
#include "eval/cuda_driver.h"

namespace kevo::eval {

namespace {

constexpr size_t kMaxSourceBytes = size_t{4} << 20;
constexpr size_t kMaxLogBytes = size_t{64} << 10;
constexpr size_t kMaxNameExpressions = 256;
constexpr size_t kMaxNameExpressionBytes = 1024;
constexpr const char* kSourceName = "candidate.cu";

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_identifier(std::string_view s) {
  return !s.empty() && is_ident_start(s[0]) && std::all_of(s.begin(), s.end(), is_ident_char);
}
bool is_unsigned(std::string_view s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---------------------------------------------------------------------------------------------
// Options. Everything NVRTC is told comes from here; user extras pass an allow-list so that no
// option can read or write files (-I, --pre-include, --time, --create-pch, ...) or change the
// kind of output (-rdc, -dlto, --fdevice-syntax-only).

bool one_of(std::string_view v, std::initializer_list<std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
}
bool is_bool(std::string_view v) { return one_of(v, {"true", "false"}); }
bool is_register_count(std::string_view v) {
  int n = is_unsigned(v) ? std::stoi(std::string(v)) : 0;
  return n >= 16 && n <= 255;
}
bool is_diag_list(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == ','; });
}
bool is_macro_definition(std::string_view v) {
  size_t eq = v.find('=');
  std::string_view value = eq == std::string_view::npos ? std::string_view() : v.substr(eq + 1);
  return is_identifier(v.substr(0, eq)) && value.size() <= 256 &&
         std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}
bool is_ptxas_option(std::string_view v) {
  if (one_of(v, {"-v", "--verbose", "--warn-on-spills", "--warn-on-local-memory-usage",
                 "--warn-on-double-precision-use", "-O0", "-O1", "-O2", "-O3",
                 "--allow-expensive-optimizations=true", "--allow-expensive-optimizations=false",
                 "-dlcm=ca", "-dlcm=cg"}))
    return true;
  for (std::string_view prefix : {"--maxrregcount=", "-maxrregcount="})
    if (v.substr(0, prefix.size()) == prefix) return is_register_count(v.substr(prefix.size()));
  return false;
}

struct OptionRule {
  std::string_view prefix;                // the whole option when `value` is null
  bool (*value)(std::string_view);
};

constexpr OptionRule kOptionRules[] = {
    {"--extra-device-vectorization", nullptr}, {"-extra-device-vectorization", nullptr},
    {"--restrict", nullptr}, {"-restrict", nullptr}, {"-w", nullptr}, {"--disable-warnings", nullptr},
    {"--device-int128", nullptr}, {"-device-int128", nullptr},
    {"--maxrregcount=", is_register_count}, {"-maxrregcount=", is_register_count},
    {"--ftz=", is_bool}, {"-ftz=", is_bool}, {"--prec-div=", is_bool}, {"-prec-div=", is_bool},
    {"--prec-sqrt=", is_bool}, {"-prec-sqrt=", is_bool}, {"--fmad=", is_bool}, {"-fmad=", is_bool},
    {"-D", is_macro_definition}, {"--define-macro=", is_macro_definition},
    {"-U", is_identifier}, {"--undefine-macro=", is_identifier},
    {"--diag-suppress=", is_diag_list}, {"-diag-suppress=", is_diag_list},
    {"--diag-error=", is_diag_list}, {"-diag-error=", is_diag_list},
    {"--diag-warn=", is_diag_list}, {"-diag-warn=", is_diag_list},
    {"--ptxas-options=", is_ptxas_option},
};

bool is_allowed_option(std::string_view option) {
  for (const OptionRule& rule : kOptionRules) {
    if (!rule.value) {
      if (option == rule.prefix) return true;
    } else if (option.size() > rule.prefix.size() && option.substr(0, rule.prefix.size()) == rule.prefix) {
      return rule.value(option.substr(rule.prefix.size()));
    }
  }
  return false;
}

// The architectures this NVRTC can emit SASS for, as numbers (90 for sm_90a).
const std::vector<int>& supported_archs() {
  static const std::vector<int> archs = [] {
    int n = 0;
    std::vector<int> out;
    if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
      out.resize(static_cast<size_t>(n));
      if (nvrtcGetSupportedArchs(out.data()) != NVRTC_SUCCESS) out.clear();
    }
    return out;
  }();
  return archs;
}

// "" when `arch` is sm_<N>, sm_<N>a or sm_<N>f for an N this NVRTC supports.
std::string check_arch(const std::string& arch) {
  std::string_view a = arch;
  if (a.substr(0, 3) != "sm_") return "arch '" + arch + "' is not a real architecture such as sm_90a";
  a.remove_prefix(3);
  if (!a.empty() && (a.back() == 'a' || a.back() == 'f')) a.remove_suffix(1);
  if (!is_unsigned(a)) return "arch '" + arch + "' is not a real architecture such as sm_90a";
  int number = std::stoi(std::string(a));
  const auto& archs = supported_archs();
  if (std::find(archs.begin(), archs.end(), number) == archs.end())
    return "arch '" + arch + "' is not supported by NVRTC " + nvrtc_version();
  return "";
}

// The option list NVRTC gets, or an error for a bad request.
std::string make_options(const BuildRequest& request, std::vector<std::string>& options) {
  std::string std_option = "--std=c++17";
  bool fast_math = request.fast_math;
  std::vector<std::string> extras;
  for (const std::string& option : request.extra_options) {
    if (option == "--use_fast_math" || option == "-use_fast_math") {
      fast_math = true;
    } else if (one_of(option, {"--std=c++17", "--std=c++20", "-std=c++17", "-std=c++20"})) {
      std_option = "--std=" + option.substr(option.find('=') + 1);
    } else if (one_of(option, {"-lineinfo", "--generate-line-info", "-default-device", "--ptxas-options=-v"})) {
      // already given
    } else if (option.substr(0, 5) == "-arch" || option.substr(0, 6) == "--gpu-") {
      return "extra option '" + option + "' is not allowed: the architecture is the request's arch field";
    } else if (!is_allowed_option(option)) {
      return "extra option '" + option +
             "' is not allowed (allowed: -D, -U, -maxrregcount, --ftz, --prec-div, --prec-sqrt, --fmad, "
             "--use_fast_math, --extra-device-vectorization, --restrict, --std=c++17|c++20, -w, --diag-*, "
             "--device-int128, --ptxas-options=<one of -O0..-O3, --warn-on-spills, -dlcm=ca|cg, ...>)";
    } else {
      extras.push_back(option);
    }
  }
  // --no-source-include: "candidate.cu" has no directory, so NVRTC would search the current one.
  options = {std_option, "-arch=" + request.arch, "--ptxas-options=-v", "-lineinfo", "-default-device",
             "--no-source-include"};
  if (fast_math) options.push_back("--use_fast_math");
  options.insert(options.end(), extras.begin(), extras.end());
  return "";
}

// ---------------------------------------------------------------------------------------------
// Includes. Untrusted source may include only a few toolkit headers, and NVRTC gets no include
// directory: those headers (and the headers they include) are read by kevo and handed to NVRTC
// from memory. NVRTC still opens an absolute or relative path written in an #include, so the
// source is scanned first. The scan is deliberately blunter than a preprocessor: it looks at
// every '#', '%:' and '??=' (in comments and strings too), treats comments and line breaks
// after it as blanks, and rejects any #include whose operand is not a literal allowed name,
// any #include_next, #import and #embed, and __has_include; false alarms cost a candidate, a
// missed directive would let it read the disk. The scan itself (splicing, the directive reader)
// is core/source_scan.h's for_each_directive, which the exporter's careful scan shares.

using source_scan::Directive;
using source_scan::for_each_directive;
using source_scan::splice_lines;

bool is_word(std::string_view s) {
  auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; };
  return !s.empty() && s[0] >= 'a' && s[0] <= 'z' && std::all_of(s.begin(), s.end(), lower);
}

// One directory level `dir/` then a word with an optional suffix.
bool is_word_under(std::string_view name, std::string_view dir, std::string_view suffix) {
  if (name.substr(0, dir.size()) != dir || name.size() < dir.size() + suffix.size()) return false;
  std::string_view rest = name.substr(dir.size());
  if (rest.substr(rest.size() - suffix.size()) != suffix) return false;
  return is_word(rest.substr(0, rest.size() - suffix.size()));
}

// "candidate.cu(LINE): error: MESSAGE", NVRTC's own format, so that policies read one format.
std::string source_error(std::string_view spliced, const std::vector<size_t>& splices, size_t at,
                         const std::string& message) {
  size_t line = 1 + static_cast<size_t>(std::count(spliced.begin(), spliced.begin() + static_cast<long>(at), '\n'));
  line += static_cast<size_t>(std::upper_bound(splices.begin(), splices.end(), at) - splices.begin());
  return std::string(kSourceName) + "(" + std::to_string(line) + "): error: " + message;
}

// "" when the source may be compiled; the allowed headers it includes go to `headers`.
std::string check_source(std::string_view source, std::vector<std::string>& headers) {
  if (source.find('\0') != std::string_view::npos)
    return std::string(kSourceName) + ": error: the source contains a NUL byte";
  for (bool lenient : {false, true}) {
    std::vector<size_t> splices;
    std::string s = splice_lines(source, lenient, splices);
    if (size_t at = s.find("__has_include"); at != std::string::npos)
      return source_error(s, splices, at, "__has_include is not allowed: candidates cannot look at files");
    std::string error;
    for_each_directive(s, [&](const Directive& d) {
      if (!error.empty()) return;
      if (d.word.find('\\') != std::string::npos || d.word.find('$') != std::string::npos) {
        error = source_error(s, splices, d.at, "a directive spelled with escapes is not allowed");
      } else if (one_of(d.word, {"include_next", "import", "embed"})) {
        error = source_error(s, splices, d.at, "#" + d.word + " is not allowed");
      } else if (d.word == "include") {
        if (!d.literal)
          error = source_error(s, splices, d.at, "#include must name a header literally, as <cuda_fp16.h>");
        else if (!is_allowed_header(d.operand))
          error = source_error(s, splices, d.at,
                               std::string("#include ") + d.delimiter + d.operand + (d.delimiter == '<' ? '>' : '"') +
                                   " is not allowed: candidates may include cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, "
                                   "cuda_fp6.h, cuda_fp4.h, cuda_pipeline.h, cuda_awbarrier.h, mma.h, "
                                   "cooperative_groups.h, cooperative_groups/*.h, cuda/*, cuda/std/* and kevo's "
                                   "template library (\"kevo/common.cuh\", \"kevo/gemm/gemm.cuh\", ...)");
        else if (std::find(headers.begin(), headers.end(), d.operand) == headers.end())
          headers.push_back(d.operand);
      }
    });
    if (!error.empty()) return error;
  }
  return "";
}

// "" when every name expression is plain C++ naming; NVRTC pastes them into a generated source,
// so a line break or a '#' there would be a directive of the candidate's choosing.
std::string check_name_expressions(const std::vector<std::string>& expressions) {
  if (expressions.size() > kMaxNameExpressions)
    return "more than " + std::to_string(kMaxNameExpressions) + " name expressions";
  for (const std::string& e : expressions) {
    bool has_name = std::any_of(e.begin(), e.end(), is_ident_start);
    bool plain = std::all_of(e.begin(), e.end(), [](char c) {
      return is_ident_char(c) || (c != 0 && std::strchr(" :<>,()*&.+-", c) != nullptr);
    });
    if (!has_name || !plain || e.size() > kMaxNameExpressionBytes)
      return "name expression '" + e.substr(0, 80) +
             "' is not a kernel name (letters, digits, _ :: < > , ( ) * & . + - and spaces only)";
  }
  return "";
}

// Where the toolkit's headers are: beside the libnvrtc this process loaded, else $CUDA_HOME,
// $CUDA_PATH or /usr/local/cuda. The CCCL headers (cuda/std, cub, nv/target) live in cccl/.
const std::vector<std::string>& include_roots() {
  static const std::vector<std::string> roots = [] {
    std::vector<std::string> candidates;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname) {
      std::string lib = info.dli_fname;
      candidates.push_back(lib.substr(0, lib.rfind('/')) + "/../include");
      if (char* real = realpath(info.dli_fname, nullptr)) {
        std::string r = real;
        free(real);
        candidates.push_back(r.substr(0, r.rfind('/')) + "/../include");
      }
    }
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(var)) candidates.push_back(std::string(v) + "/include");
    candidates.push_back("/usr/local/cuda/include");
    struct stat st{};
    for (const std::string& dir : candidates)
      if (::stat((dir + "/cuda_fp16.h").c_str(), &st) == 0) {
        std::vector<std::string> found{dir};
        if (::stat((dir + "/cccl").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) found.push_back(dir + "/cccl");
        return found;
      }
    return std::vector<std::string>{};
  }();
  return roots;
}

bool is_regular_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// An allowed header and everything it may include, as NVRTC's in-memory headers: each file under
// every name it is included by. The closure follows #include lines textually, ignoring #if, so it
// holds more than one compile needs; what it cannot find (system headers NVRTC never reaches)
// is left out.
struct HeaderBundle {
  // include name -> contents; a name included from two directories meaning two files keeps the
  // first (none does in CUDA 13.0's headers reachable from the allow-list)
  std::map<std::string, std::shared_ptr<const std::string>> files;
  std::string digest;                                                // over names and contents
  std::string error;
};

void digest(HeaderBundle& bundle) {
  Sha256 hash;
  for (const auto& [name, text] : bundle.files) {
    uint64_t sizes[2] = {name.size(), text->size()};
    hash.update(sizes, sizeof sizes).update(name).update(*text);
  }
  bundle.digest = hash.hex_digest();
}

std::shared_ptr<const HeaderBundle> collect_headers(const std::string& header) {
  auto bundle = std::make_shared<HeaderBundle>();
  const auto& roots = include_roots();
  if (roots.empty()) {
    bundle->error = "the CUDA toolkit headers were not found (set CUDA_HOME)";
    return bundle;
  }
  std::map<std::string, std::shared_ptr<const std::string>> by_path;
  struct Pending {
    std::string name;
    bool quoted;
    std::string from_dir;
  };
  std::vector<Pending> stack{{header, false, ""}};
  while (!stack.empty()) {
    Pending p = stack.back();
    stack.pop_back();
    std::string path;
    std::vector<std::string> tries;
    if (p.quoted) tries.push_back(p.from_dir + "/" + p.name);
    for (const std::string& root : roots) tries.push_back(root + "/" + p.name);
    for (const std::string& t : tries)
      if (is_regular_file(t)) {
        path = t;
        break;
      }
    if (path.empty()) {
      if (p.name == header) bundle->error = "the header <" + header + "> is not in this CUDA toolkit";
      continue;
    }
    auto known = by_path.find(path);
    if (known != by_path.end()) {
      bundle->files.emplace(p.name, known->second);  // a second name for a file already read
      continue;
    }
    auto text = std::make_shared<std::string>();
    if (!read_file(path, *text)) continue;
    by_path.emplace(path, text);
    bundle->files.emplace(p.name, text);
    for (const std::string& root : roots)  // also under its root-relative name
      if (path.compare(0, root.size() + 1, root + "/") == 0) bundle->files.emplace(path.substr(root.size() + 1), text);
    std::vector<size_t> splices;
    std::string dir = path.substr(0, path.rfind('/'));
    for_each_directive(splice_lines(*text, false, splices), [&](const Directive& d) {
      if (d.word != "include" && d.word != "include_next") return;
      if (d.literal)
        stack.push_back({d.operand, d.delimiter == '"', dir});
      else if (bundle->error.empty())
        bundle->error = "the header <" + header + "> is not offered: " + path +
                        " includes a header named by a macro, which a candidate's #define could point at any file";
    });
  }
  digest(*bundle);
  return bundle;
}

std::shared_ptr<const HeaderBundle> header_bundle(const std::string& header);

// A header of kevo's template library, served from the binary: the library files it includes
// under their kevo/ names, and the toolkit headers they include.
std::shared_ptr<const HeaderBundle> library_bundle(const std::string& header) {
  auto bundle = std::make_shared<HeaderBundle>();
  templates::Files served;
  try {
    served = templates::served_headers(header);
  } catch (const std::exception& e) {
    bundle->error = std::string("kevo's template library: ") + e.what();
    return bundle;
  }
  for (const std::string& toolkit : templates::toolkit_includes(served)) {
    auto b = header_bundle(toolkit);
    if (bundle->error.empty()) bundle->error = b->error;
    bundle->files.insert(b->files.begin(), b->files.end());
  }
  for (auto& [name, text] : served) bundle->files[name] = std::make_shared<const std::string>(std::move(text));
  digest(*bundle);
  return bundle;
}

std::shared_ptr<const HeaderBundle> header_bundle(const std::string& header) {
  static std::recursive_mutex mutex;  // a library header's bundle takes the toolkit's bundles it needs
  static std::map<std::string, std::shared_ptr<const HeaderBundle>> bundles;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto& slot = bundles[header];
  if (!slot) slot = templates::is_library_header(header) ? library_bundle(header) : collect_headers(header);
  return slot;
}

// ---------------------------------------------------------------------------------------------
// Compiling.

// A validated request's NVRTC options, in-memory headers and cache directory.
struct Prepared {
  std::vector<std::string> options;
  std::map<std::string, std::shared_ptr<const std::string>> headers;  // NVRTC's in-memory headers
  std::vector<std::string> header_digests;                            // of the bundles included
  std::string cache_dir;
};

// The NVRTC build in use: its version, and the size of its library to tell patch releases apart.
const std::string& nvrtc_identity() {
  static const std::string identity = [] {
    std::string id = nvrtc_version();
    Dl_info info{};
    struct stat st{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname && ::stat(info.dli_fname, &st) == 0)
      id += " " + std::to_string(st.st_size);
    return id;
  }();
  return identity;
}

std::string cache_key(const BuildRequest& request, const Prepared& prepared) {
  Sha256 hash;
  auto field = [&](std::string_view s) {
    uint64_t size = s.size();
    hash.update(&size, sizeof size).update(s);
  };
  auto list = [&](std::vector<std::string> items) {
    std::sort(items.begin(), items.end());
    field(std::to_string(items.size()));
    for (const std::string& item : items) field(item);
  };
  field("kevo cubin cache 1");
  field(request.source);
  list(request.name_expressions);
  list(prepared.options);
  field(request.arch);
  field(nvrtc_identity());
  list(prepared.header_digests);
  return hash.hex_digest();
}

std::string first_line_with(const std::string& log, std::string_view needle) {
  size_t at = log.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = log.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return log.substr(begin, log.find('\n', at) - begin);
}

// Keeps the head (where errors start) and the tail (where ptxas reports) of an oversized log.
std::string cut_log(std::string log) {
  if (log.size() <= kMaxLogBytes) return log;
  size_t head = kMaxLogBytes * 3 / 4, tail = kMaxLogBytes / 4 - 64;
  return log.substr(0, head) + "\n[kevo: " + std::to_string(log.size() - head - tail) +
         " bytes of the log left out]\n" + log.substr(log.size() - tail);
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

void fail(BuildResult& r, BuildStatus status, std::string error) {
  r.status = status;
  r.error = std::move(error);
  r.cubin.clear();
}

bool is_out_of_memory(nvrtcResult result, const std::string& log) {
  return result == NVRTC_ERROR_OUT_OF_MEMORY || log.find("catastrophic error: out of memory") != std::string::npos ||
         log.find("LLVM ERROR: out of memory") != std::string::npos;
}

// Fills the lowered names after a successful compile; a name expression that resolves to no
// kernel of the resource report fails the build.
void resolve_kernels(nvrtcProgram program, const BuildRequest& request, BuildResult& r) {
  for (const std::string& e : request.name_expressions) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(program, e.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
      fail(r, BuildStatus::CompileError, "name expression '" + e + "' does not resolve");
      return;
    }
    if (!r.resources.find(lowered)) {
      fail(r, BuildStatus::CompileError,
           "name expression '" + e + "' resolves to '" + lowered + "', which is not a __global__ kernel");
      return;
    }
    r.lowered_names[e] = lowered;
  }
}

void compile(const BuildRequest& request, const Prepared& prepared, BuildResult& r) {
  keep_nvrtc_cache_off();
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : prepared.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text->c_str());
  }
  nvrtcProgram raw = nullptr;
  nvrtcResult created = nvrtcCreateProgram(&raw, request.source.c_str(), kSourceName,
                                           static_cast<int>(header_texts.size()), header_texts.data(),
                                           header_names.data());
  if (created != NVRTC_SUCCESS) {
    fail(r, created == NVRTC_ERROR_OUT_OF_MEMORY ? BuildStatus::OutOfMemory : BuildStatus::CompileError,
         std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(created));
    return;
  }
  Program program(raw);
  for (const std::string& e : request.name_expressions) nvrtcAddNameExpression(raw, e.c_str());
  std::vector<const char*> options;
  for (const std::string& o : prepared.options) options.push_back(o.c_str());

  auto start = std::chrono::steady_clock::now();
  nvrtcResult compiled = nvrtcCompileProgram(raw, static_cast<int>(options.size()), options.data());
  r.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t log_size = 0;
  std::string log;
  if (nvrtcGetProgramLogSize(raw, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (nvrtcGetProgramLog(raw, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && log.back() == '\0') log.pop_back();
  }

  if (compiled == NVRTC_SUCCESS) {
    size_t cubin_size = 0;
    if (nvrtcGetCUBINSize(raw, &cubin_size) != NVRTC_SUCCESS || cubin_size == 0) {
      fail(r, BuildStatus::CompileError, "NVRTC produced no CUBIN for " + request.arch);
    } else {
      r.cubin.resize(cubin_size);
      nvrtcGetCUBIN(raw, r.cubin.data());
      r.resources = parse_ptxas_report(log);
      add_constant_banks_from_cubin(r.resources, r.cubin);
      r.status = BuildStatus::Ok;
      resolve_kernels(raw, request, r);
    }
  } else if (is_out_of_memory(compiled, log)) {
    fail(r, BuildStatus::OutOfMemory, "NVRTC ran out of memory");
  } else if (compiled == NVRTC_ERROR_INVALID_OPTION) {
    fail(r, BuildStatus::BadRequest, "NVRTC rejected an option: " + first_line_with(log, "option"));
  } else if (log.find("__nv_name_map") != std::string::npos) {
    // NVRTC compiles the name expressions as "#pragma nv_mangled_name EXPR" lines of a generated
    // source and echoes the offending line; its own message reformats the expression.
    std::string bad;
    for (const std::string& e : request.name_expressions)
      if (log.find("#pragma nv_mangled_name " + e + "\n") != std::string::npos &&
          bad.find("'" + e + "'") == std::string::npos)
        bad += (bad.empty() ? "'" : ", '") + e + "'";
    fail(r, BuildStatus::CompileError, "name expression " + (bad.empty() ? std::string("of the plan") : bad) +
                                           " does not name a kernel of the source");
    log = "kevo: " + r.error + "\n" + log;
  } else {
    std::string line = first_line_with(log, "error");
    fail(r, BuildStatus::CompileError, line.empty() ? std::string("NVRTC: ") + nvrtcGetErrorString(compiled) : line);
  }
  r.log = cut_log(std::move(log));
}

// Validates the request and the candidate, and computes the cache key; false with `r` failed.
bool prepare(const BuildRequest& request, BuildResult& r, Prepared& p) {
  r.arch = request.arch;
  r.nvrtc_version = nvrtc_version();
  std::string error;
  if (request.source.size() > kMaxSourceBytes)
    error = "the source has " + std::to_string(request.source.size()) + " bytes; at most " +
            std::to_string(kMaxSourceBytes) + " are accepted";
  else if (!(request.time_limit_s >= 0) || !std::isfinite(request.time_limit_s))
    error = "time_limit_s must be a finite number of seconds, 0 for none";
  if (error.empty()) error = check_arch(request.arch);
  if (error.empty()) error = make_options(request, p.options);
  if (!error.empty()) {
    fail(r, BuildStatus::BadRequest, error);
    return false;
  }
  r.options = p.options;
  std::vector<std::string> headers;
  error = check_source(request.source, headers);
  if (error.empty()) error = check_name_expressions(request.name_expressions);
  for (const std::string& h : headers) {
    if (!error.empty()) break;
    auto bundle = header_bundle(h);
    error = bundle->error;
    p.headers.insert(bundle->files.begin(), bundle->files.end());
    p.header_digests.push_back(bundle->digest);
  }
  if (!error.empty()) {
    fail(r, BuildStatus::CompileError, error);
    r.log = error;
    return false;
  }
  p.cache_dir = request.cache_dir.empty() ? default_cache_dir() : request.cache_dir;
  r.cache_key = cache_key(request, p);
  return true;
}

}  // namespace

const KernelResources* BuildResult::kernel(const std::string& name_expression) const {
  auto it = lowered_names.find(name_expression);
  return it == lowered_names.end() ? nullptr : resources.find(it->second);
}

bool is_allowed_header(std::string_view name) {
  if (one_of(name, {"cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h", "cuda_pipeline.h",
                    "cuda_awbarrier.h", "mma.h", "cooperative_groups.h"}))
    return true;
  // Not CUB: its block and warp headers reach Thrust's `#include MACRO` lines (see collect_headers).
  return is_word_under(name, "cooperative_groups/", ".h") || is_word_under(name, "cuda/", "") ||
         is_word_under(name, "cuda/std/", "") || templates::is_library_header(name);
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("KEVO_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/kevo/cubin";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/kevo/cubin";
}

std::optional<BuildResult> find_cached(const BuildRequest& request) {
  BuildResult r;
  Prepared p;
  if (!prepare(request, r, p)) return std::nullopt;
  return load_cached_result(p.cache_dir, r.cache_key);
}

BuildResult build(const BuildRequest& request) {
  auto start = std::chrono::steady_clock::now();
  BuildResult r;
  Prepared p;
  if (prepare(request, r, p)) {
    std::optional<BuildResult> hit;
    if (request.use_cache) hit = load_cached_result(p.cache_dir, r.cache_key);
    if (hit) {
      r = std::move(*hit);
    } else {
      compile(request, p, r);
      if (request.use_cache && (r.status == BuildStatus::Ok || r.status == BuildStatus::CompileError))
        store_cached_result(p.cache_dir, r);
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace kevo::eval
