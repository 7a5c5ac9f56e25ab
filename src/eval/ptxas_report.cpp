// Parsing of ptxas's verbose report by labels rather than by column, so that the layout changes
// between CUDA releases (prefixes, "used N barriers", cmem lines) do not break it.
#include "eval/ptxas_report.h"

#include <cstring>
#include <map>

namespace kevo::eval {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The number written just before `pos` ("2048" in "2048 bytes smem"); ptxas of old releases
// wrote shared memory as a sum ("4096+16 bytes smem"), which is added up.
int64_t number_before(std::string_view line, size_t pos) {
  while (pos > 0 && line[pos - 1] == ' ') --pos;
  int64_t total = 0;
  for (;;) {
    size_t end = pos;
    while (pos > 0 && is_digit(line[pos - 1])) --pos;
    int64_t value = 0;
    for (size_t i = pos; i < end && value < (int64_t{1} << 50); ++i) value = value * 10 + (line[i] - '0');
    total += value;
    if (pos > 0 && line[pos - 1] == '+' && pos < end) {
      --pos;
      continue;
    }
    return total;
  }
}

// The number before the first occurrence of `label` in `line`, or 0.
int64_t labelled(std::string_view line, std::string_view label) {
  size_t at = line.find(label);
  return at == std::string_view::npos ? 0 : number_before(line, at);
}

// The number after `label` ("used 1 barriers" has it after).
int64_t after(std::string_view line, std::string_view label) {
  size_t at = line.find(label);
  if (at == std::string_view::npos) return 0;
  int64_t value = 0;
  for (size_t i = at + label.size(); i < line.size() && is_digit(line[i]) && value < (int64_t{1} << 50); ++i)
    value = value * 10 + (line[i] - '0');
  return value;
}

// The sum of every "N bytes cmem[K]" on a line.
int64_t constant_banks(std::string_view line) {
  int64_t total = 0;
  for (size_t at = line.find(" bytes cmem["); at != std::string_view::npos; at = line.find(" bytes cmem[", at + 1))
    total += number_before(line, at);
  return total;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

struct FrameProperties {
  int64_t stack = 0, spill_stores = 0, spill_loads = 0;
};

}  // namespace

const KernelResources* PtxasReport::find(std::string_view name) const {
  for (const KernelResources& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

PtxasReport parse_ptxas_report(std::string_view log) {
  PtxasReport report;
  // "Function properties for F" is followed by F's frame line; F may be a kernel or a
  // non-inlined device function, and CUDA 13 prints device functions after the kernels.
  std::map<std::string, FrameProperties, std::less<>> frames;
  std::string properties_of;  // the function whose frame line comes next
  KernelResources* current = nullptr;
  constexpr std::string_view kEntry = "Compiling entry function '", kProperties = "Function properties for ";

  size_t begin = 0;
  while (begin <= log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(begin, end - begin);
    begin = end + 1;
    if (line.find("ptxas") == std::string_view::npos && line.find("bytes stack frame") == std::string_view::npos)
      continue;

    if (size_t at = line.find(kEntry); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + kEntry.size());
      report.kernels.push_back({});
      current = &report.kernels.back();
      current->name = std::string(rest.substr(0, rest.find('\'')));
    } else if (size_t at = line.find(kProperties); at != std::string_view::npos) {
      properties_of = std::string(trim(line.substr(at + kProperties.size())));
    } else if (line.find("bytes stack frame") != std::string_view::npos) {
      if (properties_of.empty()) continue;
      frames[properties_of] = {labelled(line, " bytes stack frame"), labelled(line, " bytes spill stores"),
                               labelled(line, " bytes spill loads")};
      properties_of.clear();
    } else if (line.find(": Used ") != std::string_view::npos && line.find(" registers") != std::string_view::npos) {
      if (!current) continue;
      current->registers = static_cast<int>(after(line, ": Used "));
      current->barriers = static_cast<int>(after(line, "used "));  // lowercase: "used 1 barriers"
      current->shared_bytes = labelled(line, " bytes smem");
      current->constant_bytes = constant_banks(line);
    } else if (line.find(" bytes gmem") != std::string_view::npos) {
      report.global_bytes += labelled(line, " bytes gmem");
      report.module_constant_bytes += constant_banks(line);
    }
  }
  for (KernelResources& k : report.kernels) {
    auto it = frames.find(k.name);
    if (it == frames.end()) continue;
    k.stack_frame_bytes = it->second.stack;
    k.spill_store_bytes = it->second.spill_stores;
    k.spill_load_bytes = it->second.spill_loads;
  }
  return report;
}

namespace {

template <class T>
bool read_le(std::string_view bytes, uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));  // ELF of CUDA is little-endian, as is the host
  return true;
}

}  // namespace

std::vector<CubinSection> cubin_sections(std::string_view cubin) {
  if (cubin.size() < 64 || cubin.substr(0, 4) != "\x7f" "ELF" || cubin[4] != 2 /* ELFCLASS64 */) return {};
  uint64_t section_table = 0;
  uint16_t entry_size = 0, count = 0, names_index = 0;
  if (!read_le(cubin, 0x28, section_table) || !read_le(cubin, 0x3a, entry_size) ||
      !read_le(cubin, 0x3c, count) || !read_le(cubin, 0x3e, names_index) || entry_size < 64 ||
      names_index >= count)
    return {};
  auto section = [&](uint16_t i, uint32_t& name, uint32_t& type, uint64_t& offset, uint64_t& size) {
    uint64_t base = section_table + uint64_t{i} * entry_size;
    return read_le(cubin, base, name) && read_le(cubin, base + 4, type) && read_le(cubin, base + 24, offset) &&
           read_le(cubin, base + 32, size);
  };
  uint32_t unused, type;
  uint64_t names_offset, names_size;
  if (!section(names_index, unused, type, names_offset, names_size) || names_offset > cubin.size() ||
      names_size > cubin.size() - names_offset)
    return {};
  std::string_view names = cubin.substr(names_offset, names_size);
  std::vector<CubinSection> out;
  for (uint16_t i = 0; i < count; ++i) {
    uint32_t name_at;
    uint64_t offset, size;
    if (!section(i, name_at, type, offset, size) || name_at >= names.size()) return {};
    std::string_view name = names.substr(name_at);
    CubinSection s{std::string(name.substr(0, name.find('\0'))), size, {}};
    constexpr uint32_t kNoBits = 8;  // SHT_NOBITS: a size, no bytes in the file
    if (type != kNoBits && offset <= cubin.size() && size <= cubin.size() - offset) s.bytes = cubin.substr(offset, size);
    out.push_back(std::move(s));
  }
  return out;
}

void add_constant_banks_from_cubin(PtxasReport& report, std::string_view cubin) {
  std::map<std::string, int64_t, std::less<>> per_kernel;
  int64_t module_bytes = 0;
  constexpr std::string_view kPrefix = ".nv.constant";
  for (const CubinSection& section : cubin_sections(cubin)) {
    std::string_view name = section.name;
    if (name.substr(0, kPrefix.size()) != kPrefix) continue;
    size_t digits = kPrefix.size();
    while (digits < name.size() && is_digit(name[digits])) ++digits;
    if (digits == kPrefix.size()) continue;
    if (digits == name.size())
      module_bytes += static_cast<int64_t>(section.size);
    else if (name[digits] == '.')
      per_kernel[std::string(name.substr(digits + 1))] += static_cast<int64_t>(section.size);
  }
  for (KernelResources& k : report.kernels) {
    auto it = per_kernel.find(k.name);
    if (k.constant_bytes == 0 && it != per_kernel.end()) k.constant_bytes = it->second;
  }
  if (report.module_constant_bytes == 0) report.module_constant_bytes = module_bytes;
}

}  // namespace kevo::eval
