// SHA-256 (FIPS 180-4): content addresses for the compile cache and for candidate sources.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kevo {

// Incremental hashing: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view data) { return update(data.data(), data.size()); }
  std::array<uint8_t, 32> digest();  // finishes the hash; the object must not be updated after
  std::string hex_digest();          // 64 lowercase hex digits

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The hex digest of `data` in one call.
std::string sha256_hex(std::string_view data);

}  // namespace kevo
