// Aligned text tables for stdout and Markdown tables for the results file.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace nfsx::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }

  // First column left-aligned, the others right-aligned (they are numbers).
  void Print(std::FILE* out) const;
  std::string Markdown() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point text with `decimals` digits; "-" for NaN (a figure that does not exist).
std::string Fixed(double value, int decimals);
// Three significant digits at most, for figures of very different sizes (µs, IOPS).
std::string Sig(double value);

}  // namespace nfsx::bench
