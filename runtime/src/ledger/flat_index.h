// flat_index.h — internal open-addressing index used by the ledger scanner and the resume
// plan: (32-bit hash tag, 32-bit value) slots; the keys live in the caller's data (events,
// operations), so lookups never allocate and a table of N entries is 8*2N bytes.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

namespace crashsim::detail {

namespace hash_detail {
inline uint64_t load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint64_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// 64x64 -> 128-bit multiply, folded (the wyhash "mum" step).
inline uint64_t mum(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
}  // namespace hash_detail

// Inlined string hash (wyhash-style; ids are 10–80 bytes, so std::hash's out-of-line
// byte-wise loop dominated the scan). Only table positions depend on it, never results.
inline uint64_t hashView(std::string_view s) {
  using hash_detail::load32;
  using hash_detail::load64;
  using hash_detail::mum;
  constexpr uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL,
                     k2 = 0x8ebc6af09c88c6e3ULL;
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t seed = k0 ^ n;
  uint64_t a = 0, b = 0;
  if (n <= 16) {
    if (n >= 8) {
      a = load64(p);
      b = load64(p + n - 8);
    } else if (n >= 4) {
      a = load32(p);
      b = load32(p + n - 4);
    } else if (n > 0) {
      a = (uint64_t{static_cast<unsigned char>(p[0])} << 16) |
          (uint64_t{static_cast<unsigned char>(p[n >> 1])} << 8) |
          uint64_t{static_cast<unsigned char>(p[n - 1])};
    }
  } else {
    size_t left = n;
    while (left > 16) {
      seed = mum(load64(p) ^ k1, load64(p + 8) ^ seed);
      p += 16;
      left -= 16;
    }
    a = load64(p + left - 16);
    b = load64(p + left - 8);
  }
  return mum(k2 ^ n, mum(a ^ k1, b ^ seed));
}

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

}  // namespace crashsim::detail
