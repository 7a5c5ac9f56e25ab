// Reading a CUBIN's ELF section headers and symbol table for the state a module keeps.
#include "eval/module_state.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace kevo::eval {

namespace {

// ELF64 constants and record layouts (the System V gABI; every CUBIN is ELF64 little-endian).
constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
constexpr int kClass64 = 2, kLittleEndian = 1;
constexpr uint32_t kSymtab = 2;  // SHT_SYMTAB
constexpr uint32_t kNoBits = 8;  // SHT_NOBITS: a section that occupies no bytes in the file
constexpr uint16_t kUndefined = 0;
constexpr size_t kHeaderBytes = 64, kSectionBytes = 64, kSymbolBytes = 24;

// The device heap's entry points as a CUBIN names them (undefined symbols the driver resolves).
constexpr const char* kHeapFunctions[] = {"malloc", "free", "__nv_aligned_device_malloc"};

[[noreturn]] void bad(const std::string& why) { throw std::invalid_argument("not a CUBIN: " + why); }

template <typename T>
T read(std::string_view bytes, uint64_t at) {
  if (at > bytes.size() || bytes.size() - at < sizeof(T)) bad("a table runs past the end of the file");
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0;
  uint64_t entry_size = 0;
};

// The NUL-terminated string at `at` of the string table `table`.
std::string string_at(std::string_view bytes, const Section& table, uint64_t at) {
  if (at >= table.size || table.offset > bytes.size() || table.size > bytes.size() - table.offset)
    bad("a name lies outside its string table");
  std::string_view s = bytes.substr(table.offset + at, table.size - at);
  return std::string(s.substr(0, s.find('\0')));
}

std::vector<Section> sections_of(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kElfMagic, 4) != 0) bad("no ELF header");
  if (bytes[4] != kClass64 || bytes[5] != kLittleEndian) bad("not a 64-bit little-endian ELF");
  const uint64_t table = read<uint64_t>(bytes, 0x28);
  const uint16_t entry = read<uint16_t>(bytes, 0x3A), count = read<uint16_t>(bytes, 0x3C);
  const uint16_t names = read<uint16_t>(bytes, 0x3E);
  if (count == 0) return {};
  if (entry < kSectionBytes || names >= count) bad("a malformed section header table");
  std::vector<Section> out(count);
  std::vector<uint32_t> name_at(count);
  for (uint16_t i = 0; i < count; ++i) {
    const uint64_t at = table + static_cast<uint64_t>(i) * entry;
    name_at[i] = read<uint32_t>(bytes, at);
    out[i].type = read<uint32_t>(bytes, at + 4);
    out[i].offset = read<uint64_t>(bytes, at + 0x18);
    out[i].size = read<uint64_t>(bytes, at + 0x20);
    out[i].link = read<uint32_t>(bytes, at + 0x28);
    out[i].entry_size = read<uint64_t>(bytes, at + 0x38);
  }
  for (uint16_t i = 0; i < count; ++i) out[i].name = string_at(bytes, out[names], name_at[i]);
  return out;
}

bool is_writable_module_memory(const std::string& section) {
  return section == ".nv.global" || section == ".nv.global.init";
}

}  // namespace

std::string ModuleState::describe() const {
  auto listed = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  std::string out;
  if (writable_bytes > 0)
    out = "writable module memory (" + std::to_string(writable_bytes) + " bytes" +
          (variables.empty() ? "" : ": " + listed(variables)) + ")";
  if (!heap_calls.empty()) out += (out.empty() ? "" : " and ") + std::string("the device heap (") + listed(heap_calls) + ")";
  return out;
}

ModuleState inspect_module_state(std::string_view bytes) {
  const std::vector<Section> sections = sections_of(bytes);
  ModuleState state;
  std::vector<int> writable_of(sections.size(), -1);  // section index -> its entry in state.writable
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    if (!is_writable_module_memory(s.name) || s.size == 0) continue;
    WritableSection w;
    w.name = s.name;
    w.bytes = s.size;
    if (s.type != kNoBits) {
      if (s.offset > bytes.size() || s.size > bytes.size() - s.offset) bad("a section runs past the end of the file");
      w.image = std::string(bytes.substr(s.offset, s.size));
    }
    writable_of[i] = static_cast<int>(state.writable.size());
    state.writable.push_back(std::move(w));
    state.writable_bytes += s.size;
  }
  for (const Section& symtab : sections) {
    if (symtab.type != kSymtab) continue;
    if (symtab.link >= sections.size() || symtab.entry_size < kSymbolBytes) bad("a malformed symbol table");
    const Section& names = sections[symtab.link];
    for (uint64_t at = 0; at + kSymbolBytes <= symtab.size; at += symtab.entry_size) {
      const uint64_t sym = symtab.offset + at;
      const std::string name = string_at(bytes, names, read<uint32_t>(bytes, sym));
      const uint16_t in_section = read<uint16_t>(bytes, sym + 6);
      if (in_section == kUndefined) {
        for (const char* heap : kHeapFunctions)
          if (name == heap) state.heap_calls.push_back(name);
      } else if (in_section < sections.size() && writable_of[in_section] >= 0 && !name.empty() &&
                 name != sections[in_section].name) {
        state.variables.push_back(name);
        const uint64_t offset = read<uint64_t>(bytes, sym + 8), size = read<uint64_t>(bytes, sym + 16);
        WritableSection& w = state.writable[static_cast<size_t>(writable_of[in_section])];
        if (offset > w.bytes || size > w.bytes - offset) bad("a symbol lies outside its section");
        w.symbols.push_back({name, offset, size});
      }
    }
  }
  std::sort(state.variables.begin(), state.variables.end());
  std::sort(state.heap_calls.begin(), state.heap_calls.end());
  return state;
}

}  // namespace kevo::eval
