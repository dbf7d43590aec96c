// crashsim-model-server: the scripted model server as a process (crashsim/open/model_server.h).
//
//   crashsim-model-server --scenario FILE [--port N] [--port-file F] [--log F]
//
// Serves until SIGTERM or SIGINT, then exits 0. Once listening it writes its port (decimal and
// a newline) to --port-file through a temporary file and a rename, so a reader never sees a
// partial port, and prints "listening <base URL>" on stdout. Exit 2: bad arguments or an
// unloadable scenario; 1: cannot listen.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "crashsim/error.h"
#include "crashsim/open/model_server.h"

int main(int argc, char** argv) {
  CLI::App app{"crashsim scripted model server (OpenAI Chat Completions on 127.0.0.1)"};
  std::string scenarioFile, portFile, logFile;
  uint16_t port = 0;
  app.add_option("--scenario", scenarioFile, "scenario file (scenarios/*.json)")->required();
  app.add_option("--port", port, "port (default: an ephemeral one)");
  app.add_option("--port-file", portFile, "write the port here once listening");
  app.add_option("--log", logFile, "the model log (JSONL, appended)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // Block the stop signals before any thread starts, so that only sigwait() receives them.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  crashsim::Scenario scenario;
  try {
    scenario = crashsim::loadScenario(scenarioFile);
  } catch (const crashsim::Error& e) {
    std::cerr << "crashsim-model-server: " << e.code() << ": " << e.what() << "\n";
    return 2;
  }
  crashsim::open::ModelServer server(std::move(scenario), {logFile, port, {}});
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "crashsim-model-server: " << e.what() << "\n";
    return 1;
  }
  if (!portFile.empty()) {
    const std::string tmp = portFile + ".tmp";
    std::ofstream(tmp) << server.port() << "\n";
    std::filesystem::rename(tmp, portFile);
  }
  std::cout << "listening " << server.baseUrl() << std::endl;
  int signal = 0;
  sigwait(&stopSignals, &signal);
  server.stop();
  return 0;
}
