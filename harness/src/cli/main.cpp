// crashsim — the crash-simulation harness CLI. All logic lives in the crashsim_harness library.
// `crashsim serve` is the fork server the harness's own checks get `crashsim` children from
// (crashsim/fork_server.h).
#include <string_view>

#include "crashsim/fork_server.h"
#include "crashsim/harness/cli.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "serve")
    return crashsim::serveForkRequests("crashsim", &crashsim::harness::runCli, nullptr);
  return crashsim::harness::runCli(argc, argv);
}
