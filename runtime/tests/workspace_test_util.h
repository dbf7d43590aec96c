// workspace_test_util.h — git workspaces and a covered run for the workspace continuity tests
// (workspace-continuity-contract.md c, d): the j.2 vector 3 repository, built with the real git
// CLI, and RC e.7's one-event run, whose segment is j.2 vector 2's boundary.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "crashsim/workspace.h"
#include "crashsim/workspace_carrier.h"
#include "crashsim/workspace_facts.h"
#include "store_test_util.h"

namespace crashsim::testutil {

// Runs a shell command line for a test fixture (never the code under test); fails the test on a
// non-zero status.
inline void fixtureShell(const std::string& command) {
  const int rc = std::system(command.c_str());
  ASSERT_EQ(rc, 0) << command;
}

inline std::string shellQuoted(const fs::path& p) { return "'" + p.string() + "'"; }

// j.2 vector 3: committed .gitignore = "*.log\n" and a.txt = "hello\n"; untracked bin/run.sh
// (0755) and symlink link -> a.txt; ignored debug.log; then the RC h marker (which adds its line
// to .git/info/exclude once). Returns the marker identity.
inline WorkspaceIdentity makeVector3Workspace(const fs::path& root) {
  fs::create_directories(root);
  fixtureShell("git init -q " + shellQuoted(root));
  writeFile(root / ".gitignore", "*.log\n");
  writeFile(root / "a.txt", "hello\n");
  fixtureShell(
      "cd " + shellQuoted(root) +
      " && git add .gitignore a.txt && git -c user.name=t -c user.email=t@t.invalid commit -qm "
      "init");
  fs::create_directories(root / "bin");
  writeFile(root / "bin" / "run.sh", "#!/bin/sh\n");
  ::chmod((root / "bin" / "run.sh").c_str(), 0755);
  fs::create_symlink("a.txt", root / "link");
  writeFile(root / "debug.log", "debug\n");
  return ensureWorkspaceIdentity(root);
}

// Every file under dir (recursively, symlinks by target) by relative name → content.
inline std::map<std::string, std::string> treeBytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    if (e.is_symlink())
      out[rel] = "-> " + fs::read_symlink(e.path()).string();
    else if (e.is_regular_file())
      out[rel] = readBytes(e.path());
  }
  return out;
}

// RC e.7's one-event run (session-1 / run-legacy), the boundary of j.2 vector 2.
inline PrefixIdentity legacyRun() {
  return PrefixIdentity{"session-1", "invocation-run-legacy", "run-legacy", "turn-run-legacy"};
}
inline void addLegacyRun(RuntimeStore& store) {
  Ident id{"session-1", "invocation-run-legacy", "run-legacy", "turn-run-legacy"};
  store.createRun(header(id));
  store.append(decodeRuntimeEvent(parseJson(R"({
    "id":"event-legacy","sessionId":"session-1","invocationId":"invocation-run-legacy",
    "runId":"run-legacy","turnId":"turn-run-legacy","ts":1,"partial":false,
    "role":"user","author":"user",
    "content":{"kind":"text","text":"automated prompt",
               "origin":{"kind":"automation","automationId":"automation-1"}}})")));
}

// j.2 vector 2's ref and vector 3's commit: the capture of legacyRun() at p = 1 in the vector 3
// workspace.
inline const std::string kVectorRef =
    "refs/crashsim/checkpoints/077e3b1985c9e78d64a0e036e9a4c802/1/"
    "3462b1cde1cb8452d9a0ad87bc8ba6c2";
inline const std::string kVectorCommit = "510c92fb2f5f95cb225db499b158cce41a293717";
inline const std::string kVectorTree = "248d0242dcb3a37805e399c7fb6ad501d6e2c052";

inline CaptureRequest captureOf(const WorkspaceIdentity& w, int64_t p = 1) {
  CaptureRequest r;
  r.instanceRoot = w.root;
  r.instanceIdentity = w.identity;
  r.canonicalRoot = w.root.string();
  r.run = legacyRun();
  r.lastEventSeq = p;
  r.ts = 1700000000000;
  return r;
}

// The ref's commit in the carrier, empty when the ref is absent (read with the git CLI).
inline std::string carrierRef(const fs::path& storeDir, const std::string& ref) {
  const fs::path out = storeDir / "ref.out";
  const std::string cmd = "git --git-dir=" + shellQuoted(storeDir / "workspace" / "carrier.git") +
                          " rev-parse --verify -q " + ref + " > " + shellQuoted(out) +
                          " 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  std::string s = rc == 0 ? readBytes(out) : "";
  std::error_code ec;
  fs::remove(out, ec);
  return s.substr(0, s.find('\n'));
}

// a.3.1 / h.1: the code of the first accepted checkpoint whose artifact does not light-verify in
// the store's carrier, or "" when every one does.
inline std::string acceptedArtifactProblem(const fs::path& storeDir, const GitRuntime& git) {
  auto s = RuntimeStore::open(storeDir);
  const auto carrier = WorkspaceCarrier::open(storeDir, git, true);
  for (const auto& row : listWorkspaceCheckpoints(*s)) {
    CheckpointFact c;
    c.checkpointId = row.checkpointId;
    c.carrier.refName = row.refName;
    c.carrier.commitOid = row.commitOid;
    c.carrier.treeOid = row.treeOid;
    try {
      lightVerifyCheckpoint(carrier, c);
    } catch (const Error& e) {
      return e.code();
    }
  }
  return {};
}

}  // namespace crashsim::testutil
