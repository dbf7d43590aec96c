// Workspace identity marker (spec h): every error code, the exact marker bytes, atomic publish,
// Git info/exclude hygiene.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/workspace.h"
#include "store_test_util.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("crashsim-ws-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

using testutil::writeFile;

template <typename F>
std::string thrownCode(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "<no error>";
}

const char* kUuid = "0b5e7a52-3c1d-4f0e-9a7b-2c3d4e5f6a7b";

}  // namespace

TEST(WorkspaceIdentity, CreatesExactMarkerBytesAndIdentityString) {
  ScratchDir dir;
  const WorkspaceIdentity id = ensureWorkspaceIdentity(dir.path());
  EXPECT_TRUE(id.created);
  EXPECT_TRUE(isValidWorkspaceUuid(id.workspaceId));
  EXPECT_EQ(id.identity, "workspace:v1:" + id.workspaceId);
  EXPECT_EQ(readFile(dir.path() / ".maka-workspace.json"),
            "{\"schemaVersion\":1,\"workspaceId\":\"" + id.workspaceId + "\"}\n");
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / ".maka-workspace.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temp file is left behind.
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(WorkspaceIdentity, ExistingMarkerIsAuthoritativeAndSurvivesMove) {
  ScratchDir dir;
  fs::create_directories(dir.path() / "a");
  writeFile(dir.path() / "a" / ".maka-workspace.json", workspaceMarkerContent(kUuid));
  const auto first = ensureWorkspaceIdentity(dir.path() / "a");
  EXPECT_FALSE(first.created);
  EXPECT_EQ(first.identity, std::string("workspace:v1:") + kUuid);
  fs::rename(dir.path() / "a", dir.path() / "b");  // a path change keeps the identity
  const auto moved = ensureWorkspaceIdentity(dir.path() / "b");
  EXPECT_EQ(moved.identity, first.identity);
  EXPECT_EQ(moved.root, canonicalWorkspaceRoot(dir.path() / "b"));
}

TEST(WorkspaceIdentity, CanonicalRootIsRealpathWithoutTrailingSeparator) {
  ScratchDir dir;
  fs::create_directories(dir.path() / "real");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  const fs::path viaLink = canonicalWorkspaceRoot((dir.path() / "link").string() + "///");
  EXPECT_EQ(viaLink, canonicalWorkspaceRoot(dir.path() / "real"));
  EXPECT_NE(viaLink.string().back(), '/');
  EXPECT_EQ(canonicalWorkspaceRoot("/"), fs::path("/"));
}

TEST(WorkspaceIdentity, MissingDirectoryIsWorkspaceNotFound) {
  ScratchDir dir;
  EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(dir.path() / "nope"); }),
            "workspace_not_found");
}

TEST(WorkspaceIdentity, RegularFileIsInvalidWorkspace) {
  ScratchDir dir;
  writeFile(dir.path() / "file", "x");
  EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(dir.path() / "file"); }), "invalid_workspace");
}

TEST(WorkspaceIdentity, InvalidWorkspaceMarkerCases) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "{schemaVersion:1"},
      {"extra key", "{\"schemaVersion\":1,\"workspaceId\":\"" + std::string(kUuid) + "\",\"x\":1}"},
      {"missing id", "{\"schemaVersion\":1}"},
      {"schema 2", "{\"schemaVersion\":2,\"workspaceId\":\"" + std::string(kUuid) + "\"}"},
      {"bad uuid", "{\"schemaVersion\":1,\"workspaceId\":\"not-a-uuid\"}"},
      {"uuid version 0",
       "{\"schemaVersion\":1,\"workspaceId\":\"0b5e7a52-3c1d-0f0e-9a7b-2c3d4e5f6a7b\"}"},
      {"uuid variant c",
       "{\"schemaVersion\":1,\"workspaceId\":\"0b5e7a52-3c1d-4f0e-ca7b-2c3d4e5f6a7b\"}"},
      {"too large", "{\"schemaVersion\":1,\"workspaceId\":\"" + std::string(kUuid) + "\"}" +
                        std::string(5000, ' ')},
      {"array", "[]"},
  };
  for (const auto& [name, content] : cases) {
    ScratchDir dir;
    writeFile(dir.path() / ".maka-workspace.json", content);
    EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(dir.path()); }), "invalid_workspace_marker")
        << name;
    // Never rebound: the invalid marker is left untouched.
    EXPECT_EQ(readFile(dir.path() / ".maka-workspace.json"), content) << name;
  }
}

TEST(WorkspaceIdentity, UppercaseUuidIsAcceptedCaseInsensitively) {
  ScratchDir dir;
  writeFile(dir.path() / ".maka-workspace.json",
            "{\"schemaVersion\":1,\"workspaceId\":\"0B5E7A52-3C1D-4F0E-9A7B-2C3D4E5F6A7B\"}\n");
  EXPECT_EQ(ensureWorkspaceIdentity(dir.path()).workspaceId,
            "0B5E7A52-3C1D-4F0E-9A7B-2C3D4E5F6A7B");
}

TEST(WorkspaceIdentity, SymlinkMarkerIsInvalidWorkspaceMarker) {
  ScratchDir dir;
  writeFile(dir.path() / "real.json", workspaceMarkerContent(kUuid));
  fs::create_symlink(dir.path() / "real.json", dir.path() / ".maka-workspace.json");
  EXPECT_EQ(thrownCode([&] { readWorkspaceIdentity(dir.path()); }), "invalid_workspace_marker");
}

TEST(WorkspaceIdentity, DirectoryMarkerIsInvalidWorkspaceMarker) {
  ScratchDir dir;
  fs::create_directories(dir.path() / ".maka-workspace.json");
  EXPECT_EQ(thrownCode([&] { readWorkspaceIdentity(dir.path()); }), "invalid_workspace_marker");
}

TEST(WorkspaceIdentity, DirectoryReplacedDuringPublishIsWorkspaceIdentityChanged) {
  ScratchDir dir;
  const fs::path ws = dir.path() / "ws";
  fs::create_directories(ws);
  EnsureWorkspaceOptions options;
  options.beforePublish = [&] {
    fs::rename(ws, dir.path() / "moved");
    fs::create_directories(ws);
  };
  EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(ws, options); }),
            "workspace_identity_changed");
  EXPECT_FALSE(fs::exists(ws / ".maka-workspace.json"));
  EXPECT_FALSE(fs::exists(dir.path() / "moved" / ".maka-workspace.json"));
}

TEST(WorkspaceIdentity, ConcurrentPublisherKeepsExistingMarker) {
  ScratchDir dir;
  EnsureWorkspaceOptions options;
  options.beforePublish = [&] {
    writeFile(dir.path() / ".maka-workspace.json", workspaceMarkerContent(kUuid));
  };
  const auto id = ensureWorkspaceIdentity(dir.path(), options);
  EXPECT_EQ(id.workspaceId, kUuid);
  EXPECT_FALSE(id.created);
}

TEST(WorkspaceIdentity, GitWorktreeGetsInfoExcludeOnce) {
  ScratchDir dir;
  if (::system(("git init -q '" + dir.path().string() + "' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "git is not installed";
  }
  fs::create_directories(dir.path() / "sub");
  ensureWorkspaceIdentity(dir.path() / "sub");
  const std::string exclude = readFile(dir.path() / ".git" / "info" / "exclude");
  EXPECT_NE(exclude.find(".maka-workspace.json\n"), std::string::npos);
  // A second workspace in the same worktree does not add a second line.
  fs::create_directories(dir.path() / "other");
  ensureWorkspaceIdentity(dir.path() / "other");
  const std::string again = readFile(dir.path() / ".git" / "info" / "exclude");
  EXPECT_EQ(again, exclude);
}

TEST(WorkspaceIdentity, MalformedGitIsWorkspaceIoFailedAndNoMarker) {
  ScratchDir dir;
  writeFile(dir.path() / ".git", "gitdir: /nonexistent/place\n");
  EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(dir.path()); }), "workspace_io_failed");
  EXPECT_FALSE(fs::exists(dir.path() / ".maka-workspace.json"));
}

TEST(WorkspaceIdentity, GitUnavailableIsWorkspaceIoFailedAndNoMarker) {
  ScratchDir dir;
  fs::create_directories(dir.path() / ".git");
  EnsureWorkspaceOptions options;
  options.gitExecutable = "crashsim-no-such-git-binary";
  EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(dir.path(), options); }),
            "workspace_io_failed");
  EXPECT_FALSE(fs::exists(dir.path() / ".maka-workspace.json"));
}

TEST(WorkspaceIdentity, FullExcludeIsWorkspaceIoFailed) {
  ScratchDir dir;
  if (::system(("git init -q '" + dir.path().string() + "' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "git is not installed";
  }
  fs::create_directories(dir.path() / ".git" / "info");
  writeFile(dir.path() / ".git" / "info" / "exclude", std::string((1u << 20) + 10, '#'));
  EXPECT_EQ(thrownCode([&] { ensureWorkspaceIdentity(dir.path()); }), "workspace_io_failed");
  EXPECT_FALSE(fs::exists(dir.path() / ".maka-workspace.json"));
}

TEST(WorkspacePath, RefusesEscapesWithInvalidWorkspacePath) {
  ScratchDir dir;
  const fs::path root = canonicalWorkspaceRoot(dir.path());
  fs::create_directories(root / "inside");
  ScratchDir outside;
  fs::create_directory_symlink(outside.path(), root / "out");
  writeFile(outside.path() / "secret", "s");
  fs::create_symlink(outside.path() / "secret", root / "secret-link");
  for (const std::string bad :
       {"", "/etc/passwd", "../x", "inside/../../x", "out/secret", "secret-link",
        ".maka-workspace.json", "missing-dir/file", "inside"}) {
    EXPECT_EQ(thrownCode([&] { resolveWorkspacePath(root, bad); }), "invalid_workspace_path")
        << bad;
  }
  const auto ok = resolveWorkspacePath(root, "./inside//file.txt");
  EXPECT_EQ(ok.relative, "inside/file.txt");
  EXPECT_EQ(ok.absolute, root / "inside" / "file.txt");
}

TEST(WorkspaceFiles, ObserveFileGivesSizeAndSha256) {
  ScratchDir dir;
  writeFile(dir.path() / "f", "after");
  std::string content;
  const FileState s = observeFile(dir.path() / "f", 1024, &content);
  EXPECT_TRUE(s.exists);
  EXPECT_EQ(s.size, 5u);
  EXPECT_EQ(content, "after");
  EXPECT_EQ(s.sha256.rfind("sha256:", 0), 0u);
  EXPECT_EQ(s.sha256.size(), 7u + 64u);
  EXPECT_EQ(toJson(s),
            (Json{{"exists", true}, {"size", 5}, {"sha256", fileStateOf("after").sha256}}));
  EXPECT_EQ(toJson(observeFile(dir.path() / "none")), (Json{{"exists", false}}));
  // sha256 of the empty string, a well-known vector.
  EXPECT_EQ(fileStateOf("").sha256,
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
