// flat_index.h — internal open-addressing index used by the ledger scanner and the resume
// plan: (32-bit hash tag, 32-bit value) slots; the keys live in the caller's data (events,
// operations), so lookups never allocate and a table of N entries is 8*2N bytes.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

namespace crashsim::detail {

inline uint64_t hashView(std::string_view s) { return std::hash<std::string_view>{}(s); }

inline uint64_t mix(uint64_t a, uint64_t b) {
  // Order-sensitive combination of two 64-bit hashes (pair key, so "a"+"bc" != "ab"+"c").
  uint64_t h = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

// Open-addressing index from a 64-bit hash to a uint32 value; key equality is decided by the
// caller (the key lives in the events / operations, not in the table).
class FlatIndex {
 public:
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();

  explicit FlatIndex(size_t expected = 0) { rehash(expected); }

  // Returns the stored value for a key with this hash satisfying eq, or kEmpty.
  template <class Eq>
  uint32_t find(uint64_t hash, Eq&& eq) const {
    const uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kEmpty) return kEmpty;
      if (s.tag == tag && eq(s.value)) return s.value;
    }
  }

  // Inserts (hash → value); the key must not be present. hashOf(value) recomputes the hash
  // of a stored value when the table grows.
  template <class HashOf>
  void insert(uint64_t hash, uint32_t value, HashOf&& hashOf) {
    if ((size_ + 1) * 10 > slots_.size() * 7) grow(hashOf);
    place(hash, value);
    ++size_;
  }

  // Replaces the value stored for an existing key (same hash, eq matches).
  template <class Eq>
  void assign(uint64_t hash, uint32_t value, Eq&& eq) {
    const uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kEmpty) return;
      if (s.tag == tag && eq(s.value)) {
        s.value = value;
        return;
      }
    }
  }

  void prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }

 private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t value = kEmpty;
  };

  void rehash(size_t expected) {
    size_t want = std::max<size_t>(16, expected + expected / 2 + 1);
    slots_.assign(std::bit_ceil(want), Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
  }

  void place(uint64_t hash, uint32_t value) {
    const uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].value == kEmpty) {
        slots_[i] = Slot{tag, value};
        return;
      }
    }
  }

  template <class HashOf>
  void grow(HashOf&& hashOf) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.value != kEmpty) place(hashOf(s.value), s.value);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Prefetches the memory of a RuntimeEvent-sized object and of a string's characters.
inline void prefetchBytes(const void* p) { __builtin_prefetch(p); }

// Prefetches every cache line of the bytes [begin, end).
inline void prefetchRange(const void* begin, const void* end) {
  const char* p = static_cast<const char*>(begin);
  const char* last = static_cast<const char*>(end) - 1;
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  for (uintptr_t line = first; line <= reinterpret_cast<uintptr_t>(last); line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(line));
  }
}

}  // namespace crashsim::detail
