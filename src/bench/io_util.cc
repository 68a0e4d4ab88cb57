#include "bench/io_util.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace nfsx::bench {
namespace {

constexpr uint64_t kMagic = 0x4e46535842454e43ULL;  // "NFSXBENC"

void Store(std::byte* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint64_t Load(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

void AlignedBuffer::Free::operator()(std::byte* p) const { std::free(p); }

AlignedBuffer::AlignedBuffer(size_t size) : size_(size) {
  size_t rounded = (size + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded);
  if (!p) throw std::bad_alloc();
  data_.reset(static_cast<std::byte*>(p));
  // A pattern that is neither zeros nor trivially compressible.
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i + 8 <= rounded; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    Store(data_.get() + i, x);
  }
}

uint64_t FileTag(std::string_view name) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

void Stamp(std::span<std::byte> rec, uint64_t offset, uint64_t tag, size_t every) {
  uint64_t first = (offset + every - 1) / every * every;
  for (uint64_t p = first; p + 16 <= offset + rec.size(); p += every) {
    std::byte* at = rec.data() + (p - offset);
    Store(at, kMagic ^ tag);
    Store(at + 8, p);
  }
}

uint64_t CheckStamps(std::span<const std::byte> rec, uint64_t offset, uint64_t tag, size_t every) {
  uint64_t bad = 0;
  uint64_t first = (offset + every - 1) / every * every;
  for (uint64_t p = first; p + 16 <= offset + rec.size(); p += every) {
    const std::byte* at = rec.data() + (p - offset);
    if (Load(at) != (kMagic ^ tag) || Load(at + 8) != p) ++bad;
  }
  return bad;
}

std::string DescribeBadStamp(std::span<const std::byte> rec, uint64_t offset, uint64_t tag,
                             size_t every) {
  uint64_t first = (offset + every - 1) / every * every;
  for (uint64_t p = first; p + 16 <= offset + rec.size(); p += every) {
    const std::byte* at = rec.data() + (p - offset);
    uint64_t a = Load(at), b = Load(at + 8);
    if (a == (kMagic ^ tag) && b == p) continue;
    if (a == 0 && b == 0) return fmt::format("at offset {}: zeros", p);
    if (a == (kMagic ^ tag)) return fmt::format("at offset {}: the data of offset {}", p, b);
    return fmt::format("at offset {}: not written by this run ({:016x} {:016x})", p, a, b);
  }
  return {};
}

Json LatencyJson(const load::Histogram& ns) {
  auto us = [](double v) { return Json(v / 1000.0); };
  Json out = Json::MakeObject();
  out.Set("count", ns.count());
  out.Set("min", us(static_cast<double>(ns.min())));
  out.Set("mean", us(ns.mean()));
  out.Set("p50", us(static_cast<double>(ns.Quantile(0.5))));
  out.Set("p90", us(static_cast<double>(ns.Quantile(0.9))));
  out.Set("p99", us(static_cast<double>(ns.Quantile(0.99))));
  out.Set("max", us(static_cast<double>(ns.max())));
  return out;
}

}  // namespace nfsx::bench
