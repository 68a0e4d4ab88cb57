#include "tools/libnfs-load/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace nfsx::load {

Histogram::Histogram() : counts_(static_cast<size_t>((64 - kSubBits + 1) * kSub), 0) {}

int Histogram::Bucket(uint64_t value) {
  if (value < kSub) return static_cast<int>(value);
  int exponent = std::bit_width(value) - 1;  // >= kSubBits
  int shift = exponent - kSubBits;
  int sub = static_cast<int>((value >> shift) & (kSub - 1));
  return (shift + 1) * kSub + sub;
}

uint64_t Histogram::BucketUpper(int bucket) {
  if (bucket < kSub) return static_cast<uint64_t>(bucket);
  int shift = bucket / kSub - 1;
  uint64_t sub = static_cast<uint64_t>(bucket % kSub);
  uint64_t lower = (kSub + sub) << shift;
  return lower + ((uint64_t{1} << shift) - 1);
}

void Histogram::Record(uint64_t value) {
  ++counts_[static_cast<size_t>(Bucket(value))];
  ++count_;
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(BucketUpper(static_cast<int>(i)), min(), max());
  }
  return max_;
}

}  // namespace nfsx::load
