// crashsim/harness/durability.h — the platform durability report (`crashsim durability`).
//
// Measures the platform the store directory lives on (OS, kernel, file system and its mount
// options, SQLite version and compile options, fsync/fdatasync latency, commit rate under
// synchronous=FULL and NORMAL), runs a bounded kill sweep and bounded power-loss sweeps under
// FULL and NORMAL in-process, and condenses them into a matrix failpoint × fault mode × sync
// setting. durability.json is the source of truth ({"kind":"durability", "formatVersion",
// "crashsimVersion", "platforms":[...]}); durability.md and durability.html are derived views
// with one matrix column per platform, so `crashsim report merge` of several platforms' files
// yields one document.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crashsim::harness {

inline constexpr int kDurabilityFormatVersion = 1;

struct DurabilityOptions {
  std::vector<std::string> scenarios = {"write-config-port", "bash-touch-marker"};
  int states = 2;  // power-loss crash states per (scenario, failpoint, hit)
  int jobs = 0;    // 0 = hardware concurrency
  int latencySamples = 50;
  int commits = 200;
  std::filesystem::path scenarioDir;
  std::filesystem::path storeDir;  // empty = the power-loss work root (a real disk)
  std::string name;                // platform column name; empty = "<os>-<arch>-<fs>"
};

// Runs the measurements and sweeps and returns one durability document (one platform).
nlohmann::json runDurability(const DurabilityOptions& opts);

// True when json is a durability document (top-level "kind": "durability").
bool isDurabilityJson(const nlohmann::json& j);

// Joins durability documents: platforms concatenated, in order. Throws std::runtime_error
// (one-line reason) on a different formatVersion or a platform name that appears twice.
nlohmann::json mergeDurability(const std::vector<nlohmann::json>& docs);

std::string renderDurabilityMarkdown(const nlohmann::json& doc);
std::string renderDurabilityHtml(const nlohmann::json& doc);
// Writes durability.json, durability.md, durability.html into dir (created if missing).
void writeDurability(const nlohmann::json& doc, const std::filesystem::path& dir);

// 0 when every FULL case and every D2 check passed (NORMAL losses are findings, not errors).
int durabilityExitCode(const nlohmann::json& doc);

}  // namespace crashsim::harness
