// The targets of issue #5, judged on a compare run's figures.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/report_data.h"

namespace nfsx::bench {

enum class Verdict { kMet, kMissed, kNotMeasured };

struct TargetResult {
  std::string target;  // what the issue asks
  std::string value;   // what was measured
  Verdict verdict = Verdict::kNotMeasured;
  std::string note;
  // What to profile when missed: (case, system).
  std::vector<std::pair<std::string, std::string>> profile;
};

std::vector<TargetResult> EvaluateTargets(const RunData& data, const std::vector<Metric>& metrics);

const char* VerdictText(Verdict v);

}  // namespace nfsx::bench
