#include "fuse/mount_options.h"

#include <fmt/format.h>

#include <charconv>

namespace nfsx::fuse {

Result<void> ParseMountOptions(std::string_view list, MountOptions* mount, ClientOptions* client,
                               std::string* error) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view opt = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (opt.empty()) continue;
    std::string_view key = opt.substr(0, opt.find('='));
    bool has_value = key.size() < opt.size();
    std::string_view value = has_value ? opt.substr(key.size() + 1) : std::string_view();
    auto flag = [&](bool* out, bool v) -> Result<void> {
      if (has_value) {
        if (error) *error = fmt::format("mount option '{}' takes no value", key);
        return Fail(EINVAL);
      }
      *out = v;
      return {};
    };
    Result<void> r;
    if (key == "ro") {
      r = flag(&mount->read_only, true);
    } else if (key == "rw") {
      r = flag(&mount->read_only, false);
    } else if (key == "direct_io") {
      r = flag(&mount->direct_io, true);
    } else if (key == "allow_other") {
      r = flag(&mount->allow_other, true);
    } else if (key == "default_permissions") {
      r = flag(&mount->default_permissions, true);
    } else if (key == "writeback_cache") {
      r = flag(&mount->writeback_cache, true);
    } else if (key == "nosplice") {
      r = flag(&mount->splice, false);
    } else if (key == "debug") {
      r = flag(&mount->debug, true);
    } else if (key == "max_threads") {
      int n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 2 || n > 1024) {
        if (error) *error = fmt::format("bad value for max_threads: '{}'", value);
        return Fail(EINVAL);
      }
      mount->max_threads = n;
    } else if (key == "max_names") {
      size_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n < 1) {
        if (error) *error = fmt::format("bad value for max_names: '{}'", value);
        return Fail(EINVAL);
      }
      mount->max_names = n;
    } else {
      // Everything else is a client option, spelled as in the URL query.
      std::string qerr;
      r = client->ApplyQuery(opt, &qerr);
      if (!r && error)
        *error = qerr.starts_with("unknown URL option")
                     ? fmt::format("unknown mount option '{}'", key)
                     : qerr;
      if (!r) return r;
    }
    if (!r) return r;
  }
  return {};
}

}  // namespace nfsx::fuse
