// crashsim/failpoints.h — the failpoint catalogue (P0–P11 crash path, P12–P13 Stop path, P14–P15
// continuation admission, P16–P17 legacy JSONL import, P18–P22 workspace checkpoint capture) and
// the compile-time marker.
//
// CRASHSIM_FAILPOINT(P4) marks a boundary in the runtime. Without the build option
// CRASHSIM_ENABLE_FAILPOINTS it expands to nothing: the production library contains no
// failpoint code or symbols. With it (the instrumented library crashsim_runtime_fp), each
// hit is counted per id; when the armed (id, hit) is reached the child writes one JSON line
// {"failpoint":"P4","hit":1,"pid":N} to the control fd and blocks until it is SIGKILLed.
//
// Child-side environment (instrumented build only, read by initFromEnvironment()):
//   CRASHSIM_ARM=<id>:<hit>        arm one failpoint hit (hit >= 1), e.g. P4:1
//   CRASHSIM_CONTROL_FD=<fd>       where the control line is written (default: stderr, fd 2)
//   CRASHSIM_FAILPOINT_MODE=self   raise(SIGKILL) after writing instead of blocking
//   CRASHSIM_FAILPOINT_MODE=stop   after writing, wait until the process accepted a Stop
//                                  (noteStopAccepted(), e.g. on the parent's SIGINT) and then
//                                  RETURN: the run goes on from that boundary, cancelled
//   CRASHSIM_STOP_COUNT=<n>        stop mode: Stop requests to accept before resuming (1..9,
//                                  default 1; 2 for a double Stop)
//   CRASHSIM_ARM_AFTER_STOP=<id>:<hit>  stop mode only: a second arming that blocks (kill) as in
//                                  block mode, for the Stop path's double faults (P12:1, P13:1)
//   CRASHSIM_POWERLOSS=1           after the control line (then with "powerloss":true) call the
//                                  registered power-loss crash hook, which materialises the
//                                  crash state and raises SIGKILL itself (the parent waits)
//   CRASHSIM_FAULT_AFTER=<id>:<n>  after the first hit of <id>, the next n writes to the store's
//                                  WAL fail with SQLITE_FULL (a full disk at that COMMIT; the
//                                  WAL batching VFS asks consumeIoFault()), e.g. P12:2
//   CRASHSIM_HITS_OUT=<file>       at normal exit write the hit counts
//   {"P0":n,...,"P11":n,"S":n,"F":n,"P12":n,...,"P22":n}
//   CRASHSIM_RACE_BARRIER=<fifo>   the race of two hosts (awaitRaceBarrier): before its host
//                                  start-up the process reports {"barrier":"race","pid":N} on the
//                                  control fd and waits until the FIFO turns readable — the
//                                  harness writes one byte once every racer reported, and nobody
//                                  reads it, so all of them are released by that one write
//
// Barriers (CRASHSIM_BARRIER(S) / (F)) are crash points nobody named: the instrumented build
// counts every durability barrier of the store (S: just before each COMMIT of a store
// transaction, so a kill there loses that transaction) and of the file tools (F: just before each
// create / fsync / rename / directory-fsync step of an atomic file replace). They are armed and
// reported exactly like failpoints ("S:7", {"failpoint":"S","hit":7,...}); they are not rows of
// the catalogue, which describes the named boundaries only. G (workspace-continuity-contract.md
// i.2) is Phase 4's: just after each hermetic git child is spawned, so a kill there lands while
// git works in the carrier (its partial objects, temporaries and locks, tables W and R) and the
// child must die with the killed agent (i.3 H5).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace crashsim::failpoints {

// P0–P11 are the named crash-path failpoints (the catalogue); S and F are the unnamed barriers;
// P12 and P13 are the Stop path's (stopCatalogue(): reached only after a Stop was accepted);
// P14 and P15 are the continuation admission's, between the claim (P11) and the first provider
// call (admissionCatalogue(): reached only by a recovery process that continues a run); P16 and
// P17 are the legacy JSONL import's (importCatalogue(): reached only by the first writable open
// of a directory holding runtime-events.jsonl, crashsim/store.h); P18–P22 are a workspace
// checkpoint capture's (workspaceCatalogue(): reached only when the host's checkpoint policy is
// not `disabled`, workspace-continuity-contract.md d.2, i.1), P23–P26 an isolated restore's in
// the recovery process (f.2, also in workspaceCatalogue()), and P27–P29 a durable rebaseline's
// (rebaselineCatalogue(): reached only by a recovery process given a user's rebaseline
// confirmation, g.2), P30 the carrier GC's (gcCatalogue(): reached only by a GC that deletes at
// least one orphan ref, h.2, h.5); G, the barrier after each git child's spawn, is last. Each group
// follows the earlier ones so that every id keeps its number.
// clang-format off
enum class Id : uint8_t {
  P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, S, F, P12, P13, P14, P15, P16, P17,
  P18, P19, P20, P21, P22,
  P23, P24, P25, P26,
  P27, P28, P29,
  P30,
  G
};
// clang-format on
inline constexpr size_t kCount = 12;           // named crash-path failpoints (catalogue rows)
inline constexpr size_t kStopCount = 2;        // named Stop-path failpoints (stopCatalogue rows)
inline constexpr size_t kAdmissionCount = 2;   // continuation admission (admissionCatalogue rows)
inline constexpr size_t kImportCount = 2;      // legacy JSONL import (importCatalogue rows)
inline constexpr size_t kWorkspaceCount = 9;   // capture + isolated restore (workspaceCatalogue)
inline constexpr size_t kRebaselineCount = 3;  // durable rebaseline (rebaselineCatalogue rows)
inline constexpr size_t kGcCount = 1;          // retention and GC (gcCatalogue rows)
inline constexpr size_t kPointCount = 34;      // every failpoint and barrier (hit counters)

// One row of the stable, machine-readable catalogue (DESIGN.md "Failpoints", spec b).
struct CatalogueEntry {
  Id id;
  std::string_view name;              // "P4"
  std::string_view boundary;          // where in this runtime the marker sits
  std::string_view specBoundary;      // spec b's "injection boundary" wording
  std::string_view prefixClass;       // spec b: before_function_call | after_function_call | ...
  std::string_view durableState;      // expected durable state after a kill there
  std::string_view resolverDecision;  // expected resolver decision for that operation
  bool recoveryProcess;               // true for P10, P11 (hit by the recovery process)
};

// The twelve rows, in id order. Stable data: ids, boundaries and prefix classes never change.
const std::array<CatalogueEntry, kCount>& catalogue();
// The Stop path's rows (P12 inside the termination batch's transaction, P13 between the batch
// and the terminal header), hit only by a run that accepted a Stop (termination contract).
const std::array<CatalogueEntry, kStopCount>& stopCatalogue();
// The continuation admission's rows (P14 target run created without its start, P15 start
// committed before the provider call), hit only by a recovery process that continues the run.
const std::array<CatalogueEntry, kAdmissionCount>& admissionCatalogue();
// The legacy JSONL import's rows (P16 inside an import batch, P17 after each batch's commit).
const std::array<CatalogueEntry, kImportCount>& importCatalogue();
// A workspace checkpoint capture's rows (P18 blobs in the carrier, P19 tree and commit, P20 ref
// verified, P21 inside the accept transaction, P22 accepted, not delivered), then an isolated
// restore's (P23 instance added, locked and verified, P24 marker and restored ref, P25 inside
// the transition transaction, P26 transition committed; contract f.2, reached by a recovery
// process).
const std::array<CatalogueEntry, kWorkspaceCount>& workspaceCatalogue();
// A durable rebaseline's rows (P27 inside its transition/open transaction, P28 committed, P29
// the replay notice committed by the continuation before its first provider call).
const std::array<CatalogueEntry, kRebaselineCount>& rebaselineCatalogue();
// The carrier GC's row (P30: the first orphan ref deleted; the other refs and the prune not done;
// workspace-continuity-contract.md h.5, i.1).
const std::array<CatalogueEntry, kGcCount>& gcCatalogue();
// "P0".."P30" → Id; anything else (including "p4", "P31", " P4", "S") → nullopt.
std::optional<Id> parseId(std::string_view name);
// parseId, or "S" / "F" / "G" (a barrier) → Id.
std::optional<Id> parsePoint(std::string_view name);
std::string_view name(Id id);  // "P4", "S", "F", "G"
// The catalogue row of a named failpoint, Stop path included (std::out_of_range for a barrier).
const CatalogueEntry& entry(Id id);

// Both catalogues as one JSON array (one object per row, keys: id, boundary, specBoundary,
// prefixClass, durableState, resolverDecision, recoveryProcess, stopPath); `indent` < 0 =
// compact.
std::string catalogueJson(int indent = -1);
// The catalogue as a human-readable text table (one block per failpoint).
std::string catalogueText();

// Arming parsed from "<id>:<hit>" ("P4:1", "S:7"). Throws std::invalid_argument with a one-line
// reason on an unknown id, a missing/zero/non-numeric hit or trailing garbage.
struct Arming {
  Id id;
  uint64_t hit;
};
Arming parseArming(std::string_view text);

// Power-loss crash hook: the power-loss VFS library registers a function that simulates the
// crash of its in-memory page cache (drop / keep a seeded subset / tear). The trigger calls
// it right after the control line when CRASHSIM_POWERLOSS=1; the hook must not return. Kept as a
// plain function pointer so the trigger stays free of SQLite. Available in both builds (never
// called in production).
using PowerlossCrashHook = void (*)();
void setPowerlossCrashHook(PowerlossCrashHook hook);
PowerlossCrashHook powerlossCrashHook();

#if defined(CRASHSIM_ENABLE_FAILPOINTS)
// Child-side trigger (instrumented build only). Counts the hit; if armed for this hit,
// reports on the control fd and blocks until killed (or raises SIGKILL itself when
// CRASHSIM_FAILPOINT_MODE=self, or returns once a Stop was accepted in stop mode).
void hit(Id id);

// CRASHSIM_FAULT_AFTER: true (and one fault used up) when this write must fail. Thread-safe.
bool consumeIoFault();

// The process accepted a Stop (its cancellation token is cancelled): releases a stop-mode
// failpoint waiting for it. Async-signal-safe (one atomic store). Both builds.
void noteStopAccepted();
// CRASHSIM_RACE_BARRIER (above): report at the barrier and wait for the release, before host
// start-up takes the host lock. Returns at once when the variable is unset; an unopenable FIFO,
// or no release within 30 s, ends the process (exit 2 / 3) before it touches the store.
void awaitRaceBarrier();

// Reads and validates CRASHSIM_ARM / CRASHSIM_CONTROL_FD / CRASHSIM_FAILPOINT_MODE /
// CRASHSIM_POWERLOSS / CRASHSIM_HITS_OUT before any work. Throws std::invalid_argument with
// a clear one-line message on malformed input (the agent then exits 2). Registers an atexit
// handler that writes the hit counts when CRASHSIM_HITS_OUT is set.
void initFromEnvironment();

// Current hit counts (per id, barriers included, this process).
std::array<uint64_t, kPointCount> hitCounts();
// {"P0":n,...,"P11":n,"S":n,"F":n,"P12":n,...,"P22":n} as compact JSON.
std::string hitCountsJson();
// Writes hitCountsJson() to CRASHSIM_HITS_OUT if set (also done at normal exit). Idempotent.
void writeHitCountsIfRequested();
// Test support: forget the counts and the arming (re-read by initFromEnvironment()).
void resetForTesting();

inline constexpr bool kEnabled = true;
#define CRASHSIM_FAILPOINT(ID) ::crashsim::failpoints::hit(::crashsim::failpoints::Id::ID)
#define CRASHSIM_BARRIER(ID) ::crashsim::failpoints::hit(::crashsim::failpoints::Id::ID)
#elif defined(CRASHSIM_FAILPOINTS_FORBIDDEN)
// A source compiled once for both the production and the instrumented build (the harness, the
// runtime's failpoint-free files: their CMakeLists) may read the catalogue only. A failpoint,
// a hook or kEnabled there would silently be the production one in the instrumented build, so
// using any of them is a compile error.
#define CRASHSIM_FAILPOINT(ID) \
  static_assert(false, "CRASHSIM_FAILPOINT in a source shared by both builds: see its CMakeLists")
#define CRASHSIM_BARRIER(ID) \
  static_assert(false, "CRASHSIM_BARRIER in a source shared by both builds: see its CMakeLists")
#else
inline void initFromEnvironment() {}
inline void noteStopAccepted() {}
inline void awaitRaceBarrier() {}
inline void writeHitCountsIfRequested() {}
inline constexpr bool kEnabled = false;
#define CRASHSIM_FAILPOINT(ID) ((void)0)
#define CRASHSIM_BARRIER(ID) ((void)0)
#endif

}  // namespace crashsim::failpoints
