// The exports(5) parser (ExportTable::Parse): the server reads it at start, and a file an
// administrator gets subtly wrong must be refused, never half-read or crash the server.
// Seeds: fuzz/server_seeds.py.
//
// Invariants (a violation aborts): a refusal says "line N: ..." with N within the text; an
// accepted table has normalised absolute paths, each exported once, under distinct export
// ids, each with at least one client rule; every rule's network has its host bits clear;
// FindByPath and FindById find each export; and an address rule admits its own address,
// a host-name rule its own name.
#include <netinet/in.h>
#include <string.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz/round_trip.h"
#include "server/export_config.h"

namespace nfsx::fuzz {
namespace {

constexpr const char* kWhat = "ExportTable::Parse";

bool Normalised(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/' || path.find("//") != std::string::npos) return false;
  for (size_t at = 0; at < path.size();) {
    size_t end = path.find('/', at + 1);
    std::string_view part = std::string_view(path).substr(at + 1, end - at - 1);
    if (part == "." || part == "..") return false;
    if (end == std::string::npos) break;
    at = end;
  }
  return true;
}

// A socket address for a rule's own network address (IPv4 rules are stored v4-mapped).
sockaddr_storage AddressOf(const server::ClientRule& rule) {
  sockaddr_storage ss{};
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(rule.addr.data(), kMapped, 12) == 0 && rule.prefix_len >= 96) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    memcpy(&v4.sin_addr, rule.addr.data() + 12, 4);
    memcpy(&ss, &v4, sizeof(v4));
  } else {
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    memcpy(&v6.sin6_addr, rule.addr.data(), 16);
    memcpy(&ss, &v6, sizeof(v6));
  }
  return ss;
}

void CheckTable(const server::ExportTable& table) {
  std::set<std::string> paths;
  std::set<uint16_t> ids;
  for (const server::Export& e : table.exports()) {
    if (!Normalised(e.path)) Violation("a path is not normalised", kWhat);
    if (!paths.insert(e.path).second) Violation("a path is exported twice", kWhat);
    if (!ids.insert(e.export_id).second) Violation("two exports share an id", kWhat);
    if (e.clients.empty()) Violation("an export has no client rule", kWhat);
    if (table.FindByPath(e.path) != &e) Violation("FindByPath misses an export", kWhat);
    if (table.FindById(e.export_id) != &e) Violation("FindById misses an export", kWhat);
    for (const server::ClientRule& rule : e.clients) {
      using Kind = server::ClientRule::Kind;
      if (rule.spec.empty()) Violation("a rule has no spec", kWhat);
      bool by_address =
          (rule.kind == Kind::kHost || rule.kind == Kind::kNetwork) && rule.hostname.empty();
      if (!by_address) {
        if (rule.kind == Kind::kHost && table.Match(e, nullptr, rule.hostname) != nullptr) {
          Violation("a rule matched a null address", kWhat);
        }
        if (rule.kind == Kind::kHost) {
          sockaddr_in v4{};
          v4.sin_family = AF_INET;
          if (table.Match(e, reinterpret_cast<const sockaddr*>(&v4), rule.hostname) == nullptr) {
            Violation("a host-name rule does not admit its own name", kWhat);
          }
        }
        continue;
      }
      if (rule.prefix_len < 0 || rule.prefix_len > 128) Violation("prefix out of range", kWhat);
      for (int bit = rule.prefix_len; bit < 128; ++bit) {
        if (rule.addr[static_cast<size_t>(bit / 8)] & (0x80 >> (bit % 8))) {
          Violation("a network has host bits set", kWhat);
        }
      }
      sockaddr_storage ss = AddressOf(rule);
      if (table.Match(e, reinterpret_cast<const sockaddr*>(&ss)) == nullptr) {
        Violation("an address rule does not admit its own address", kWhat);
      }
    }
  }
}

}  // namespace
}  // namespace nfsx::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsx;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto table = server::ExportTable::Parse(text, &error);
  if (!table) {
    // "line N: ..." with 1 <= N <= the number of lines (a final line without a newline
    // counts too).
    size_t lines = 1;
    for (char c : text) lines += c == '\n';
    unsigned long n = 0;
    if (!error.starts_with("line ") || std::sscanf(error.c_str(), "line %lu:", &n) != 1 || n < 1 ||
        n > lines) {
      fuzz::Violation("a refusal does not name a line of the text", "ExportTable::Parse");
    }
    return 0;
  }
  fuzz::CheckTable(*table);
  return 0;
}
