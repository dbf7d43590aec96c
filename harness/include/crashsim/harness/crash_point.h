// crashsim/harness/crash_point.h — one identity for every point the harness can crash a process at.
//
// A crash point is a named failpoint of the runtime ("P4", crashsim/failpoints.h), an unnamed
// durability barrier ("S": a store COMMIT, "F": a file-tool durability step), or any point a later
// driver adds (Phase 4's P18–P30 and the git barrier G, the open harness's model/tool/barrier
// points MQ, MA, TC, TE, TR). Its identity is its name: case ids, plans, reports and the agent's
// control protocol all spell it ("write-config-port/P4#1/kill", CRASHSIM_ARM=P4:1,
// {"failpoint":"P4",…}, hit counts {"P4":n,…}). There are no numeric aliases: the one table below
// (kCrashPoints) lists every point once, with its group; a new point is one row of it.
//
// Points order by their row in the table (the order case ids sort by): the crash path P0–P11,
// the barriers S and F, the Stop path P12–P13, the continuation admission P14–P15 and the legacy
// import P16–P17 — the runtime's catalogue order.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace crashsim::harness {

// What kind of boundary a crash point is, and which process reaches it.
enum class PointGroup : uint8_t {
  crashPath,            // P0–P11: the tool-call boundaries (P10, P11 in a recovery process only)
  barrier,              // S, F: durability barriers nobody named (counted, never predicted)
  stopPath,             // P12, P13: reached only after a Stop was accepted (named after +K:)
  admission,            // P14, P15: the continuation admission (a recovery process only)
  legacyImport,         // P16, P17: the first writable open of a legacy JSONL store
  workspaceCapture,     // P18–P22: a workspace checkpoint capture (Phase 4): reached only by a
                        // scenario whose workspacePolicy captures (oracle.h predictedCaptures)
  workspaceRestore,     // P23–P26: an isolated restore (Phase 4 f): reached only by a recovery
                        // process of a scenario that drifts after the crash under driftAction
                        // isolated_restore (oracle.h predictedRestore)
  workspaceRebaseline,  // P27–P29: a durable rebaseline (Phase 4 g.2): reached only by a
                        // recovery process given the user's rebaseline confirmation
  workspaceGc,          // P30: the carrier GC (Phase 4 h): reached only by a GC that deletes
                        // at least one orphan ref
};

struct CrashPointRow {
  std::string_view name;
  PointGroup group;
};

// Every crash point, in order. The one place a point is defined.
inline constexpr std::array<CrashPointRow, 34> kCrashPoints{{
    {"P0", PointGroup::crashPath},
    {"P1", PointGroup::crashPath},
    {"P2", PointGroup::crashPath},
    {"P3", PointGroup::crashPath},
    {"P4", PointGroup::crashPath},
    {"P5", PointGroup::crashPath},
    {"P6", PointGroup::crashPath},
    {"P7", PointGroup::crashPath},
    {"P8", PointGroup::crashPath},
    {"P9", PointGroup::crashPath},
    {"P10", PointGroup::crashPath},
    {"P11", PointGroup::crashPath},
    {"S", PointGroup::barrier},
    {"F", PointGroup::barrier},
    {"P12", PointGroup::stopPath},
    {"P13", PointGroup::stopPath},
    {"P14", PointGroup::admission},
    {"P15", PointGroup::admission},
    {"P16", PointGroup::legacyImport},
    {"P17", PointGroup::legacyImport},
    {"P18", PointGroup::workspaceCapture},
    {"P19", PointGroup::workspaceCapture},
    {"P20", PointGroup::workspaceCapture},
    {"P21", PointGroup::workspaceCapture},
    {"P22", PointGroup::workspaceCapture},
    {"P23", PointGroup::workspaceRestore},
    {"P24", PointGroup::workspaceRestore},
    {"P25", PointGroup::workspaceRestore},
    {"P26", PointGroup::workspaceRestore},
    {"P27", PointGroup::workspaceRebaseline},
    {"P28", PointGroup::workspaceRebaseline},
    {"P29", PointGroup::workspaceRebaseline},
    {"P30", PointGroup::workspaceGc},
    {"G", PointGroup::barrier},
}};

// One crash point. Constructed from its name; compared and ordered by its row in kCrashPoints.
class CrashPoint {
 public:
  // The point named `name`. A name that is no row of kCrashPoints is a compile error in a constant
  // expression and std::invalid_argument otherwise (parse() is the non-throwing form).
  constexpr explicit CrashPoint(std::string_view name) : row_(rowOf(name)) {}
  // The point named `name` ("P4", "S"), or nullopt ("p4", "P04", "P99", " P4").
  static constexpr std::optional<CrashPoint> parse(std::string_view name) {
    for (size_t i = 0; i < kCrashPoints.size(); ++i)
      if (kCrashPoints[i].name == name) return CrashPoint(static_cast<uint8_t>(i));
    return std::nullopt;
  }
  // Every point, in order.
  static std::vector<CrashPoint> all();

  constexpr std::string_view name() const { return kCrashPoints[row_].name; }
  std::string str() const { return std::string(name()); }
  constexpr PointGroup group() const { return kCrashPoints[row_].group; }
  constexpr bool isBarrier() const { return group() == PointGroup::barrier; }

  constexpr auto operator<=>(const CrashPoint&) const = default;

 private:
  friend class PointCounts;
  constexpr explicit CrashPoint(uint8_t row) : row_(row) {}
  static constexpr uint8_t rowOf(std::string_view name) {
    for (size_t i = 0; i < kCrashPoints.size(); ++i)
      if (kCrashPoints[i].name == name) return static_cast<uint8_t>(i);
    throw std::invalid_argument("unknown crash point");
  }
  uint8_t row_;
};

// Writes the point's name.
std::ostream& operator<<(std::ostream& os, CrashPoint p);

// The points by name, for code that means one of them.
namespace points {
inline constexpr CrashPoint P0{"P0"}, P1{"P1"}, P2{"P2"}, P3{"P3"}, P4{"P4"}, P5{"P5"}, P6{"P6"},
    P7{"P7"}, P8{"P8"}, P9{"P9"}, P10{"P10"}, P11{"P11"}, S{"S"}, F{"F"}, P12{"P12"}, P13{"P13"},
    P14{"P14"}, P15{"P15"}, P16{"P16"}, P17{"P17"}, P18{"P18"}, P19{"P19"}, P20{"P20"}, P21{"P21"},
    P22{"P22"};
inline constexpr CrashPoint P23{"P23"}, P24{"P24"}, P25{"P25"}, P26{"P26"};  // restore (f.2)
inline constexpr CrashPoint P27{"P27"}, P28{"P28"}, P29{"P29"};  // durable rebaseline (g.2)
inline constexpr CrashPoint P30{"P30"};                          // the carrier GC (h.5)
inline constexpr CrashPoint G{"G"};  // the barrier after each git child's spawn (Phase 4 i.2)
}  // namespace points

// The points from `first` to `last` (both included), in order: pointRange(points::P0, points::P7).
std::vector<CrashPoint> pointRange(CrashPoint first, CrashPoint last);
// The points an agent run reaches on the crash path, P0–P9 (P10, P11 are a recovery's).
bool isAgentRunPoint(CrashPoint p);
// A point of the continuation run's own tool calls, P0–P7.
bool isToolCallPoint(CrashPoint p);

// A count per crash point (hits reached, predicted or planned); 0 for every point at first.
class PointCounts {
 public:
  int& operator[](CrashPoint p) { return n_[p.row_]; }
  int operator[](CrashPoint p) const { return n_[p.row_]; }
  bool operator==(const PointCounts&) const = default;

 private:
  std::array<int, kCrashPoints.size()> n_{};
};

}  // namespace crashsim::harness
