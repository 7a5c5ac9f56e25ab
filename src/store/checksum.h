// The campaign file's 64-bit checksum: of a column's values (not of its file bytes, which
// compression changes), of a resume state, of a journal. Each step is a bijection of the state,
// so any single changed word changes the result; and the value is the whole state, so a column's
// checksum continues from the value stored with it when rows are appended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kevo::store {

class Checksum {
 public:
  static constexpr uint64_t kStart = 0x6B65766F2D636D70ull;
  // `seed`: kStart for new data, or a value() to continue from.
  explicit Checksum(uint64_t seed = kStart, uint64_t mul = 0x9E3779B97F4A7C15ull)
      : h_(seed), mul_(mul) {}
  void add(uint64_t v) { h_ = mix(h_ ^ v); }
  void add_bytes(const void* data, size_t n) {
    add(n);
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t lane[4] = {h_, h_ ^ 1, h_ ^ 2, h_ ^ 3};  // four chains: no multiply latency chain
    for (; n >= 32; p += 32, n -= 32)
      for (int k = 0; k < 4; ++k) lane[k] = mix(lane[k] ^ load(p + 8 * k));
    unsigned char tail[32] = {};
    if (n > 0) std::memcpy(tail, p, n);
    for (int k = 0; k < 4; ++k) lane[k] = mix(lane[k] ^ load(tail + 8 * k));
    h_ = lane[0];
    for (int k = 1; k < 4; ++k) h_ = mix(h_ ^ lane[k]);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t mix(uint64_t x) const {
    x *= mul_;
    return x ^ (x >> 29);
  }
  static uint64_t load(const unsigned char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
  }
  uint64_t h_, mul_;
};

}  // namespace kevo::store
