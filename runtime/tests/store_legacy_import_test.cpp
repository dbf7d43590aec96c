// The legacy RuntimeEvent JSONL import and export (crashsim/store.h kLegacyJsonlName), on real
// files and a real SQLite store. Expected rows come from the contract: every line's event stored
// once, byte-equal to its canonical encoding (a.6), event_seq 1..n per invocation in file order,
// committed_at = ts, one header per run (terminal from a valid terminal fact), the legacy
// protocol's decisions (c: a call without its response is indeterminate /
// legacy_dispatch_unknown, never "not executed").
#include <gtest/gtest.h>

#include <map>

#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

std::optional<Error> openError(const fs::path& dir, bool readOnly = false) {
  StoreOptions o;
  o.readOnly = readOnly;
  try {
    RuntimeStore::open(dir, o);
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// The contract's rows for `lines` (in file order): checks every stored event against them.
void expectImported(RuntimeStore& s, const std::vector<Json>& lines) {
  const auto stored = s.readAllEvents();
  ASSERT_EQ(stored.size(), lines.size());
  std::map<std::string, int64_t> nextSeq;
  std::map<std::string, const StoredEvent*> byId;
  for (const auto& e : stored) byId[e.event.id] = &e;
  for (const Json& line : lines) {
    const RuntimeEvent want = decodeRuntimeEvent(line);
    ASSERT_TRUE(byId.count(want.id)) << want.id;
    const StoredEvent& got = *byId[want.id];
    EXPECT_EQ(encodeRuntimeEvent(got.event), encodeRuntimeEvent(want)) << want.id;
    EXPECT_EQ(got.eventSeq, ++nextSeq[want.invocationId]) << want.id;
    EXPECT_EQ(got.committedAt, want.ts) << want.id;
  }
}

struct LegacyImportTest : ::testing::Test {
  TempDir dir;
  fs::path file() const { return dir.path / kLegacyJsonlName; }
};

// The whole file, in batches smaller than it, once; then SQLite is the only authority.
TEST_F(LegacyImportTest, FirstWriterImportsEveryLineOnceInFileOrder) {
  const Legacy l = legacyLedger(3);  // 12 events: 3 batches of 5
  const std::string bytes = jsonl(l.lines);
  writeFile(file(), bytes);
  ASSERT_TRUE(legacyImportPending(dir.path));
  StoreOptions o;
  o.legacyImportBatchEvents = 5;
  std::string hash;
  {
    auto s = RuntimeStore::open(dir.path, o);
    expectImported(*s, l.lines);
    s->checkIntact();
    hash = s->ledgerHash();
    const auto runs = s->listRuns();
    ASSERT_EQ(runs.size(), 3u);
    for (const RunHeader& h : runs) {
      // run-0 and run-1 end with a completed terminal fact; run-2 crashed (still running).
      EXPECT_EQ(h.status, h.runId == "run-2" ? "running" : "completed") << h.runId;
      EXPECT_EQ(h.createdAt, 1000.0 * (h.runId[4] - '0' + 1)) << h.runId;
    }
    // The legacy protocol (c): the open call is unknown, never "not executed"; the answered
    // ones are completed by their response.
    const auto open = s->readRunEvents("session-1", "run-2");
    std::vector<RuntimeEvent> evs;
    for (const auto& e : open) evs.push_back(e.event);
    const auto res = resolveRecovery(evs);
    ASSERT_EQ(res.decisions.size(), 1u);
    EXPECT_EQ(res.decisions[0].status, code::indeterminate);
    EXPECT_EQ(res.decisions[0].reason, code::legacy_dispatch_unknown);
    EXPECT_FALSE(res.toolBoundaryProtocol.has_value());
  }
  EXPECT_FALSE(legacyImportPending(dir.path));
  EXPECT_EQ(readBytes(file()), bytes);  // never deleted or rewritten
  // A later edit of the JSONL is never merged: the manifest ends the import.
  writeFile(file(), bytes + jsonl({textEvent(l.runs[2], "late", 9999).json}));
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(s->ledgerHash(), hash);
}

// A partial event is UI state (j.5): skipped, not imported and not an error.
TEST_F(LegacyImportTest, PartialEventsAreNotImported) {
  Legacy l = legacyLedger(1);
  Json partial = textEvent(l.runs[0], "streaming", 1500).json;
  partial["partial"] = true;
  std::vector<Json> lines = l.lines;
  lines.insert(lines.begin() + 1, partial);
  writeFile(file(), jsonl(lines));
  auto s = RuntimeStore::open(dir.path);
  expectImported(*s, l.lines);
}

// Each way a line can fail to be one legacy RuntimeEvent: the error names the line, nothing is
// created, the JSONL is unchanged, and a read-only open fails the same way.
TEST_F(LegacyImportTest, ALineThatIsNotOneLegacyEventFailsClosedAndWritesNothing) {
  const Legacy l = legacyLedger(2);
  Call c;
  c.id = l.runs[1];
  c.callId = "call-1";
  struct Bad {
    const char* name;
    std::string bytes;
    std::string_view code;
    std::string line;
  };
  const std::string head = jsonl({l.lines[0], l.lines[1]});
  Json marker = userEvent(l.runs[0], "r0-user", true, 1000).json;
  const std::vector<Bad> cases = {
      {"not JSON", head + "{\"id\":\n", code::legacy_jsonl_invalid, ":3: "},
      {"torn last line", head + l.lines[2].dump().substr(0, 40), code::legacy_jsonl_invalid,
       ":3: "},
      {"blank line", head + "\n" + jsonl({l.lines[2]}), code::legacy_jsonl_invalid, ":3: "},
      {"unknown key", head + R"({"id":"x","bogus":1})" + "\n", code::legacy_jsonl_invalid, ":3: "},
      {"too deep", head + std::string(100000, '[') + "\n", code::legacy_jsonl_invalid, ":3: "},
      {"protocol marker", jsonl({marker}), code::legacy_jsonl_unsupported_fact, ":1: "},
      {"T1 dispatch", head + jsonl({dispatchEvent(c).json}), code::legacy_jsonl_unsupported_fact,
       ":3: "},
      {"bound response", head + jsonl({responseEvent(c).json}), code::legacy_jsonl_unsupported_fact,
       ":3: "},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    TempDir d;
    writeFile(d.path / kLegacyJsonlName, b.bytes);
    const auto before = snapshot(d.path);
    for (bool readOnly : {false, true}) {
      const auto err = openError(d.path, readOnly);
      ASSERT_TRUE(err.has_value());
      EXPECT_EQ(err->code(), b.code) << err->what();
      EXPECT_NE(std::string(err->what()).find(std::string(kLegacyJsonlName) + b.line),
                std::string::npos)
          << err->what();
      EXPECT_EQ(snapshot(d.path), before);
    }
  }
}

// A writer's check that fails mid-import (an event after its run's terminal fact) names the line
// too; the import never completes (no manifest) and the JSONL is kept.
TEST_F(LegacyImportTest, AnEventAfterItsRunsTerminalFactIsRefusedWithItsLine) {
  Legacy l = legacyLedger(2);
  l.lines.insert(l.lines.begin() + 5, textEvent(l.runs[0], "after-end", 1010).json);
  const std::string bytes = jsonl(l.lines);
  writeFile(file(), bytes);
  StoreOptions o;
  o.legacyImportBatchEvents = 2;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      RuntimeStore::open(dir.path, o);
      FAIL() << "imported an event after its run's terminal fact";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code::run_sealed) << e.what();
      EXPECT_NE(std::string(e.what()).find(":6: "), std::string::npos) << e.what();
    }
    EXPECT_TRUE(legacyImportPending(dir.path));
    EXPECT_EQ(readBytes(file()), bytes);
  }
}

// Read-only commands read a legacy-only or half-imported directory without writing a byte, and
// see what the first writer will store.
TEST_F(LegacyImportTest, ReadOnlyOpenOfAPendingImportWritesNothing) {
  const Legacy l = legacyLedger(3);
  writeFile(file(), jsonl(l.lines));
  const auto before = snapshot(dir.path);
  StoreOptions ro;
  ro.readOnly = true;
  std::string viewHash;
  {
    auto s = RuntimeStore::open(dir.path, ro);
    expectImported(*s, l.lines);
    s->checkIntact();
    viewHash = s->ledgerHash();
  }
  EXPECT_EQ(snapshot(dir.path), before);
  // Half imported: a database holding the first run only, no manifest (a crash mid-import).
  {
    TempDir half;
    writeFile(half.path / kLegacyJsonlName, jsonl({l.lines.begin(), l.lines.begin() + 5}));
    RuntimeStore::open(half.path);
    fs::remove(half.path / kStoreManifestName);
    for (const char* f : {"runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-shm"})
      if (fs::exists(half.path / f)) fs::copy_file(half.path / f, dir.path / f);
  }
  const auto halfBefore = snapshot(dir.path);
  ASSERT_TRUE(legacyImportPending(dir.path));
  {
    auto s = RuntimeStore::open(dir.path, ro);
    expectImported(*s, l.lines);
    EXPECT_EQ(s->ledgerHash(), viewHash);
  }
  EXPECT_EQ(snapshot(dir.path), halfBefore);
  auto w = RuntimeStore::open(dir.path);
  EXPECT_EQ(w->ledgerHash(), viewHash);
}

// Export → import into an empty directory → the same ledger, headers and resolver output.
TEST_F(LegacyImportTest, ExportImportsBackToTheSameLedger) {
  const Legacy l = legacyLedger(4);
  writeFile(file(), jsonl(l.lines));
  auto a = RuntimeStore::open(dir.path);
  std::ostringstream exported;
  exportLegacyJsonl(*a, exported);
  TempDir other;
  writeFile(other.path / kLegacyJsonlName, exported.str());
  auto b = RuntimeStore::open(other.path);
  EXPECT_EQ(b->ledgerHash(), a->ledgerHash());
  EXPECT_EQ(b->listRuns(), a->listRuns());
  for (const RunHeader& h : a->listRuns()) {
    std::vector<RuntimeEvent> ea, eb;
    for (const auto& e : a->readRunEvents(h.sessionId, h.runId)) ea.push_back(e.event);
    for (const auto& e : b->readRunEvents(h.sessionId, h.runId)) eb.push_back(e.event);
    EXPECT_EQ(toJson(resolveRecovery(eb)).dump(), toJson(resolveRecovery(ea)).dump());
  }
  // The export is the canonical bytes, one event per line.
  std::ostringstream again;
  exportLegacyJsonl(*b, again);
  EXPECT_EQ(again.str(), exported.str());
}

// A modern ledger exports, but its T1 facts do not import as legacy (claims, projections and the
// operation rows are not RuntimeEvents): refused with the dispatch's line, nothing written.
TEST_F(LegacyImportTest, AModernLedgerExportIsRefusedAsLegacy) {
  Call c;
  {
    auto s = RuntimeStore::open(dir.path);
    s->createRun(header(c.id));
    s->append(userEvent(c.id));
    s->commitToolPrepared(t1(c));
  }
  auto s = RuntimeStore::open(dir.path);
  std::ostringstream exported;
  exportLegacyJsonl(*s, exported);
  TempDir other;
  writeFile(other.path / kLegacyJsonlName, exported.str());
  const auto before = snapshot(other.path);
  const auto err = openError(other.path);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->code(), code::legacy_jsonl_unsupported_fact) << err->what();
  EXPECT_NE(std::string(err->what()).find(":1: "), std::string::npos) << err->what();
  EXPECT_EQ(snapshot(other.path), before);
}

// A JSONL dropped into a directory that already has a store (manifest) is never read.
TEST_F(LegacyImportTest, AStoreWithAManifestNeverReadsAJsonl) {
  RuntimeStore::open(dir.path);
  writeFile(file(), jsonl(legacyLedger(1).lines));
  EXPECT_FALSE(legacyImportPending(dir.path));
  EXPECT_TRUE(RuntimeStore::open(dir.path)->readAllEvents().empty());
}

}  // namespace
