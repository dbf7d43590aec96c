// salvage.cpp — a store rebuilt from its -wal alone into a new directory (crashsim/store.h,
// salvageWalIntoNewStore). The damaged directory is only read.
#include <system_error>

#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"
#include "crashsim/store.h"
#include "store/store_internal.h"

namespace crashsim {
namespace fs = std::filesystem;

void salvageWalIntoNewStore(const fs::path& storeDir, const fs::path& newDir) {
  std::error_code ec;
  if (fs::symlink_status(newDir, ec).type() != fs::file_type::not_found)
    throw Error(code::store_open_failed,
                newDir.string() + " exists: a salvage writes only into a new directory");
  const std::string image = store_detail::walDatabaseImage(storeDir / "runtime.sqlite-wal");
  const std::optional<int64_t> manifest = readStoreManifest(storeDir);
  if (!fs::create_directory(newDir, ec) || ec)
    throw Error(code::store_open_failed,
                "cannot create " + newDir.string() + ": " + (ec ? ec.message() : "exists"));
  try {
    DurableFs& dfs = durableFs();
    const fs::path db = newDir / "runtime.sqlite";
    if (!dfs.createFile(db, image, 0644))
      throw Error(code::store_open_failed, "cannot create " + db.string());
    dfs.fsyncFile(db);
    dfs.fsyncDir(newDir);
    if (manifest) writeStoreManifest(newDir, *manifest);
    // The rebuilt store must pass what every reader checks first, or it is not kept.
    StoreOptions ro;
    ro.readOnly = true;
    RuntimeStore::open(newDir, ro)->checkIntact();
  } catch (...) {
    fs::remove_all(newDir, ec);
    throw;
  }
}

}  // namespace crashsim
