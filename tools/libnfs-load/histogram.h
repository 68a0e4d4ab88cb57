// Latency histogram with bounded relative error, cheap enough to record every operation.
#pragma once

#include <cstdint>
#include <vector>

namespace nfsx::load {

// Log-linear buckets: exact below 64, then 64 buckets per power of two, so any value is
// reported within 1/64 (1.6 %) of what was recorded. Not thread safe: each job records
// into its own and the totals come from Merge().
class Histogram {
 public:
  Histogram();

  void Record(uint64_t value);
  void Merge(const Histogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }

  // The smallest recorded-bucket bound v such that a fraction `q` (0..1) of the values are
  // <= v, clamped to [min(), max()]. 0 when empty.
  uint64_t Quantile(double q) const;

 private:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;

  static int Bucket(uint64_t value);
  static uint64_t BucketUpper(int bucket);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace nfsx::load
