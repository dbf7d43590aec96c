// The corruption case: seeded damage to a crashed store (see
// crashsim/harness/corruption_injector.h). Which damage is detectable follows the README's rules
// ("Damaged stores fail closed"), computed here from the store files as they were before the
// damage, never from the runtime's answer.
#include "crashsim/harness/corruption_injector.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "crashsim/codes.h"
#include "modes/corruption_store.h"
#include "modes/state_seed.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

namespace {

constexpr const char* kDb = "runtime.sqlite";
constexpr const char* kWal = "runtime.sqlite-wal";
constexpr const char* kManifest = "runtime.manifest";
constexpr size_t kWalHeader = 32, kFrameHeader = 24;

std::string readBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

uint32_t be32(const std::string& b, size_t at) {
  auto u = [&](size_t i) { return uint32_t{static_cast<unsigned char>(b[at + i])}; };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

// The WAL's layout as SQLite's file format documents it: page size and, per complete frame,
// whether it is a commit frame of the header's generation (its salts).
struct WalLayout {
  bool present = false;  // a -wal with a complete header
  size_t frameSize = 0;
  std::vector<bool> commit;  // per complete frame
  size_t commitsAfter(size_t frame) const {
    size_t n = 0;
    for (size_t i = frame + 1; i < commit.size(); ++i) n += commit[i];
    return n;
  }
  size_t commits() const {
    size_t n = 0;
    for (bool c : commit) n += c;
    return n;
  }
  // The frames SQLite's replay keeps when it stops at `stop`: up to the last commit before it.
  size_t keptBefore(size_t stop) const {
    size_t kept = 0;
    for (size_t i = 0; i < std::min(stop, commit.size()); ++i)
      if (commit[i]) kept = i + 1;
    return kept;
  }
};

uint32_t le32(const std::string& b, size_t at) {
  auto u = [&](size_t i) { return uint32_t{static_cast<unsigned char>(b[at + i])}; };
  return (u(3) << 24) | (u(2) << 16) | (u(1) << 8) | u(0);
}

// The last WAL frame the -shm a crash left vouches for (SQLite's file format: the WAL-index
// header, 48 bytes in native byte order written twice at the start of the -shm; isInit at 12,
// mxFrame at 16, the WAL header's salt bytes at 32), when both copies agree, it is initialised
// and it names this WAL's salts; 0 otherwise (no -shm: a clean close, a copy without it).
uint32_t shmVouchedFrames(const fs::path& shm, const std::string& walBefore) {
  const std::string h = fs::exists(shm) ? readBytes(shm) : std::string();
  if (h.size() < 96 || h.compare(0, 48, h, 48, 48) != 0 || h[12] != 1) return 0;
  if (walBefore.size() < kWalHeader || h.compare(32, 8, walBefore, 16, 8) != 0) return 0;
  return le32(h, 16);
}

WalLayout walLayout(const std::string& wal) {
  WalLayout w;
  if (wal.size() < kWalHeader) return w;
  const uint32_t pageSize = be32(wal, 8);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) != 0) return w;
  w.present = true;
  w.frameSize = kFrameHeader + pageSize;
  const uint32_t salt1 = be32(wal, 16), salt2 = be32(wal, 20);
  for (size_t at = kWalHeader; at + w.frameSize <= wal.size(); at += w.frameSize)
    w.commit.push_back(be32(wal, at + 4) != 0 && be32(wal, at + 8) == salt1 &&
                       be32(wal, at + 12) == salt2);
  return w;
}

// Whether the database file alone (without its WAL) holds the schema the manifest records:
// the header's user_version (offset 60) against the manifest's schemaVersion. No manifest: the
// runtime has no record to detect a loss by, so the answer is "holds" (nothing to detect).
bool dbAloneHoldsSchema(const fs::path& store) {
  int recorded = 0;
  try {
    recorded = nlohmann::json::parse(readBytes(store / kManifest)).value("schemaVersion", 0);
  } catch (...) {
    return true;
  }
  const std::string db = readBytes(store / kDb);
  if (db.size() < 100 || db.compare(0, 16, std::string("SQLite format 3\0", 16)) != 0) return false;
  return static_cast<int>(be32(db, 60)) >= recorded;
}

// Whether a run header of the crashed store records its workspace identity (plain SQLite,
// read-only; the damage is not applied yet).
bool runsRecordAWorkspace(const fs::path& db) {
  sqlite3* h = nullptr;
  bool any = false;
  if (sqlite3_open_v2(("file:" + db.string() + "?mode=ro").c_str(), &h,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h,
                           "SELECT 1 FROM agent_runs WHERE "
                           "json_extract(header_json, '$.workspaceIdentity') IS NOT NULL LIMIT 1",
                           -1, &st, nullptr) == SQLITE_OK)
      any = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
  }
  sqlite3_close_v2(h);
  return any;
}

// Damage to one byte range of a file: a flipped bit or zeroed bytes.
struct FileDamage {
  std::string detail;
  size_t frame = SIZE_MAX;  // the WAL frame the damage falls in (SIZE_MAX: header / none)
  bool applied = false;
};

FileDamage flipBit(const fs::path& file, Choices& ch) {
  std::string b = readBytes(file);
  if (b.empty()) return {"the file is empty: nothing to flip"};
  const size_t at = ch.below(b.size());
  const int bit = static_cast<int>(ch.below(8));
  b[at] = static_cast<char>(b[at] ^ (1 << bit));
  writeBytes(file, b);
  return {fmt::format("byte {} of {}, bit {}", at, b.size(), bit), SIZE_MAX, true};
}

}  // namespace

std::vector<uint64_t> corruptSeeds(const CaseId& primary, uint64_t sweepSeed, int states) {
  // Below 10^6 so ids stay short.
  const uint64_t base = stateSeedHash("corrupt:", primary, sweepSeed) % 1000000;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < states; ++i) seeds.push_back(base + static_cast<uint64_t>(i));
  return seeds;
}

namespace {

// One damage being applied (applyCorruption): the store's files as the crash left them, and the
// record of what the damage did.
class Injection {
 public:
  Injection(const Injection&) = delete;
  Injection& operator=(const Injection&) = delete;
  Injection(const fs::path& store, uint64_t seed)
      : ch_{seed},
        db_(store / kDb),
        wal_(store / kWal),
        walBefore_(fs::exists(wal_) ? readBytes(wal_) : std::string()),
        layout_(walLayout(walBefore_)),
        schemaInDb_(dbAloneHoldsSchema(store)),
        vouched_(shmVouchedFrames(store / "runtime.sqlite-shm", walBefore_)) {
    a_.record.kind = std::string(kCorruptionKinds[seed % kCorruptionKinds.size()]);
  }

  AppliedCorruption apply() {
    const std::string& kind = a_.record.kind;
    // The damages to the database file's own pages. A small store's data lives in its WAL, so
    // damage to the database file alone would hit only pages the WAL supersedes: first fold the WAL
    // in, as a clean close or an auto-checkpoint (past 16 MiB) leaves a store, so the damage lands
    // on the ledger's own pages. (db_empty_beside_wal needs the WAL as the crash left it.)
    constexpr std::array kDamageCheckpointedPages = {"db_bitflip", "db_zero_page", "db_truncate"};
    if (std::find(kDamageCheckpointedPages.begin(), kDamageCheckpointedPages.end(), kind) !=
        kDamageCheckpointedPages.end()) {
      Db(db_).exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    if (kind == "db_bitflip" || kind == "db_zero_page" || kind == "db_truncate")
      damageDbPages();
    else if (kind == "wal_bitflip" || kind == "wal_zero_frame")
      damageWalFrame();
    else if (kind == "wal_truncate" || kind == "wal_cut_at_commit")
      cutWalSomewhere();
    else if (kind == "db_empty_beside_wal")
      emptyDbBesideWal();
    else if (kind == "workspace_wrong")
      giveWrongWorkspace();
    else if (kind == "wal_delete")
      deleteWal();
    else
      editRows();
    return a_;
  }

 private:
  // The -shm vouches for frames the damage took (replay keeps `kept` frames): committed
  // transactions are gone, store_wal_frames_lost before SQLite opens the store (README).
  bool shmShowsLoss(size_t kept) {
    if (vouched_ <= kept) return false;
    r_.detectable = true;
    a_.expectedCode = std::string(code::store_wal_frames_lost);
    return true;
  }

  // Every WAL frame is lost from `frame` on (SQLite's replay stops there): detectable when two
  // commits of this generation follow it (README), when nothing of the schema survives, or when
  // the -shm vouches for a commit at or after it.
  void walStopAt(size_t frame, const std::string& what) {
    r_.detail = what;
    const size_t after = frame == SIZE_MAX ? layout_.commits() : layout_.commitsAfter(frame);
    const size_t before = frame == SIZE_MAX ? 0 : layout_.commits() - after;
    r_.detectable = after >= 2 || (!schemaInDb_ && before == 0 && layout_.commits() > 0);
    shmShowsLoss(frame == SIZE_MAX ? 0 : layout_.keptBefore(frame));
    a_.mayGoUnnoticed = !r_.detectable && layout_.commits() > 0;
  }

  // The WAL cut to `to` bytes.
  void cutWal(size_t to, const std::string& how) {
    fs::resize_file(wal_, to);
    const size_t whole = to < kWalHeader ? 0 : (to - kWalHeader) / layout_.frameSize;
    size_t kept = 0;  // commit frames that survive the cut
    for (size_t i = 0; i < std::min(whole, layout_.commit.size()); ++i) kept += layout_.commit[i];
    r_.detail = fmt::format("WAL cut from {} to {} bytes{} ({} of {} commits kept)",
                            walBefore_.size(), to, how, kept, layout_.commits());
    // Without the -shm a cut looks like a crash before the lost commits (README): only a cut
    // that takes the schema itself is detectable (the manifest records it).
    r_.detectable = !schemaInDb_ && kept == 0 && layout_.commits() > 0;
    shmShowsLoss(layout_.keptBefore(whole));
    a_.mayGoUnnoticed = !r_.detectable && kept < layout_.commits();
  }

  // db_bitflip, db_zero_page, db_truncate: the database file's own (checkpointed) pages.
  void damageDbPages() {
    if (r_.kind == "db_bitflip") {
      auto d = flipBit(db_, ch_);
      r_.detail = "runtime.sqlite (checkpointed) " + d.detail;
      a_.mayGoUnnoticed = d.applied;  // a bit inside a value SQLite does not checksum
    } else if (r_.kind == "db_zero_page") {
      std::string b = readBytes(db_);
      if (b.size() < 100) {
        r_.detail = "runtime.sqlite has no page to zero";
      } else {
        uint32_t ps = (static_cast<uint32_t>(static_cast<unsigned char>(b[16])) << 8) |
                      static_cast<unsigned char>(b[17]);
        if (ps == 1) ps = 65536;
        if (ps < 512) ps = 4096;
        const size_t pages = (b.size() + ps - 1) / ps, page = ch_.below(pages);
        const size_t from = page * ps, to = std::min(b.size(), from + ps);
        std::fill(b.begin() + static_cast<std::ptrdiff_t>(from),
                  b.begin() + static_cast<std::ptrdiff_t>(to), '\0');
        writeBytes(db_, b);
        r_.detail =
            fmt::format("runtime.sqlite (checkpointed) page {} of {} zeroed", page + 1, pages);
        // A live page fails SQLite's checks or the decoder; a page the WAL supersedes, or a free
        // one, changes nothing: either way the store must not recover to another outcome.
      }
    } else if (r_.kind == "db_truncate") {
      const auto size = fs::exists(db_) ? fs::file_size(db_) : 0;
      const auto to = ch_.below(size);
      if (size > 0) fs::resize_file(db_, to);
      r_.detail = fmt::format("runtime.sqlite (checkpointed) cut from {} to {} bytes", size, to);
      // An empty database file makes SQLite start a new database and drop the WAL: the manifest
      // records a store, so that is data lost. A shorter file loses only pages the WAL does not
      // supersede, which SQLite reads as zeros: refused, or nothing changed.
      r_.detectable = size > 0 && to == 0;
    }
  }

  // wal_bitflip, wal_zero_frame: one WAL frame.
  void damageWalFrame() {
    if (!layout_.present || layout_.commit.empty()) {
      r_.detail = "no WAL frames to damage";
    } else if (r_.kind == "wal_bitflip") {
      std::string b = walBefore_;
      const size_t at = ch_.below(b.size());
      const int bit = static_cast<int>(ch_.below(8));
      b[at] = static_cast<char>(b[at] ^ (1 << bit));
      writeBytes(wal_, b);
      const size_t frame = at < kWalHeader ? SIZE_MAX : (at - kWalHeader) / layout_.frameSize;
      if (frame != SIZE_MAX && frame >= layout_.commit.size()) {
        r_.detail = fmt::format("WAL byte {} (after the last complete frame), bit {}", at, bit);
      } else {
        walStopAt(frame, frame == SIZE_MAX
                             ? fmt::format("WAL header byte {}, bit {}", at, bit)
                             : fmt::format("WAL frame {} of {}, byte {}, bit {}", frame + 1,
                                           layout_.commit.size(), at, bit));
      }
    } else {
      std::string b = walBefore_;
      const size_t frame = ch_.below(layout_.commit.size());
      const size_t from = kWalHeader + frame * layout_.frameSize;
      std::fill(b.begin() + static_cast<std::ptrdiff_t>(from),
                b.begin() + static_cast<std::ptrdiff_t>(from + layout_.frameSize), '\0');
      writeBytes(wal_, b);
      walStopAt(frame, fmt::format("WAL frame {} of {} zeroed", frame + 1, layout_.commit.size()));
    }
  }

  // wal_truncate, wal_cut_at_commit: the WAL cut short.
  void cutWalSomewhere() {
    if (r_.kind == "wal_truncate") {
      if (walBefore_.empty() || !layout_.present) {
        r_.detail = "no WAL to cut";
      } else {
        cutWal(ch_.below(walBefore_.size()), "");
      }
    } else if (r_.kind == "wal_cut_at_commit") {
      // The cut the WAL alone cannot tell from a crash: exactly at the end of the commit before
      // the last (issue #45 §9), the -shm the crash left kept.
      if (layout_.commits() < 1) {
        r_.detail = "no WAL commit to cut";
      } else {
        size_t to = kWalHeader, seen = 0;
        for (size_t i = 0; i < layout_.commit.size(); ++i)
          if (layout_.commit[i] && ++seen < layout_.commits())
            to = kWalHeader + (i + 1) * layout_.frameSize;
        cutWal(to, " (at a commit boundary, the -shm kept)");
      }
    }
  }

  void emptyDbBesideWal() {
    // A database file of 0 bytes beside its WAL (delayed allocation, a botched copy): SQLite
    // would delete the WAL on open; the host must refuse first and keep it (issue #45 §1).
    fs::resize_file(db_, 0);
    r_.detail =
        fmt::format("runtime.sqlite cut to 0 bytes beside a WAL of {} commits", layout_.commits());
    r_.detectable = true;
    a_.expectedCode = std::string(layout_.commits() > 0 ? code::store_database_empty_wal_holds_data
                                                        : code::store_data_lost);
  }

  void giveWrongWorkspace() {
    // The store is intact; recovery is handed a directory that is not its workspace (issue #45
    // §2): the workspace's files without its marker, or with another workspace's marker.
    // Another workspace's marker is a mismatch only against a run that recorded its workspace.
    const bool other = ch_.below(2) == 1 && runsRecordAWorkspace(db_);
    a_.wrongWorkspace = other ? WrongWorkspace::otherMarker : WrongWorkspace::unmarked;
    r_.detail = a_.wrongWorkspace == WrongWorkspace::unmarked
                    ? "recovery given a copy of the workspace without its marker"
                    : "recovery given a copy of the workspace marked as another workspace";
    r_.detectable = true;
    a_.expectedCode = std::string(a_.wrongWorkspace == WrongWorkspace::unmarked
                                      ? code::workspace_unmarked
                                      : code::workspace_identity_mismatch);
  }

  void deleteWal() {
    if (!fs::exists(wal_)) {
      r_.detail = "no WAL to delete";
    } else {
      fs::remove(wal_);
      r_.detail = fmt::format("runtime.sqlite-wal deleted ({} commits)", layout_.commits());
      r_.detectable = !schemaInDb_ && layout_.commits() > 0;
      shmShowsLoss(0);
      a_.mayGoUnnoticed = !r_.detectable && layout_.commits() > 0;
    }
  }

  // The ledger edits and the damages to rows of the store (events, run headers).
  void editRows() {
    Db d(db_);
    if (r_.kind == "call_delete" || r_.kind == "dispatch_delete" || r_.kind == "response_delete" ||
        r_.kind == "call_args_change" || r_.kind == "marker_delete") {
      editLedger(d, r_.kind, ch_, a_);
    } else if (r_.kind == "event_delete") {
      auto rows = d.rows(
          "SELECT e.event_id, e.event_kind, e.event_seq, e.invocation_id, (SELECT max(event_seq) "
          "FROM runtime_events m WHERE m.invocation_id = e.invocation_id) FROM runtime_events e "
          "ORDER BY e.rowid");
      if (rows.empty()) throw std::runtime_error("event_delete: the crashed store has no event");
      const auto& row = rows[ch_.below(rows.size())];
      d.exec("DELETE FROM runtime_events WHERE event_id = " + sqlQuoted(row[0]));
      const bool last = row[2] == row[4];
      r_.detail = fmt::format("event {} #{} of invocation {} deleted{}", row[1], row[2], row[3],
                              last ? " (its last)" : "");
      r_.detectable = !last;  // an event_seq gap (README: store_event_seq_gap)
      a_.mayGoUnnoticed = last;
    } else if (r_.kind == "event_duplicate") {
      auto rows =
          d.rows("SELECT event_id, event_kind, event_seq FROM runtime_events ORDER BY rowid");
      if (rows.empty()) throw std::runtime_error("event_duplicate: the crashed store has no event");
      const auto& row = rows[ch_.below(rows.size())];
      d.exec(
          "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, "
          "event_seq, event_kind, is_terminal, payload_json, committed_at) SELECT event_id || "
          "'-copy', session_id, invocation_id, run_id, turn_id, (SELECT max(event_seq) + 1 FROM "
          "runtime_events m WHERE m.invocation_id = e.invocation_id), event_kind, is_terminal, "
          "payload_json, committed_at FROM runtime_events e WHERE event_id = " +
          sqlQuoted(row[0]));
      r_.detail = fmt::format("event {} #{} appended again as a copy", row[1], row[2]);
      a_.mayGoUnnoticed = true;
    } else if (r_.kind == "event_seq_swap") {
      auto inv = d.rows(
          "SELECT invocation_id FROM runtime_events GROUP BY invocation_id HAVING count(*) >= 2 "
          "ORDER BY invocation_id");
      if (inv.empty()) {
        r_.detail = "no invocation with two events";
      } else {
        const std::string id = inv[ch_.below(inv.size())][0];
        auto rows = d.rows("SELECT event_id, event_seq FROM runtime_events WHERE invocation_id = " +
                           sqlQuoted(id) + " ORDER BY event_seq");
        const size_t i = ch_.below(rows.size());
        size_t j = ch_.below(rows.size() - 1);
        if (j >= i) ++j;
        d.exec("BEGIN");
        d.exec("UPDATE runtime_events SET event_seq = 1000000000 WHERE event_id = " +
               sqlQuoted(rows[i][0]));
        d.exec("UPDATE runtime_events SET event_seq = " + rows[i][1] +
               " WHERE event_id = " + sqlQuoted(rows[j][0]));
        d.exec("UPDATE runtime_events SET event_seq = " + rows[j][1] +
               " WHERE event_id = " + sqlQuoted(rows[i][0]));
        d.exec("COMMIT");
        r_.detail =
            fmt::format("event_seq {} and {} of invocation {} swapped", rows[i][1], rows[j][1], id);
        r_.detectable = true;  // out of commit order (README: store_event_order_conflict)
      }
    } else if (r_.kind == "header_delete") {
      auto rows = d.rows("SELECT session_id, run_id FROM agent_runs ORDER BY rowid");
      if (rows.empty()) {
        r_.detail = "no run header";
      } else {
        const auto& row = rows[ch_.below(rows.size())];
        d.exec("DELETE FROM agent_runs WHERE session_id = " + sqlQuoted(row[0]) +
               " AND run_id = " + sqlQuoted(row[1]));
        r_.detail = "run header " + row[1] + " deleted";
        r_.detectable = true;  // README: store_run_header_missing
      }
    }
  }

  AppliedCorruption a_;
  reports::Corruption& r_ = a_.record;
  Choices ch_;
  const fs::path db_, wal_;
  const std::string walBefore_;
  const WalLayout layout_;
  const bool schemaInDb_;
  const uint32_t vouched_;
};

}  // namespace

AppliedCorruption applyCorruption(const fs::path& store, uint64_t seed) {
  return Injection(store, seed).apply();
}

}  // namespace crashsim::harness
