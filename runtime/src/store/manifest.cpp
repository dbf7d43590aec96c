// manifest.cpp — the store manifest (crashsim/store.h, kStoreManifestName): the durable record that
// a store directory holds a runtime store, so that a lost database is never re-created empty.
#include <unistd.h>

#include <fstream>

#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"
#include "crashsim/store.h"
#include "store/store_internal.h"

namespace crashsim {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kFormat = "crashsim-runtime-store";
constexpr size_t kMaxManifestBytes = 4096;

[[noreturn]] void invalid(const fs::path& file, const std::string& why) {
  throw Error(code::store_manifest_invalid, "store manifest " + file.string() + " " + why);
}
}  // namespace

std::optional<int64_t> readStoreManifest(const fs::path& storeDir) {
  const fs::path file = storeDir / kStoreManifestName;
  std::error_code ec;
  const auto status = fs::symlink_status(file, ec);
  if (ec || status.type() == fs::file_type::not_found) return std::nullopt;
  if (status.type() != fs::file_type::regular) invalid(file, "is not a regular file");
  std::ifstream in(file, std::ios::binary);
  std::string text(kMaxManifestBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) invalid(file, "cannot be read");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxManifestBytes) invalid(file, "is larger than 4096 bytes");
  Json j;
  try {
    j = parseJson(text);
  } catch (const Error& e) {
    invalid(file, "is not JSON: " + std::string(e.what()));
  }
  if (!j.is_object() || j.size() != 2 || j.value("format", "") != kFormat ||
      !j.contains("schemaVersion") || !j["schemaVersion"].is_number_integer() ||
      j["schemaVersion"].get<int64_t>() < 1) {
    invalid(file, "is not {\"format\":\"crashsim-runtime-store\",\"schemaVersion\":<n ≥ 1>}");
  }
  return j["schemaVersion"].get<int64_t>();
}

void writeStoreManifest(const fs::path& storeDir, int64_t schemaVersion) {
  const fs::path file = storeDir / kStoreManifestName;
  const fs::path tmp = storeDir / (std::string(kStoreManifestName) + ".tmp-" +
                                   std::to_string(static_cast<long>(::getpid())));
  const std::string bytes =
      stableJson(Json{{"format", kFormat}, {"schemaVersion", schemaVersion}}) + "\n";
  DurableFs& dfs = durableFs();
  try {
    std::error_code ec;
    if (fs::exists(tmp, ec)) dfs.removeFile(tmp);  // left by a crashed writer with our pid
    if (!dfs.createFile(tmp, bytes, 0644)) {
      throw Error(code::store_open_failed, "cannot create " + tmp.string());
    }
    dfs.fsyncFile(tmp);
    dfs.rename(tmp, file);
    dfs.fsyncDir(storeDir);
  } catch (const Error& e) {
    throw Error(code::store_open_failed,
                "cannot write the store manifest: " + std::string(e.what()));
  }
}

void requireRuntimeStore(const fs::path& storeDir) {
  const std::optional<int64_t> manifest = readStoreManifest(storeDir);
  const fs::path db = storeDir / "runtime.sqlite";
  std::error_code ec;
  const auto status = fs::symlink_status(db, ec);
  if (!ec && status.type() == fs::file_type::regular) return;
  if (legacyImportPending(storeDir)) return;  // the first writer imports it
  if (!ec && status.type() != fs::file_type::not_found) {
    throw Error(code::store_open_failed, db.string() + " is not a regular file");
  }
  if (manifest) {
    throw Error(code::store_data_lost,
                "the store manifest in " + storeDir.string() + " records schema version " +
                    std::to_string(*manifest) + " but " + db.string() +
                    " is missing: the store's data is lost (nothing was re-created)");
  }
  throw Error(code::store_open_failed, "no runtime store at " + storeDir.string());
}

namespace store_detail {

// A database below the schema version its manifest records has lost data (store.h).
void requireManifestSchema(const std::filesystem::path& storeDir,
                           const std::optional<int64_t>& manifest, int64_t userVersion) {
  if (!manifest || userVersion >= *manifest) return;
  throw Error(code::store_data_lost,
              "the store manifest in " + storeDir.string() + " records schema version " +
                  std::to_string(*manifest) + " but runtime.sqlite has version " +
                  std::to_string(userVersion) +
                  (userVersion == 0 ? " (no schema: empty, truncated or its WAL lost)" : "") +
                  ": the store's data is lost (nothing was re-created)");
}

// SQLite treats a database file of 0 bytes as a new, empty database and deletes its WAL when
// it opens it (read-only with a -shm too), so a WAL that still holds every commit of a store
// whose database file was emptied (delayed allocation, a botched copy) would be destroyed before
// anything decides. Called before SQLite sees the directory; reads only.
void refuseEmptyDatabaseBesideAWal(const std::filesystem::path& storeDir,
                                   const std::optional<int64_t>& manifest, bool readOnly) {
  namespace fs = std::filesystem;
  const fs::path db = storeDir / "runtime.sqlite", wal = storeDir / "runtime.sqlite-wal";
  std::error_code ec;
  if (fs::symlink_status(db, ec).type() != fs::file_type::regular || ec) return;
  if (fs::file_size(db, ec) != 0 || ec) return;
  const auto walBytes = fs::file_size(wal, ec);
  if (ec || walBytes == 0) return;
  if (const size_t frames = store_detail::walCommittedFrames(wal); frames > 0) {
    throw Error(code::store_database_empty_wal_holds_data,
                db.string() + " is empty (0 bytes) but " + wal.string() + " holds " +
                    std::to_string(frames) +
                    " committed frame(s): the store's data is in the WAL alone; nothing was "
                    "opened or changed (crashsim store salvage-wal rebuilds it into a new "
                    "directory)");
  }
  if (!readOnly && !manifest) return;  // no store recorded, no commit in the WAL: a new store
  throw Error(manifest ? code::store_data_lost : code::store_open_failed,
              db.string() + " is empty (0 bytes) and " + wal.string() +
                  " holds no committed frame" +
                  (manifest ? ": the store's data is lost (nothing was re-created)" : ""));
}

}  // namespace store_detail

}  // namespace crashsim
