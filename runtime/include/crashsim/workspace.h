// crashsim/workspace.h — workspace identity marker (spec h) and workspace file observation.
//
// A workspace is a real directory. Its identity is the UUID in `.maka-workspace.json` at the
// canonical root (`workspace:v1:<uuid>`); the identity proves "same logical workspace", never
// file contents. An existing marker is authoritative and never rebound by path or inode.
// Every failure throws crashsim::Error with one of: workspace_not_found, invalid_workspace,
// invalid_workspace_marker, workspace_identity_changed, workspace_io_failed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "crashsim/json.h"

namespace crashsim {

inline constexpr std::string_view kWorkspaceMarkerName = ".maka-workspace.json";
inline constexpr size_t kWorkspaceMarkerMaxBytes = 4096;

struct WorkspaceIdentity {
  std::filesystem::path root;  // canonical: realpath, no trailing separator (except "/")
  std::string workspaceId;     // the UUID as stored in the marker
  std::string identity;        // "workspace:v1:<uuid>"
  bool created = false;        // true when this call published the marker
};

// Canonical workspace root: realpath(absolute(path)) with trailing separators stripped.
// Missing → workspace_not_found; not a directory → invalid_workspace; other I/O →
// workspace_io_failed.
std::filesystem::path canonicalWorkspaceRoot(const std::filesystem::path& path);

// True when `text` matches the marker UUID rule (case-insensitive):
// ^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$
bool isValidWorkspaceUuid(std::string_view text);

// The exact marker bytes for a UUID: {"schemaVersion":1,"workspaceId":"<uuid>"} + "\n".
std::string workspaceMarkerContent(std::string_view uuid);

// Reads the marker of an existing workspace without creating one. nullopt = unmarked.
// The marker must be a regular, non-symlink file (opened O_NOFOLLOW; fd and path agree on
// dev/ino), at most 4096 bytes, a JSON object with exactly {schemaVersion:1, workspaceId:<uuid>}
// → else invalid_workspace_marker.
std::optional<WorkspaceIdentity> readWorkspaceIdentity(const std::filesystem::path& path);

struct EnsureWorkspaceOptions {
  // Test seam: runs after the temp marker is written and fsynced, before the directory
  // dev/ino re-check (lets a test move the directory away to prove workspace_identity_changed).
  std::function<void()> beforePublish;
  // Name of the git executable (searched on PATH); empty = "git".
  std::string gitExecutable;
};

// Returns the workspace identity, creating the marker when missing: exclusive temp (0600) +
// fsync → directory dev/ino re-check (workspace_identity_changed) → link() publish (an
// existing marker wins) → directory fsync → re-read. Inside a Git worktree the marker name is
// first added once to the file named by `git rev-parse --path-format=absolute --git-path
// info/exclude` (bounded to 1 MiB); any failure there → workspace_io_failed and no marker.
WorkspaceIdentity ensureWorkspaceIdentity(const std::filesystem::path& path,
                                          const EnsureWorkspaceOptions& options = {});

// --- file observation (durable file evidence, spec i) ---

// Identity of one file state: absent, or present with size and "sha256:<hex>" of its bytes.
struct FileState {
  bool exists = false;
  uint64_t size = 0;
  std::string sha256;  // empty when !exists
  bool operator==(const FileState&) const = default;
};
// {"exists":false} | {"exists":true,"size":N,"sha256":"sha256:…"}
Json toJson(const FileState& state);
FileState fileStateOf(std::string_view bytes);

// A path inside the workspace, resolved for a file tool.
struct WorkspacePath {
  std::string relative;            // canonical relative path ("src/a.txt"), '/' separated
  std::filesystem::path absolute;  // canonical root / relative
};

// Resolves a tool-supplied relative path. Refused (Error invalid_workspace_path) when empty,
// absolute, containing "..", naming the marker file, whose parent directory does not exist or
// resolves (through symlinks) outside the root, or whose target is a symlink or a non-regular
// file.
WorkspacePath resolveWorkspacePath(const std::filesystem::path& root, std::string_view relative);

// Bounded read-only observation of a regular file (no symlink follow). Missing → {exists:false}.
// Larger than maxBytes or not a regular file → Error(workspace_io_failed).
FileState observeFile(const std::filesystem::path& absolute, uint64_t maxBytes = 16u << 20,
                      std::string* contentOut = nullptr);

}  // namespace crashsim
