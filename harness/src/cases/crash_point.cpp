// The crash points' table queries (crashsim/harness/crash_point.h).
#include "crashsim/harness/crash_point.h"

#include <ostream>

namespace crashsim::harness {

std::vector<CrashPoint> CrashPoint::all() {
  std::vector<CrashPoint> out;
  for (const auto& row : kCrashPoints) out.emplace_back(row.name);
  return out;
}

std::ostream& operator<<(std::ostream& os, CrashPoint p) { return os << p.name(); }

std::vector<CrashPoint> pointRange(CrashPoint first, CrashPoint last) {
  std::vector<CrashPoint> out;
  for (CrashPoint p : CrashPoint::all())
    if (first <= p && p <= last) out.push_back(p);
  return out;
}

bool isAgentRunPoint(CrashPoint p) { return p.group() == PointGroup::crashPath && p <= points::P9; }

bool isToolCallPoint(CrashPoint p) { return p.group() == PointGroup::crashPath && p <= points::P7; }

}  // namespace crashsim::harness
