// wal_check.cpp — what the -wal file holds, read by crashsim itself before SQLite sees it
// (store_internal.h: walLossEvidence, walCommittedFrames, walDatabaseImage). Reads only.
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
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/plant.h"
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

// One read of the -wal (one snapshot) and where SQLite's recovery would stop in it.
struct WalScan {
  std::vector<unsigned char> bytes;
  bool header = false;       // a WAL header SQLite would read (magic, page size)
  bool headerValid = false;  // ... whose checksum holds too (else SQLite ignores the log)
  uint32_t pageSize = 0;
  size_t frames = 0;         // whole frames in the file
  size_t stop = 0;           // the first frame SQLite's recovery rejects (frames: none)
  size_t lastCommit = 0;     // frames SQLite keeps: up to and including the last valid commit
  size_t commitsBeyond = 0;  // commit frames of this generation at or after `stop`
  const unsigned char* frame(size_t i) const {
    return bytes.data() + kHeader + i * (kFrameHeader + pageSize);
  }
};

WalScan scanWal(const std::filesystem::path& wal) {
  WalScan w;
  std::error_code ec;
  const auto size = std::filesystem::file_size(wal, ec);
  std::ifstream in(wal, std::ios::binary);
  if (ec || !in) return w;
  w.bytes.resize(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(w.bytes.data()), static_cast<std::streamsize>(w.bytes.size()));
  w.bytes.resize(static_cast<size_t>(in.gcount()));
  if (w.bytes.size() < kHeader) return w;
  const unsigned char* h = w.bytes.data();
  const uint32_t magic = be32(h);
  const uint32_t pageSize = be32(h + 8);
  const uint32_t salt1 = be32(h + 16), salt2 = be32(h + 20);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) != 0 ||
      (salt1 == 0 && salt2 == 0)) {
    return w;  // no WAL header (never written, or reset): nothing SQLite would replay
  }
  const bool magicOk = (magic & 0xFFFFFFFEu) == 0x377f0682u;
  w.header = magicOk;
  w.pageSize = pageSize;
  const bool bigEndian = (magic & 1) != 0;
  w.frames = (w.bytes.size() - kHeader) / (kFrameHeader + pageSize);
  uint32_t s[2] = {0, 0};
  checksum(bigEndian, h, 24, s);
  // A damaged header (its checksum, or a flipped magic number) makes SQLite ignore the whole
  // log: judge every frame as "beyond".
  w.headerValid = magicOk && s[0] == be32(h + 24) && s[1] == be32(h + 28);
  w.stop = w.headerValid ? w.frames : 0;
  if (w.stop != 0) {
    for (size_t i = 0; i < w.frames; ++i) {
      const unsigned char* f = w.frame(i);
      if (be32(f) == 0 || be32(f + 8) != salt1 || be32(f + 12) != salt2) {
        w.stop = i;
        break;
      }
      checksum(bigEndian, f, 8, s);
      checksum(bigEndian, f + kFrameHeader, pageSize, s);
      if (s[0] != be32(f + 16) || s[1] != be32(f + 20)) {
        w.stop = i;
        break;
      }
      if (be32(f + 4) != 0) w.lastCommit = i + 1;
    }
  }
  for (size_t i = w.stop; i < w.frames; ++i) {
    const unsigned char* f = w.frame(i);
    if (be32(f) != 0 && be32(f + 4) != 0 && be32(f + 8) == salt1 && be32(f + 12) == salt2)
      ++w.commitsBeyond;
  }
  return w;
}

// The -shm's WAL-index header (SQLite wal.c WalIndexHdr, 48 bytes in native byte order, twice),
// when both copies agree, it is initialised and its checksum holds.
struct ShmIndex {
  uint32_t mxFrame = 0;  // the last frame of the last commit the index vouches for
  unsigned char salts[8] = {};
};

std::optional<ShmIndex> readShmIndex(const std::filesystem::path& shm) {
  unsigned char h[96];
  std::ifstream in(shm, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return std::nullopt;
  if (std::memcmp(h, h + 48, 48) != 0 || h[12] != 1) return std::nullopt;
  uint32_t s[2] = {0, 0};
  checksum(false, h, 40, s);  // native (little-endian) words, as walIndexTryHdr checks them
  if (s[0] != le32(h + 40) || s[1] != le32(h + 44)) return std::nullopt;
  ShmIndex index;
  index.mxFrame = le32(h + 16);
  std::memcpy(index.salts, h + 32, 8);  // the WAL header's salt bytes, copied as they are
  return index;
}

}  // namespace

bool walIndexAgrees(const std::filesystem::path& wal, const std::filesystem::path& shm) {
  const std::optional<ShmIndex> index = readShmIndex(shm);
  if (!index) return false;
  const WalScan w = scanWal(wal);
  if (index->mxFrame == 0) return true;  // the index vouches for nothing: SQLite reads the file
  return w.header && std::memcmp(index->salts, w.bytes.data() + 16, 8) == 0 &&
         index->mxFrame <= w.lastCommit;
}

std::string walLossEvidence(const std::filesystem::path& wal, const std::filesystem::path& shm) {
  // The index is read before and after the log: a live writer (a read-only command beside a
  // running agent) appends frames before it raises mxFrame and lowers mxFrame before it cuts
  // the log, so two equal readings around the scan describe a log at least that long.
  const std::optional<ShmIndex> index = readShmIndex(shm);
  const WalScan w = scanWal(wal);
  const std::optional<ShmIndex> again = readShmIndex(shm);
  const bool steady = index && again && index->mxFrame == again->mxFrame &&
                      std::memcmp(index->salts, again->salts, 8) == 0;
  // The -shm a crashed writer left: SQLite raises its mxFrame only after the commit's frames
  // are in the -wal (and synced, under FULL or EXTRA: a power cut cannot leave an index ahead
  // of the durable log), a checkpoint that restarts or truncates the log zeroes it first, and a
  // new generation's header is synced before its frames; so valid commits ending before
  // mxFrame (a damaged header: no valid commit) mean frames the index vouched for are gone. Even
  // when a checkpoint had copied them into the database file, SQLite's replay of the shorter log
  // would read the older frames over those pages: a regressed store.
  if (steady && index->mxFrame > w.lastCommit && !planted("store_ignores_shm_index") &&
      (!w.headerValid || std::memcmp(index->salts, w.bytes.data() + 16, 8) == 0)) {
    return "the -shm vouches for " + std::to_string(index->mxFrame) +
           " frames, its valid commits end at frame " + std::to_string(w.lastCommit) +
           ": committed transactions were cut from the log";
  }
  if (w.commitsBeyond < 2) return {};
  return std::to_string(w.commitsBeyond) + " commit frames of the current WAL generation follow " +
         "frame " + std::to_string(w.stop + 1) + " of " + std::to_string(w.frames) + ", where " +
         "SQLite's recovery stops (" + std::to_string(w.lastCommit) +
         " frames kept): committed transactions would be dropped";
}

size_t walCommittedFrames(const std::filesystem::path& wal) { return scanWal(wal).lastCommit; }

std::string walDatabaseImage(const std::filesystem::path& wal) {
  const WalScan w = scanWal(wal);
  if (w.lastCommit == 0)
    throw Error(code::store_data_lost, wal.string() + " holds no committed frame to salvage");
  // The database after the last valid commit: its size in pages (the commit frame's field),
  // each page as the latest frame before it wrote it. A page no frame wrote was in the
  // database file before this WAL generation; that file is gone, so the image is incomplete.
  const size_t pages = be32(w.frame(w.lastCommit - 1) + 4);
  std::string image(pages * w.pageSize, '\0');
  std::vector<bool> written(pages, false);
  for (size_t i = 0; i < w.lastCommit; ++i) {
    const uint32_t pgno = be32(w.frame(i));
    if (pgno == 0 || pgno > pages) continue;  // a page the last commit truncated away
    std::memcpy(image.data() + (pgno - 1) * w.pageSize, w.frame(i) + kFrameHeader, w.pageSize);
    written[pgno - 1] = true;
  }
  for (size_t p = 0; p < pages; ++p)
    if (!written[p])
      throw Error(code::store_data_lost,
                  wal.string() + " does not hold page " + std::to_string(p + 1) + " of " +
                      std::to_string(pages) +
                      ": it was checkpointed into the lost database file; nothing to salvage");
  return image;
}

}  // namespace crashsim::store_detail
