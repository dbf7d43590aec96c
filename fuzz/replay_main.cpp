// fuzz/replay_main.cpp — runs a fuzz target over files without libFuzzer (the default build's
// regression test): every file under each directory argument (or each file argument) is one
// input. Exit 0 when every input ran; a directory set that holds no input is an error (exit 2),
// never a pass. A violated invariant aborts, an escaping exception terminates: the test fails.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (fs::is_regular_file(argv[i], ec)) {
      inputs.emplace_back(argv[i]);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no input under the given paths\n");
    return 2;
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", p.c_str(), b.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  }
  std::fprintf(stderr, "replay: %zu inputs, all passed\n", inputs.size());
  return 0;
}
