#include "bench/driver.h"

#include <cerrno>

#include "bench/nfsx_driver.h"
#include "bench/path_driver.h"
#ifdef NFSX_BENCH_HAVE_LIBNFS
#include "bench/libnfs_driver.h"
#endif

namespace nfsx::bench {

std::optional<DriverSpec> ParseDriverSpec(const std::string& text, std::string* error) {
  if (text == "nfsx" || text == "libnfs") return DriverSpec{text, ""};
  if (text.starts_with("path:") && text.size() > 5) return DriverSpec{"path", text.substr(5)};
  *error = "--driver must be nfsx, libnfs or path:DIR";
  return std::nullopt;
}

Result<void> BenchFile::StartPread(std::span<std::byte> /*out*/, uint64_t /*offset*/,
                                   uint64_t /*tag*/) {
  return Fail(ENOTSUP);
}
Result<void> BenchFile::StartPwrite(std::span<const std::byte> /*data*/, uint64_t /*offset*/,
                                    uint64_t /*tag*/) {
  return Fail(ENOTSUP);
}
Result<void> BenchFile::Reap(std::vector<Completion>* /*done*/) { return Fail(ENOTSUP); }

bool HaveLibnfsDriver() {
#ifdef NFSX_BENCH_HAVE_LIBNFS
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<Driver>> MakeDriver(const DriverSpec& spec, const std::string& url,
                                           std::string* error) {
  if (spec.kind == "path") return MakePathDriver(spec.dir, error);
  if (spec.kind == "nfsx") return MakeNfsxDriver(url, error);
#ifdef NFSX_BENCH_HAVE_LIBNFS
  if (spec.kind == "libnfs") return MakeLibnfsDriver(url, error);
#endif
  *error = "this nfsx was built without libnfs (apt install libnfs-dev, then rebuild)";
  return Fail(ENOTSUP);
}

}  // namespace nfsx::bench
