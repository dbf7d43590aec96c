// resolve_in_place.h — the RecoveryResolver (crashsim/recovery_resolver.h) over events read in
// place: the same function as resolveRecovery, for a pass that holds the run's events as
// pointers into the store's decode cache (detail::EventRefs) rather than as a copied vector.
#pragma once

#include "crashsim/recovery_resolver.h"
#include "ledger/ledger_scanner.h"

namespace crashsim::detail {

// resolveRecovery(events): one run's ordered immutable events, not copied.
RecoveryResolution resolveRecoveryInPlace(EventRefs events);

}  // namespace crashsim::detail
