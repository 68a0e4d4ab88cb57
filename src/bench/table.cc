#include "bench/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace nfsx::bench {

void Table::Print(std::FILE* out) const {
  std::vector<size_t> width(headers_.size(), 0);
  for (size_t i = 0; i < headers_.size(); ++i) width[i] = headers_[i].size();
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string& c = i < cells.size() ? cells[i] : std::string();
      if (i == 0) {
        s += fmt::format("{:<{}}", c, width[i]);
      } else {
        s += fmt::format("  {:>{}}", c, width[i]);
      }
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::fprintf(out, "%s\n", s.c_str());
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
}

std::string Table::Markdown() const {
  auto line = [](const std::vector<std::string>& cells, size_t n) {
    std::string s = "|";
    for (size_t i = 0; i < n; ++i) s += " " + (i < cells.size() ? cells[i] : "") + " |";
    return s + "\n";
  };
  std::string out = line(headers_, headers_.size());
  std::string sep = "|";
  for (size_t i = 0; i < headers_.size(); ++i) sep += i == 0 ? " --- |" : " ---: |";
  out += sep + "\n";
  for (const auto& r : rows_) out += line(r, headers_.size());
  return out;
}

std::string Fixed(double value, int decimals) {
  if (std::isnan(value)) return "-";
  return fmt::format("{:.{}f}", value, decimals);
}

std::string Sig(double value) {
  if (std::isnan(value)) return "-";
  double a = std::fabs(value);
  if (a >= 100 || a == 0) return fmt::format("{:.0f}", value);
  if (a >= 10) return fmt::format("{:.1f}", value);
  if (a >= 1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3f}", value);
}

}  // namespace nfsx::bench
