#include "recovery/file_reconcile.h"

namespace crashsim {

Json reconcileIndeterminateOperations(RuntimeStore& store, const WorkspaceIdentity& workspace) {
  (void)workspace;  // used by the file reconcilers once they land
  Json ops = Json::array();
  for (const auto& row : store.listUnsettledToolOperations()) {
    ops.push_back(Json{{"operationId", row.operationId},
                       {"toolName", row.toolName},
                       {"runId", row.runId},
                       {"recoveryMode", row.recoveryMode},
                       {"action", "none"}});
  }
  return Json{{"operations", ops}};
}

}  // namespace crashsim
