#include "agent/host_internal.h"
#include "crashsim/startup_repair.h"

namespace crashsim::host_detail {

Json runStartupRepair(RuntimeStore& store) {
  return startupRepair(store, RepairMode::strict, false).toJson();
}

}  // namespace crashsim::host_detail
