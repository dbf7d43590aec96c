// crashsim — the crash-simulation harness CLI. All logic lives in the crashsim_harness library.
#include "crashsim/harness/cli.h"

int main(int argc, char** argv) { return crashsim::harness::runCli(argc, argv); }
