// crashsim-tool-server: the tool server as a process (crashsim/open/tool_server.h).
//
//   crashsim-tool-server --scenario FILE --workspace DIR --effects FILE            MCP on stdio
//   crashsim-tool-server --scenario FILE --workspace DIR --effects FILE NAME ARGS  one call
//   [--arm TC|TE|TR:<n> --control FILE] [--counter FILE]   crash points
//   [--resent FILE]   finished calls sent again, answered without running (tool_server.h)
//   [--answers FILE]  every result given, per call (tool_server.h)
//   (crashsim/open/tool_points.h)
//
// MCP mode serves newline-delimited JSON-RPC on stdin/stdout until stdin closes (exit 0);
// diagnostics go to stderr only. One-call mode prints {"result":…,"isError":bool} on stdout and
// exits 0 (isError false) or 1 (isError true). Exit 2: bad arguments, an unloadable scenario, a
// workspace that cannot be opened, ARGS that is not a JSON object, or a tool the scenario lacks.
#include <CLI/CLI.hpp>
#include <iostream>

#include "crashsim/error.h"
#include "crashsim/open/tool_points.h"
#include "crashsim/open/tool_server.h"

int main(int argc, char** argv) {
  CLI::App app{"crashsim tool server (MCP over stdio, or one call)"};
  std::string scenarioFile, workspace, effects, resent, answers, name, argsText;
  crashsim::open::ToolPointsOptions pointOptions;
  app.add_option("--scenario", scenarioFile, "scenario file (scenarios/*.json)")->required();
  app.add_option("--workspace", workspace, "the case workspace")->required();
  app.add_option("--effects", effects, "the effects log (JSONL, appended)")->required();
  app.add_option("--arm", pointOptions.arm, "crash point to block at: TC:<n>, TE:<n> or TR:<n>");
  app.add_option("--control", pointOptions.control, "where an armed point is reported (appended)");
  app.add_option("--counter", pointOptions.counter, "the hit counter shared by a run's servers");
  app.add_option("--resent", resent, "finished calls sent again and not run (JSONL, appended)");
  app.add_option("--answers", answers, "every result given, per call (JSONL, appended)");
  app.add_option("name", name, "one-call mode: the tool");
  app.add_option("args", argsText, "one-call mode: the arguments as a JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    crashsim::open::ToolPoints points(pointOptions);
    const bool counted = !pointOptions.arm.empty() || !pointOptions.counter.empty();
    crashsim::open::ToolServerOptions options{workspace, effects, "open-harness",
                                              resent,    answers, {}};
    if (counted && name.empty())
      options.onPoint = [&points](std::string_view point) { points.reach(point); };
    crashsim::open::ToolServer server(crashsim::loadScenario(scenarioFile), std::move(options));
    if (name.empty()) {
      server.serve(std::cin, std::cout);
      return 0;
    }
    const nlohmann::json args = nlohmann::json::parse(argsText, nullptr, false);
    if (!args.is_object()) {
      std::cerr << "crashsim-tool-server: ARGS is not a JSON object\n";
      return 2;
    }
    const auto descriptors = server.toolDescriptors();
    bool known = false;
    for (const auto& d : descriptors) known = known || d["name"] == name;
    if (!known) {
      std::cerr << "crashsim-tool-server: the scenario has no tool " << name << "\n";
      return 2;
    }
    if (counted) points.reach("TC");
    const auto outcome = server.call(name, args);
    if (counted) points.reach("TE");
    if (counted) points.reach("TR");  // before the output: the kill lands at the next request
    std::cout << nlohmann::json{{"result", outcome.result.result},
                                {"isError", outcome.result.isError}}
                     .dump()
              << std::endl;
    return outcome.result.isError ? 1 : 0;
  } catch (const crashsim::Error& e) {
    std::cerr << "crashsim-tool-server: " << e.code() << ": " << e.what() << "\n";
    return 2;
  }
}
