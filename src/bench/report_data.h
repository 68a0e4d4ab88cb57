// The figures of a compare run, as the report reads them: one JSON per (system, case), and
// named metrics extracted from them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/json.h"

namespace nfsx::bench {

inline constexpr const char* kSubject = "nfsx+nfsx";
inline constexpr const char* kGaneshaNfsx = "ganesha+nfsx";
inline constexpr const char* kNfsxLibnfs = "nfsx+libnfs";
// The subject again in the threaded cases, with nconnect = threads (libnfs's connection per
// thread): the connection-matched comparison.
inline constexpr const char* kSubjectMatched = "nfsx+nfsx-nc";
inline constexpr const char* kGaneshaLibnfs = "ganesha+libnfs";
inline constexpr const char* kMount = "nfsx-mount";
inline constexpr const char* kLocal = "local";
// compare.sh --scaling: each server confined to 1 and to 2 CPUs (taskset), libnfs client.
inline constexpr const char* kNfsx1Cpu = "nfsx-1cpu+libnfs";
inline constexpr const char* kGanesha1Cpu = "ganesha-1cpu+libnfs";
inline constexpr const char* kNfsx2Cpu = "nfsx-2cpu+libnfs";
inline constexpr const char* kGanesha2Cpu = "ganesha-2cpu+libnfs";

class RunData {
 public:
  // Reads RUN_DIR; false with *error when systems.tsv is missing.
  bool Load(const std::string& dir, std::string* error);

  const std::vector<std::pair<std::string, std::string>>& systems() const { return systems_; }
  bool HasSystem(const std::string& id) const;
  // The (first) document of (system, case); null when that run is missing.
  const Json& Doc(const std::string& system, const std::string& test_case) const;
  // Every repetition of (system, case): CASE.json, CASE@2.json, ...
  const std::vector<Json>& Docs(const std::string& system, const std::string& test_case) const;
  std::string Meta(const std::string& key) const;
  const std::vector<std::string>& notes() const { return notes_; }
  // Runs that failed (ok false) or could not be read: "system/case: error".
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  std::vector<std::pair<std::string, std::string>> systems_;
  std::map<std::pair<std::string, std::string>, std::vector<Json>> docs_;
  std::map<std::string, std::string> meta_;
  std::vector<std::string> notes_;
  std::vector<std::string> failures_;
};

enum class Better { kHigher, kLower, kNone };

// One figure of one case, as a function of its document's "results".
// The unit of CPU-per-operation figures: reported beside the others, and judged only by
// the server CPU target (which client is faster is judged on time, not CPU).
inline constexpr const char* kCpuUnit = "CPU us";

struct Metric {
  std::string test_case;
  std::string label;
  std::string unit;
  Better better = Better::kHigher;
  std::function<std::optional<double>(const Json& results)> get;
};

// Every metric the report shows, in order; which ones exist depends on the run (record
// sizes, thread counts) so they are built from the subject's documents.
std::vector<Metric> BuildMetrics(const RunData& data);

// The median over the repetitions of (system, case) of `get(results)`, where it exists: on a
// noisy machine one slow run must not decide a ratio.
std::optional<double> Median(const RunData& data, const std::string& system,
                             const std::string& test_case,
                             const std::function<std::optional<double>(const Json&)>& get);

// The value of `m` for `system` (the median over repetitions), if that run has it.
std::optional<double> Value(const RunData& data, const Metric& m, const std::string& system);

}  // namespace nfsx::bench
