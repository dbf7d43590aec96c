// crashsim/harness/cli.h — the `crashsim` command line (DESIGN.md "Command line").
//
// Exit codes: 0 all contracts hold, 1 a contract violation, 2 usage or environment error
// (with a one-line reason on stderr; `ledger` errors are a JSON object on stdout).
#pragma once

namespace crashsim::harness {

int runCli(int argc, char** argv);

}  // namespace crashsim::harness
