// workspace_facts.cpp — the workspace facts' derived identifiers, snapshot policy hash and event
// codec (workspace-continuity-contract.md b.2–b.4, c.3); the authority-stream scanner (b.7) and
// the per-fact rules are in workspace_scanner.cpp.
#include <algorithm>
#include <map>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "ledger/workspace_scanner.h"

namespace crashsim {

using detail::isDigest;

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

std::string rebaselineConfirmationId(std::string_view sessionId,
                                     std::string_view boundaryManifestDigest) {
  std::string b;
  putLp(b, "crashsim.workspace.rebaseline-confirmation.v1");
  putLp(b, sessionId);
  putLp(b, boundaryManifestDigest);
  return "rbc_" + hex32(b);
}

std::string rebaselineNoticeId(std::string_view epochOpenedEventId, std::string_view runId) {
  std::string b;
  putLp(b, "crashsim.workspace.notice.v1");
  putLp(b, epochOpenedEventId);
  putLp(b, runId);
  return "workspace-notice-" + hex32(b);
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

}  // namespace crashsim
