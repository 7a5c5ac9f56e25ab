// Open addressing with linear probing over the first 128 bits of a SHA-256 (hex), at most half full.
#include "search/hash_index.h"

#include <cstring>

namespace kevo::search {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

}  // namespace

HashIndex::Key HashIndex::key_of(std::string_view hash) {
  Key k{0, 0};
  bool hex = hash.size() == 64;
  for (size_t i = 0; hex && i < 32; ++i) {
    const int d = hex_digit(hash[i]);
    if (d < 0) hex = false;
    else (i < 16 ? k.a : k.b) = ((i < 16 ? k.a : k.b) << 4) | static_cast<uint64_t>(d);
  }
  if (hex) return k;
  // Anything else (no kevo hash is) by two independent 64-bit hashes of its bytes.
  k = {0x6B65766F68617368ull, 0x9E3779B97F4A7C15ull};
  for (char c : hash) {
    k.a = mix(k.a ^ static_cast<unsigned char>(c));
    k.b = mix(k.b + static_cast<unsigned char>(c) * 0x100000001b3ull);
  }
  return k;
}

size_t HashIndex::slot_of(Key k) const {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(mix(k.a ^ k.b)) & mask;
  while (slots_[i].id != -1 && (slots_[i].a != k.a || slots_[i].b != k.b)) i = (i + 1) & mask;
  return i;
}

int64_t HashIndex::find(std::string_view hash) const {
  if (slots_.empty()) return -1;
  return slots_[slot_of(key_of(hash))].id;
}

void HashIndex::set(std::string_view hash, int64_t id) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const Key k = key_of(hash);
  Slot& s = slots_[slot_of(k)];
  if (s.id == -1) ++size_;
  s = Slot{k.a, k.b, id};
}

void HashIndex::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
  for (const Slot& s : old)
    if (s.id != -1) slots_[slot_of(Key{s.a, s.b})] = s;
}

}  // namespace kevo::search
