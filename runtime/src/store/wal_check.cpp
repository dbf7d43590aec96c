// wal_check.cpp — evidence that SQLite's WAL recovery will drop committed frames
// (store_internal.h, walLossEvidence). Reads only.
//
// SQLite replays a WAL up to the first frame whose salts or cumulative checksum do not match
// and silently ignores everything after it. A flipped bit or a zeroed frame in the middle of
// the log therefore drops every later commit, acknowledged or not, and a store would run the
// tools of those commits again. Frames written since the WAL's last restart carry the header's
// two salts; the batching VFS grows the file with zeros, and a restart writes new salts, so a
// frame beyond the stop point that still carries the current salts was written in this WAL
// generation. Under synchronous=FULL at most one commit (the one in flight at a crash or power
// cut) can be unsynced, so two or more commit frames with the current salts beyond the stop
// point mean an acknowledged commit is being dropped: definite loss. One such commit frame is
// ambiguous (a torn in-flight commit looks the same) and, like a WAL cut at a frame boundary, is
// not detectable here (README, fault model).
#include <cstdint>
#include <fstream>
#include <vector>

#include "store/store_internal.h"

namespace crashsim::store_detail {
namespace {

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint32_t le32(const unsigned char* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[0]};
}

// SQLite's WAL checksum (wal.c walChecksumBytes) over n bytes (a multiple of 8), continuing s.
void checksum(bool bigEndian, const unsigned char* p, size_t n, uint32_t s[2]) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint32_t x0 = bigEndian ? be32(p + i) : le32(p + i);
    const uint32_t x1 = bigEndian ? be32(p + i + 4) : le32(p + i + 4);
    s[0] += x0 + s[1];
    s[1] += x1 + s[0];
  }
}

constexpr size_t kHeader = 32, kFrameHeader = 24;

}  // namespace

std::string walLossEvidence(const std::filesystem::path& wal) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(wal, ec);
  std::ifstream in(wal, std::ios::binary);
  if (ec || !in) return {};
  std::vector<unsigned char> bytes(static_cast<size_t>(size));  // one read: one snapshot
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (bytes.size() < kHeader) return {};
  const unsigned char* h = bytes.data();
  const uint32_t magic = be32(h);
  const uint32_t pageSize = be32(h + 8);
  const uint32_t salt1 = be32(h + 16), salt2 = be32(h + 20);
  if ((magic & 0xFFFFFFFEu) != 0x377f0682u || pageSize < 512 || pageSize > 65536 ||
      (pageSize & (pageSize - 1)) != 0) {
    return {};  // no WAL header (never written, or reset): nothing SQLite would replay
  }
  const bool bigEndian = (magic & 1) != 0;
  const size_t frameSize = kFrameHeader + pageSize;
  const size_t frames = (bytes.size() - kHeader) / frameSize;
  uint32_t s[2] = {0, 0};
  checksum(bigEndian, h, 24, s);
  // A damaged header makes SQLite ignore the whole log: judge every frame as "beyond".
  size_t stop = (s[0] == be32(h + 24) && s[1] == be32(h + 28)) ? frames : 0;
  size_t lastCommit = 0;  // frames SQLite keeps (up to and including the last valid commit)
  if (stop != 0) {
    for (size_t i = 0; i < frames; ++i) {
      const unsigned char* f = h + kHeader + i * frameSize;
      if (be32(f) == 0 || be32(f + 8) != salt1 || be32(f + 12) != salt2) {
        stop = i;
        break;
      }
      checksum(bigEndian, f, 8, s);
      checksum(bigEndian, f + kFrameHeader, pageSize, s);
      if (s[0] != be32(f + 16) || s[1] != be32(f + 20)) {
        stop = i;
        break;
      }
      if (be32(f + 4) != 0) lastCommit = i + 1;
    }
  }
  size_t commitsBeyond = 0;
  for (size_t i = stop; i < frames; ++i) {
    const unsigned char* f = h + kHeader + i * frameSize;
    if (be32(f) != 0 && be32(f + 4) != 0 && be32(f + 8) == salt1 && be32(f + 12) == salt2)
      ++commitsBeyond;
  }
  if (commitsBeyond < 2) return {};
  return std::to_string(commitsBeyond) + " commit frames of the current WAL generation follow " +
         "frame " + std::to_string(stop + 1) + " of " + std::to_string(frames) + ", where " +
         "SQLite's recovery stops (" + std::to_string(lastCommit) +
         " frames kept): committed transactions would be dropped";
}

}  // namespace crashsim::store_detail
