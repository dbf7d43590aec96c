// verdicts/o4_history.h — O4: every model request after the crash is a history the contract
// allows.
//
// Proves, from the model log (every request, in order) and the effects log: no request the
// resume sent was one the scenario cannot explain (the model server's findings: a tool call
// answered twice or not at all before the next turn, the user message twice, a turn the model
// never gave …); no tool result presents a call whose effect ran before the crash as "not
// executed"; no tool result presents a Write, Edit or Bash call whose effect never ran as a
// success. "Not executed" is a result whose text says the call did not happen (not executed,
// never ran, did not run, cancelled, skipped, rejected, aborted …, any case) without saying its
// outcome is unknown; a success is a result that is neither that, nor an error (a JSON "error"
// object, or text starting "error"), nor an admission of an unknown outcome (the contract's
// `outcome_unknown: …`). And no tool result is presented under another call than the one the
// tool server gave it (the answers log: a result text given to call Y, never to X, presented as
// X's — results re-attached to the wrong calls). Cannot see: a runtime that keeps its history from the model, nor a lie
// in words outside that vocabulary.
#pragma once

#include "verdicts/open_evidence.h"

namespace crashsim::harness {
OpenVerdict judgeO4History(const OpenEvidence& ev);
}  // namespace crashsim::harness
