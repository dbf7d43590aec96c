// workspace_facts.cpp — the workspace facts' derived identifiers, snapshot policy hash, event
// codec (workspace-continuity-contract.md b.2–b.4, c.3) and the authority-stream scanner (b.7).
#include <algorithm>
#include <map>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "ledger/workspace_scanner.h"

namespace crashsim {

namespace {

void putU64be(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
}
void putLp(std::string& out, std::string_view bytes) {
  putU64be(out, bytes.size());
  out.append(bytes);
}

// The 32 hex digits after the prefix of an id "wsp_<32 hex>" / "ckpt_<32 hex>".
std::string_view idHex(std::string_view id) {
  const auto at = id.find('_');
  return at == std::string_view::npos ? id : id.substr(at + 1);
}

bool isLowerHex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}
bool isPrefixedHex(std::string_view s, std::string_view prefix, size_t n) {
  return s.substr(0, prefix.size()) == prefix && isLowerHex(s.substr(prefix.size()), n);
}
bool isOid(std::string_view s) { return isLowerHex(s, 40); }
bool isDigest(std::string_view s) { return isPrefixedHex(s, "sha256:", 64); }

[[noreturn]] void invalidFact(const std::string& path, const std::string& what) {
  throw Error(code::workspace_fact_invalid, "workspace fact " + path + ": " + what, path);
}

// A JSON object with exactly `keys`.
const Json& exactObject(const Json& v, const std::string& path,
                        std::initializer_list<std::string_view> keys) {
  if (!v.is_object()) invalidFact(path, "must be an object");
  for (auto k : keys)
    if (!v.contains(std::string(k))) invalidFact(path, "lacks \"" + std::string(k) + "\"");
  if (v.size() != keys.size()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
        invalidFact(path, "has the unknown key \"" + it.key() + "\"");
  }
  return v;
}
std::string factString(const Json& o, const char* key, const std::string& path) {
  const Json& v = o.at(key);
  if (!v.is_string() || v.get_ref<const std::string&>().empty())
    invalidFact(path + "." + key, "must be a non-empty string");
  return v.get<std::string>();
}
std::optional<std::string> factOptString(const Json& o, const char* key, const std::string& path) {
  if (o.at(key).is_null()) return std::nullopt;
  return factString(o, key, path);
}
int64_t factInteger(const Json& o, const char* key, const std::string& path, int64_t min) {
  const Json& v = o.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > (int64_t{1} << 53))
    invalidFact(path + "." + key, "must be an integer >= " + std::to_string(min));
  return v.get<int64_t>();
}
void factLiteral(const Json& o, const char* key, const std::string& path, std::string_view want) {
  if (factString(o, key, path) != want)
    invalidFact(path + "." + key, "must be \"" + std::string(want) + "\"");
}

// An RC e.7 segment {protocol, identity, position, prefixDigest} with lastEventSeq = eventCount.
void checkSegment(const Json& s, const std::string& path) {
  exactObject(s, path, {"protocol", "identity", "position", "prefixDigest"});
  factLiteral(s, "protocol", path, "runtime_prefix_segment_v1");
  const Json& id = exactObject(s.at("identity"), path + ".identity",
                               {"sessionId", "invocationId", "runId", "turnId"});
  for (const char* k : {"sessionId", "invocationId", "runId", "turnId"})
    factString(id, k, path + ".identity");
  const Json& pos = exactObject(s.at("position"), path + ".position",
                                {"lastEventSeq", "eventCount", "lastEventId"});
  const int64_t p = factInteger(pos, "lastEventSeq", path + ".position", 1);
  if (factInteger(pos, "eventCount", path + ".position", 1) != p)
    invalidFact(path + ".position", "eventCount must equal lastEventSeq");
  factString(pos, "lastEventId", path + ".position");
  if (!isDigest(factString(s, "prefixDigest", path)))
    invalidFact(path + ".prefixDigest", "not a digest");
}

Json readSetOf(const Json& v, const std::string& path) {
  if (!v.is_object() || !v.contains("kind")) invalidFact(path, "must be {kind, ...}");
  const std::string kind = factString(v, "kind", path);
  if (kind == "none" || kind == "all") {
    exactObject(v, path, {"kind"});
  } else if (kind == "paths") {
    exactObject(v, path, {"kind", "paths"});
    const Json& paths = v.at("paths");
    if (!paths.is_array() || paths.size() > 1000) invalidFact(path, "paths: at most 1000 strings");
    for (size_t i = 0; i < paths.size(); ++i) {
      if (!paths[i].is_string() || paths[i].get_ref<const std::string&>().empty())
        invalidFact(path + ".paths", "holds a non-string");
      if (i > 0 &&
          !(paths[i - 1].get_ref<const std::string&>() < paths[i].get_ref<const std::string&>()))
        invalidFact(path + ".paths", "must be distinct and bytewise sorted");
    }
  } else {
    invalidFact(path + ".kind", "must be none, paths or all");
  }
  return v;
}

Json limitsJson(const SnapshotLimits& l) {
  return Json{{"maxFiles", l.maxFiles},
              {"maxFileBytes", l.maxFileBytes},
              {"maxTotalBytes", l.maxTotalBytes},
              {"captureTimeoutMs", l.captureTimeoutMs}};
}

Json optJson(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

struct PayloadOf {
  Json operator()(const EpochOpenedFact& f) const {
    return Json{{"protocol", "crashsim_workspace_epoch_v1"},
                {"workspaceId", f.workspaceId},
                {"sessionId", f.sessionId},
                {"epoch", f.epoch},
                {"instance",
                 {{"identity", f.instance.identity},
                  {"canonicalRoot", f.instance.canonicalRoot},
                  {"origin", f.instance.origin}}},
                {"openedBy",
                 {{"reason", f.reason},
                  {"transitionEventId", optJson(f.transitionEventId)},
                  {"confirmationId", optJson(f.confirmationId)},
                  {"readSet", f.readSet}}}};
  }
  Json operator()(const CheckpointFact& f) const {
    return Json{
        {"protocol", "crashsim_workspace_checkpoint_v1"},
        {"checkpointId", f.checkpointId},
        {"kind", f.kind},
        {"workspaceId", f.workspaceId},
        {"epoch", f.epoch},
        {"instanceIdentity", f.instanceIdentity},
        {"coveredBoundary", f.coveredBoundary},
        {"carrier",
         {{"carrierKind", "git"},
          {"objectFormat", "sha1"},
          {"commitOid", f.carrier.commitOid},
          {"treeOid", f.carrier.treeOid},
          {"refName", f.carrier.refName},
          {"gitVersion", f.carrier.gitVersion},
          {"gitBinarySha256", f.carrier.gitBinarySha256}}},
        {"policy",
         {{"version", f.policyVersion}, {"limits", limitsJson(f.limits)}, {"hash", f.policyHash}}},
        {"tree", {{"fileCount", f.fileCount}, {"totalBytes", f.totalBytes}}},
        {"derivedFrom", optJson(f.derivedFrom)}};
  }
  Json operator()(const TransitionFact& f) const {
    return Json{{"protocol", "crashsim_workspace_transition_v1"},
                {"workspaceId", f.workspaceId},
                {"fromEpoch", f.fromEpoch},
                {"toEpoch", f.toEpoch},
                {"reason", f.reason},
                {"fromInstance", f.fromInstance},
                {"toInstance", f.toInstance},
                {"boundary", f.boundary},
                {"sourceCheckpointId", optJson(f.sourceCheckpointId)}};
  }
};

std::string_view factKindName(const WorkspaceFact& f) {
  switch (f.index()) {
    case 0:
      return kEpochOpenedKind;
    case 1:
      return kCheckpointAcceptedKind;
    default:
      return kTransitionKind;
  }
}

EpochOpenedFact decodeEpochOpened(const Json& p) {
  const std::string path = "payload";
  exactObject(p, path, {"protocol", "workspaceId", "sessionId", "epoch", "instance", "openedBy"});
  factLiteral(p, "protocol", path, "crashsim_workspace_epoch_v1");
  EpochOpenedFact f;
  f.workspaceId = factString(p, "workspaceId", path);
  f.sessionId = factString(p, "sessionId", path);
  f.epoch = factInteger(p, "epoch", path, 1);
  const Json& in =
      exactObject(p.at("instance"), path + ".instance", {"identity", "canonicalRoot", "origin"});
  f.instance = {factString(in, "identity", path + ".instance"),
                factString(in, "canonicalRoot", path + ".instance"),
                factString(in, "origin", path + ".instance")};
  const Json& by = exactObject(p.at("openedBy"), path + ".openedBy",
                               {"reason", "transitionEventId", "confirmationId", "readSet"});
  f.reason = factString(by, "reason", path + ".openedBy");
  f.transitionEventId = factOptString(by, "transitionEventId", path + ".openedBy");
  f.confirmationId = factOptString(by, "confirmationId", path + ".openedBy");
  f.readSet = readSetOf(by.at("readSet"), path + ".openedBy.readSet");
  return f;
}

CheckpointFact decodeCheckpoint(const Json& p) {
  const std::string path = "payload";
  exactObject(p, path,
              {"protocol", "checkpointId", "kind", "workspaceId", "epoch", "instanceIdentity",
               "coveredBoundary", "carrier", "policy", "tree", "derivedFrom"});
  factLiteral(p, "protocol", path, "crashsim_workspace_checkpoint_v1");
  CheckpointFact f;
  f.checkpointId = factString(p, "checkpointId", path);
  f.kind = factString(p, "kind", path);
  f.workspaceId = factString(p, "workspaceId", path);
  f.epoch = factInteger(p, "epoch", path, 1);
  f.instanceIdentity = factString(p, "instanceIdentity", path);
  checkSegment(p.at("coveredBoundary"), path + ".coveredBoundary");
  f.coveredBoundary = p.at("coveredBoundary");
  const std::string cp = path + ".carrier";
  const Json& c = exactObject(p.at("carrier"), cp,
                              {"carrierKind", "objectFormat", "commitOid", "treeOid", "refName",
                               "gitVersion", "gitBinarySha256"});
  factLiteral(c, "carrierKind", cp, "git");
  factLiteral(c, "objectFormat", cp, "sha1");
  f.carrier = {factString(c, "commitOid", cp), factString(c, "treeOid", cp),
               factString(c, "refName", cp), factString(c, "gitVersion", cp),
               factString(c, "gitBinarySha256", cp)};
  const std::string pp = path + ".policy";
  const Json& pol = exactObject(p.at("policy"), pp, {"version", "limits", "hash"});
  f.policyVersion = factInteger(pol, "version", pp, 1);
  const Json& l = exactObject(pol.at("limits"), pp + ".limits",
                              {"maxFiles", "maxFileBytes", "maxTotalBytes", "captureTimeoutMs"});
  f.limits = {factInteger(l, "maxFiles", pp + ".limits", 1),
              factInteger(l, "maxFileBytes", pp + ".limits", 1),
              factInteger(l, "maxTotalBytes", pp + ".limits", 1),
              factInteger(l, "captureTimeoutMs", pp + ".limits", 1)};
  f.policyHash = factString(pol, "hash", pp);
  const Json& t = exactObject(p.at("tree"), path + ".tree", {"fileCount", "totalBytes"});
  f.fileCount = factInteger(t, "fileCount", path + ".tree", 0);
  f.totalBytes = factInteger(t, "totalBytes", path + ".tree", 0);
  f.derivedFrom = factOptString(p, "derivedFrom", path);
  return f;
}

TransitionFact decodeTransition(const Json& p) {
  const std::string path = "payload";
  exactObject(p, path,
              {"protocol", "workspaceId", "fromEpoch", "toEpoch", "reason", "fromInstance",
               "toInstance", "boundary", "sourceCheckpointId"});
  factLiteral(p, "protocol", path, "crashsim_workspace_transition_v1");
  TransitionFact f;
  f.workspaceId = factString(p, "workspaceId", path);
  f.fromEpoch = factInteger(p, "fromEpoch", path, 1);
  f.toEpoch = factInteger(p, "toEpoch", path, 2);
  f.reason = factString(p, "reason", path);
  f.fromInstance = factString(p, "fromInstance", path);
  f.toInstance = factString(p, "toInstance", path);
  checkSegment(p.at("boundary"), path + ".boundary");
  f.boundary = p.at("boundary");
  f.sourceCheckpointId = factOptString(p, "sourceCheckpointId", path);
  return f;
}

std::string segmentSession(const Json& segment) {
  return segment.at("identity").at("sessionId").get<std::string>();
}

}  // namespace

std::string hex32(std::string_view bytes) { return sha256Hex(bytes).substr(0, 32); }

std::string workspaceIdForSession(std::string_view sessionId) {
  std::string b;
  putLp(b, "crashsim.workspace.id.v1");
  putLp(b, sessionId);
  return "wsp_" + hex32(b);
}

std::string checkpointIdFor(std::string_view workspaceId, int64_t epoch, std::string_view kind,
                            const Json& coveredBoundary) {
  std::string b;
  putLp(b, "crashsim.workspace.checkpoint.v1");
  putLp(b, workspaceId);
  putU64be(b, static_cast<uint64_t>(epoch));
  putLp(b, kind);
  putLp(b, stableJson(coveredBoundary));
  return "ckpt_" + hex32(b);
}

std::string checkpointRefName(std::string_view workspaceId, int64_t epoch,
                              std::string_view checkpointId) {
  return "refs/crashsim/checkpoints/" + std::string(idHex(workspaceId)) + "/" +
         std::to_string(epoch) + "/" + std::string(idHex(checkpointId));
}

PrefixIdentity workspaceSpine(std::string_view workspaceId, int64_t epoch) {
  const std::string tail = std::string(idHex(workspaceId)) + "_" + std::to_string(epoch);
  return PrefixIdentity{std::string(kWorkspaceAuthoritySession), "workspace_inv_" + tail,
                        "workspace_run_" + tail, "workspace_turn_" + tail};
}

Json snapshotPolicyObject(const SnapshotLimits& limits) {
  return Json{{"version", 1},
              {"paths", "ls_files_cached_others_exclude_standard_v1"},
              {"content", "exact_bytes_no_filters_v1"},
              {"entryModes", Json::array({"100644", "100755", "120000", "160000"})},
              {"submodules", "clean_gitlink_only_v1"},
              {"attributes", "reject_conversion_v1"},
              {"limits", limitsJson(limits)}};
}

std::string snapshotPolicyHash(const SnapshotLimits& limits) {
  std::string b;
  putLp(b, "crashsim.workspace.snapshot-policy.v1");
  putLp(b, stableJson(snapshotPolicyObject(limits)));
  return sha256Digest(b);
}

std::string workspaceFactEventId(const WorkspaceFact& fact) {
  if (const auto* o = std::get_if<EpochOpenedFact>(&fact))
    return o->workspaceId + ":e" + std::to_string(o->epoch) + ":opened";
  if (const auto* c = std::get_if<CheckpointFact>(&fact)) return c->checkpointId + ":accepted";
  const auto& t = std::get<TransitionFact>(fact);
  return t.workspaceId + ":e" + std::to_string(t.fromEpoch) + ":transition";
}

RuntimeEvent workspaceFactEvent(const WorkspaceFact& fact, double ts) {
  const PrefixIdentity spine =
      workspaceSpine(detail::factWorkspace(fact), detail::factSpineEpoch(fact));
  Json ev = {{"id", workspaceFactEventId(fact)},
             {"invocationId", spine.invocationId},
             {"runId", spine.runId},
             {"sessionId", spine.sessionId},
             {"turnId", spine.turnId},
             {"ts", static_cast<int64_t>(ts)},
             {"partial", false},
             {"role", "system"},
             {"author", "system"},
             {"actions",
              {{"workspaceFact",
                {{"kind", std::string(factKindName(fact))},
                 {"version", 1},
                 {"payload", std::visit(PayloadOf{}, fact)}}}}}};
  return decodeRuntimeEvent(std::move(ev));
}

WorkspaceFact decodeWorkspaceFact(const RuntimeEvent& event) {
  if (!event.hasWorkspaceFact) invalidFact("actions", "holds no workspaceFact");
  const Json& top = event.json;
  for (const char* k : {"content", "status", "branch", "origin", "modelVisibility", "refs"})
    if (top.contains(k)) invalidFact(k, "a workspace fact carries no " + std::string(k));
  if (event.partial || event.role != Role::system || event.author != Author::system)
    invalidFact("envelope", "must be partial:false, role and author system");
  const Json& actions = exactObject(top.at("actions"), "actions", {"workspaceFact"});
  const Json& w = exactObject(actions.at("workspaceFact"), "actions.workspaceFact",
                              {"kind", "version", "payload"});
  if (!w.at("version").is_number_integer() || w.at("version").get<int64_t>() != 1)
    invalidFact("actions.workspaceFact.version", "must be 1");
  const std::string kind = factString(w, "kind", "actions.workspaceFact");
  const Json& payload = w.at("payload");
  if (kind == kEpochOpenedKind) return decodeEpochOpened(payload);
  if (kind == kCheckpointAcceptedKind) return decodeCheckpoint(payload);
  if (kind == kTransitionKind) return decodeTransition(payload);
  invalidFact("actions.workspaceFact.kind", "unknown kind \"" + kind + "\"");
}

namespace detail {

const std::string& factWorkspace(const WorkspaceFact& fact) {
  return std::visit([](const auto& f) -> const std::string& { return f.workspaceId; }, fact);
}

int64_t factSpineEpoch(const WorkspaceFact& fact) {
  if (const auto* t = std::get_if<TransitionFact>(&fact)) return t->fromEpoch;
  if (const auto* o = std::get_if<EpochOpenedFact>(&fact)) return o->epoch;
  return std::get<CheckpointFact>(fact).epoch;
}

std::string workspaceOfInvocation(std::string_view invocationId) {
  constexpr std::string_view kPrefix = "workspace_inv_";
  if (invocationId.substr(0, kPrefix.size()) != kPrefix) return {};
  const auto rest = invocationId.substr(kPrefix.size());
  if (rest.size() < 34 || !isLowerHex(rest.substr(0, 32), 32) || rest[32] != '_') return {};
  return "wsp_" + std::string(rest.substr(0, 32));
}

std::string factSpineProblem(const RuntimeEvent& e, const WorkspaceFact& fact) {
  const PrefixIdentity spine = workspaceSpine(factWorkspace(fact), factSpineEpoch(fact));
  if (e.sessionId != kWorkspaceAuthoritySession)
    return "session " + e.sessionId + " is not " + std::string(kWorkspaceAuthoritySession);
  if (e.invocationId != spine.invocationId || e.runId != spine.runId || e.turnId != spine.turnId)
    return "spine " + e.invocationId + " is not " + spine.invocationId + " of its payload";
  if (const std::string id = workspaceFactEventId(fact); e.id != id)
    return "event id " + e.id + " is not the derived " + id;
  return {};
}

namespace {

std::string instanceProblem(const std::string& identity) {
  return identity.rfind("workspace:v1:", 0) == 0
             ? ""
             : "instance " + identity + " is not workspace:v1:<uuid>";
}

struct DerivationProblem {
  std::string operator()(const EpochOpenedFact& f) const {
    if (f.sessionId == kWorkspaceAuthoritySession) return "the authority session has no workspace";
    if (f.workspaceId != workspaceIdForSession(f.sessionId))
      return "workspaceId " + f.workspaceId + " is not derived from session " + f.sessionId;
    if (auto p = instanceProblem(f.instance.identity); !p.empty()) return p;
    if (f.instance.origin != "user" && f.instance.origin != "restored")
      return "instance origin " + f.instance.origin + " is not user or restored";
    const bool rebaseline = f.reason == "user_rebaseline";
    if (f.epoch == 1) {
      if (f.reason != "first_checkpoint" && !rebaseline)
        return "epoch 1 opens by first_checkpoint or user_rebaseline, not " + f.reason;
      if (f.instance.origin != "user") return "epoch 1 opens on the user's instance";
      if (f.transitionEventId) return "epoch 1 has no transition";
    } else {
      if (f.reason != "isolated_restore" && !rebaseline)
        return "epoch > 1 opens by isolated_restore or user_rebaseline, not " + f.reason;
      const std::string want = f.workspaceId + ":e" + std::to_string(f.epoch - 1) + ":transition";
      if (f.transitionEventId != want) return "openedBy.transitionEventId must be " + want;
      if (f.reason == "isolated_restore" && f.instance.origin != "restored")
        return "an isolated restore opens a restored instance";
    }
    if (rebaseline != f.confirmationId.has_value())
      return "confirmationId is a string iff the reason is user_rebaseline";
    if (f.confirmationId && !isPrefixedHex(*f.confirmationId, "rbc_", 32))
      return "confirmationId " + *f.confirmationId + " is not rbc_<32 hex>";
    if (!rebaseline && f.readSet != Json{{"kind", "none"}})
      return "readSet is {kind:none} unless user_rebaseline";
    if (rebaseline && f.readSet.at("kind") == "none")
      return "a rebaseline's readSet is paths or all";
    return {};
  }
  std::string operator()(const CheckpointFact& f) const {
    if (f.kind != "captured" && f.kind != "restored" && f.kind != "rebased")
      return "kind " + f.kind + " is not captured, restored or rebased";
    const std::string session = segmentSession(f.coveredBoundary);
    if (f.workspaceId != workspaceIdForSession(session))
      return "workspaceId " + f.workspaceId + " is not derived from the boundary's session " +
             session;
    if (const auto id = checkpointIdFor(f.workspaceId, f.epoch, f.kind, f.coveredBoundary);
        f.checkpointId != id)
      return "checkpointId " + f.checkpointId + " is not the derived " + id;
    if (const auto ref = checkpointRefName(f.workspaceId, f.epoch, f.checkpointId);
        f.carrier.refName != ref)
      return "refName " + f.carrier.refName + " is not the derived " + ref;
    if (auto p = instanceProblem(f.instanceIdentity); !p.empty()) return p;
    if (!isOid(f.carrier.commitOid) || !isOid(f.carrier.treeOid))
      return "commitOid and treeOid must be 40 lower-case hex digits";
    if (!isDigest(f.carrier.gitBinarySha256)) return "gitBinarySha256 is not a digest";
    // A version this runtime does not know is a newer writer's: its hash cannot be checked here,
    // and the planner parks it (checkpoint_policy_mismatch); the writer refuses to write one.
    if (f.policyVersion == 1 && f.policyHash != snapshotPolicyHash(f.limits))
      return "policy hash " + f.policyHash + " is not the hash of its version-1 limits";
    if (!isDigest(f.policyHash)) return "policy hash is not a digest";
    if (f.kind == "captured" && f.derivedFrom) return "a captured checkpoint derives from nothing";
    if (f.kind == "restored" && !f.derivedFrom) return "a restored checkpoint names its source";
    if (f.derivedFrom && !isPrefixedHex(*f.derivedFrom, "ckpt_", 32))
      return "derivedFrom " + *f.derivedFrom + " is not ckpt_<32 hex>";
    return {};
  }
  std::string operator()(const TransitionFact& f) const {
    if (f.toEpoch != f.fromEpoch + 1) return "toEpoch must be fromEpoch + 1";
    if (f.workspaceId != workspaceIdForSession(segmentSession(f.boundary)))
      return "the boundary lies outside the workspace's session";
    if (auto p = instanceProblem(f.fromInstance); !p.empty()) return p;
    if (auto p = instanceProblem(f.toInstance); !p.empty()) return p;
    if (f.reason == "isolated_restore") {
      if (f.toInstance == f.fromInstance) return "an isolated restore opens a new instance";
      if (!f.sourceCheckpointId) return "an isolated restore names the checkpoint it restored";
    } else if (f.reason == "user_rebaseline") {
      if (f.toInstance != f.fromInstance) return "a rebaseline keeps its instance";
    } else {
      return "reason " + f.reason + " is reserved or unknown";
    }
    if (f.sourceCheckpointId && !isPrefixedHex(*f.sourceCheckpointId, "ckpt_", 32))
      return "sourceCheckpointId is not ckpt_<32 hex>";
    return {};
  }
};

// A spine under construction.
struct Spine {
  std::string workspaceId;
  int64_t epoch = 0;
  std::optional<ScannedEpoch> epochState;
  bool sealed = false;
};

}  // namespace

std::string factDerivationProblem(const WorkspaceFact& fact) {
  return std::visit(DerivationProblem{}, fact);
}

const ScannedLineage* WorkspaceScan::find(std::string_view workspaceId) const {
  for (const auto& l : lineages)
    if (l.workspaceId == workspaceId) return &l;
  return nullptr;
}

WorkspaceScan scanWorkspaceFacts(std::span<const AuthorityEvent> events,
                                 const BoundaryCheck& boundaryCheck) {
  WorkspaceScan out;
  std::map<std::string, std::map<int64_t, ScannedEpoch>> byWorkspace;
  auto issue = [&](std::string_view code, const std::string& eventId, std::string detail,
                   std::string workspaceId) {
    out.issues.push_back({std::string(code), eventId, std::move(detail), std::move(workspaceId)});
  };
  auto firstCheckpointKind = [](const EpochOpenedFact& o) -> std::string_view {
    if (o.reason == "isolated_restore") return "restored";
    if (o.reason == "user_rebaseline") return "rebased";
    return "captured";
  };
  // One spine = one invocation, contiguous in the input.
  for (size_t i = 0; i < events.size();) {
    size_t end = i;
    while (end < events.size() && events[end].event->invocationId == events[i].event->invocationId)
      ++end;
    Spine spine;
    spine.workspaceId = workspaceOfInvocation(events[i].event->invocationId);
    bool broken = false;
    for (size_t k = i; k < end; ++k) {
      const RuntimeEvent& e = *events[k].event;
      if (events[k].eventSeq != static_cast<int64_t>(k - i + 1)) {
        issue(code::workspace_spine_conflict, e.id,
              "event_seq " + std::to_string(events[k].eventSeq) + " is not " +
                  std::to_string(k - i + 1),
              spine.workspaceId);
        broken = true;
        break;
      }
      WorkspaceFact fact;
      try {
        fact = decodeWorkspaceFact(e);
      } catch (const Error& err) {
        issue(code::workspace_fact_invalid, e.id, err.what(), spine.workspaceId);
        broken = true;
        break;
      }
      if (auto p = factSpineProblem(e, fact); !p.empty()) {
        issue(code::workspace_spine_conflict, e.id, p, spine.workspaceId);
        broken = true;
        break;
      }
      spine.workspaceId = factWorkspace(fact);
      if (auto p = factDerivationProblem(fact); !p.empty()) {
        issue(code::workspace_fact_invalid, e.id, p, spine.workspaceId);
        broken = true;
        break;
      }
      if (spine.sealed) {
        issue(code::workspace_epoch_sealed, e.id, "an event after its spine's transition",
              spine.workspaceId);
        broken = true;
        break;
      }
      if (auto* o = std::get_if<EpochOpenedFact>(&fact)) {
        if (k != i) {
          issue(code::workspace_epoch_gap, e.id, "epoch_opened is not at event_seq 1",
                spine.workspaceId);
          broken = true;
          break;
        }
        spine.epoch = o->epoch;
        spine.epochState = ScannedEpoch{std::move(*o), e.id, {}, std::nullopt, {}};
        continue;
      }
      if (!spine.epochState) {
        issue(code::workspace_epoch_gap, e.id, "the spine does not open with epoch_opened",
              spine.workspaceId);
        broken = true;
        break;
      }
      ScannedEpoch& ep = *spine.epochState;
      if (auto* c = std::get_if<CheckpointFact>(&fact)) {
        const std::string_view want =
            ep.checkpoints.empty() ? firstCheckpointKind(ep.opened) : "captured";
        if (c->kind != want || c->instanceIdentity != ep.opened.instance.identity) {
          issue(code::workspace_fact_invalid, e.id,
                "checkpoint " + c->checkpointId + " (" + c->kind + ", instance " +
                    c->instanceIdentity + ") breaks its epoch's shape: want " + std::string(want) +
                    " on " + ep.opened.instance.identity,
                spine.workspaceId);
          broken = true;
          break;
        }
        ep.checkpoints.push_back({std::move(*c), e.id});
        continue;
      }
      auto& t = std::get<TransitionFact>(fact);
      if (ep.checkpoints.empty() || t.fromInstance != ep.opened.instance.identity) {
        issue(code::workspace_fact_invalid, e.id,
              "the transition does not follow its epoch's checkpoint on its instance",
              spine.workspaceId);
        broken = true;
        break;
      }
      ep.transition = std::move(t);
      ep.transitionEventId = e.id;
      spine.sealed = true;
    }
    if (!broken && spine.epochState) {
      if (spine.epochState->checkpoints.empty()) {
        issue(code::workspace_fact_invalid, spine.epochState->openedEventId,
              "an epoch without its checkpoint", spine.workspaceId);
      } else {
        byWorkspace[spine.workspaceId][spine.epoch] = std::move(*spine.epochState);
      }
    }
    i = end;
  }
  std::set<std::string> checkpointIds, refNames;
  for (auto& [ws, epochs] : byWorkspace) {
    ScannedLineage lineage;
    lineage.workspaceId = ws;
    int64_t expect = 1;
    for (auto& [n, ep] : epochs) {
      if (n != expect) {
        issue(code::workspace_epoch_gap, ep.openedEventId,
              "epoch " + std::to_string(n) + " follows epoch " + std::to_string(expect - 1), ws);
        break;
      }
      ++expect;
      if (n > 1) {
        const ScannedEpoch& prev = lineage.epochs.back();
        if (!prev.transition || prev.transitionEventId != ep.opened.transitionEventId) {
          issue(code::workspace_epoch_gap, ep.openedEventId,
                "epoch " + std::to_string(n) + " has no transition from epoch " +
                    std::to_string(n - 1) + " that it names",
                ws);
          break;
        }
        const TransitionFact& t = *prev.transition;
        auto inPrev = [&](const std::optional<std::string>& id) -> const CheckpointFact* {
          if (!id) return nullptr;
          for (const auto& c : prev.checkpoints)
            if (c.fact.checkpointId == *id) return &c.fact;
          return nullptr;
        };
        const CheckpointFact& first = ep.checkpoints.front().fact;
        const CheckpointFact* source = inPrev(t.sourceCheckpointId);
        const CheckpointFact* derived = inPrev(first.derivedFrom);
        std::string bad;
        if (t.reason != ep.opened.reason || t.toInstance != ep.opened.instance.identity)
          bad = "the transition's reason or toInstance differs from the epoch it opens";
        else if (t.sourceCheckpointId && !source)
          bad = "the transition's source is no checkpoint of epoch " + std::to_string(n - 1);
        else if (first.derivedFrom && !derived)
          bad = "derivedFrom is no checkpoint of epoch " + std::to_string(n - 1);
        else if (first.kind == "restored" &&
                 (derived != source || derived->carrier.commitOid != first.carrier.commitOid ||
                  derived->carrier.treeOid != first.carrier.treeOid ||
                  derived->policyHash != first.policyHash ||
                  derived->fileCount != first.fileCount || derived->totalBytes != first.totalBytes))
          bad = "a restored checkpoint differs from the checkpoint it restored";
        if (!bad.empty()) {
          issue(code::workspace_fact_invalid, ep.checkpoints.front().eventId, bad, ws);
          break;
        }
      }
      for (const auto& c : ep.checkpoints) {
        if (!checkpointIds.insert(c.fact.checkpointId).second ||
            !refNames.insert(c.fact.carrier.refName).second)
          issue(code::workspace_fact_conflict, c.eventId,
                "checkpointId or refName of " + c.fact.checkpointId + " is used twice", ws);
        if (auto p = boundaryCheck(c.fact.coveredBoundary); !p.empty())
          issue(code::workspace_boundary_mismatch, c.eventId, p, ws);
      }
      if (ep.transition) {
        if (auto p = boundaryCheck(ep.transition->boundary); !p.empty())
          issue(code::workspace_boundary_mismatch, ep.transitionEventId, p, ws);
      }
      lineage.epochs.push_back(std::move(ep));
    }
    if (!lineage.epochs.empty() && lineage.epochs.back().transition)
      issue(code::workspace_epoch_gap, lineage.epochs.back().transitionEventId,
            "a transition without the epoch it opens", ws);
    out.lineages.push_back(std::move(lineage));
  }
  return out;
}

}  // namespace detail

}  // namespace crashsim
