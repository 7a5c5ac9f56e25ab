// A run's duplicate index: source hash -> the first variant of the run with that source, kept
// compact (24 bytes a source: 128 bits of the SHA-256 and the id, open addressing), since a
// million-variant campaign keeps one entry per distinct candidate in memory.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kevo::search {

class HashIndex {
 public:
  // The variant recorded for `hash`, or -1.
  int64_t find(std::string_view hash) const;
  bool contains(std::string_view hash) const { return find(hash) != -1; }
  // Records `id` (any but -1) for `hash`, replacing what was recorded.
  void set(std::string_view hash, int64_t id);
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t a = 0, b = 0;
    int64_t id = -1;  // -1: empty
  };
  struct Key {
    uint64_t a, b;
  };
  static Key key_of(std::string_view hash);
  size_t slot_of(Key k) const;
  void grow();

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace kevo::search
