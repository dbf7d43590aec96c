// crashsim/fork_server.h — `crashsim-agent serve` and `crashsim serve`: the fork server the
// harness asks for its children (AFL-style) instead of exec'ing each one.
//
// The harness starts `<program> serve` once per sweep worker and program with one end of an
// AF_UNIX SOCK_SEQPACKET socket pair on fd 3. The server does the start-up work every child
// would repeat (exec, dynamic loading, static start-up, the program's warm-up such as OpenSSL's
// configuration), opens no SQLite connection and no store file, sends "ready", and then answers
// one request per message, in order, until EOF:
//
//   spawn:  "S\0" argv[0]\0 … argv[n]\0 \0 KEY=VALUE\0 … — with SCM_RIGHTS fds stdout, stderr
//           and optionally the control pipe's write end. The server forks; the child puts
//           /dev/null, stdout, stderr (and the control fd) on fds 0–3, closes every other fd,
//           replaces its environment with exactly the given one and runs the program's main with
//           that argv, then exit()s with its result — what an exec'd child does, minus the exec.
//           Reply "pid N" (or "error MESSAGE").
//   wait:   "W" N — the server (the child's parent) reaps child N with waitpid and replies
//           "status S" with the native wait status (or "error MESSAGE"): death by SIGKILL is
//           judged from that status, as for an exec'd child.
//
// The harness kills children itself (by pid, which stays valid until the server reaps it on
// request). The server dies with its harness thread's process (PR_SET_PDEATHSIG).
#pragma once

namespace crashsim {

// `<program> serve`: checks that fd 3 is a SOCK_SEQPACKET socket (else one line on stderr,
// "<program>: serve: fd 3 is not …", and 2), runs `warmUp` (may be null) once, then serves
// requests on fd 3 with `programMain` as each child's main until EOF (0).
int serveForkRequests(const char* program, int (*programMain)(int, char**), void (*warmUp)());

}  // namespace crashsim
