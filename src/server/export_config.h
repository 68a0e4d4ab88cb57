// The export table: which directories the server offers, to which clients, with which options.
//
// The text format is exports(5) as the Linux NFS server reads it. What this server cannot
// honour (netgroups, gss/ clients, Kerberos flavours, uuid fsids) is rejected rather than
// skipped, so a file never quietly grants something other than what it says. Deliberate
// differences from Linux:
//   - `client (opts)`, with a space, is an error. Linux applies "(opts)" to every host,
//     which is almost never what the writer meant.
//   - Hostname rules match the client's verified name (ClientNames: a reverse lookup of
//     its address confirmed by a forward lookup), which the caller passes to Match().
//   - fsid must be a number from 0 to 65535 ("root" means 0), because it becomes the
//     16-bit export id.
//
// An ExportTable never changes after it is built, so concurrent readers need no lock.
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace nfsx::server {

enum class Squash {
  kNone,  // no_root_squash: credentials are used as sent
  kRoot,  // root_squash: uid 0 / gid 0 become anonuid / anongid
  kAll,   // all_squash: every uid / gid becomes anonuid / anongid
};

struct ExportOptions {
  bool read_only = true;          // ro (the default, as Linux) / rw
  Squash squash = Squash::kRoot;  // root_squash, no_root_squash, all_squash, no_all_squash
  uint32_t anonuid = 65534;
  uint32_t anongid = 65534;
  // secure: the client's source port must be below 1024. Match() does not look at ports,
  // so whoever calls it checks this flag.
  bool secure = true;
  bool sync = true;  // sync / async
  // fsid=N as written for this client; the export-wide result is Export::export_id.
  std::optional<uint32_t> fsid;

  friend bool operator==(const ExportOptions&, const ExportOptions&) = default;
};

// One client specification of an export line and the options that go with it.
struct ClientRule {
  // Declared in exports(5) precedence order: when several rules of a line match a client,
  // the matching rule of the lowest kind wins, and only between rules of the same kind
  // does the one written first win.
  enum class Kind {
    kHost,      // a single IPv4 or IPv6 address, or one exact hostname
    kNetwork,   // a.b.c.d/nn, a.b.c.d/255.255.0.0, ipv6/nn
    kWildcard,  // a hostname pattern with *, ? or [...], such as *.example.com
    kAnyone,    // "*"
  };

  Kind kind = Kind::kAnyone;
  std::string spec;  // as written, for logs and the MOUNT EXPORT reply
  // kHost by name and kWildcard: the lower-case name or pattern. Empty for address rules.
  std::string hostname;
  // Address rules (kHost without hostname, kNetwork): the network as an IPv6 address with
  // its host bits cleared, and its prefix length in bits. IPv4 is stored in its v4-mapped
  // form (::ffff:a.b.c.d, prefix 96 + n) so that one comparison serves clients that
  // arrive over IPv4 and over a dual-stack IPv6 socket alike.
  std::array<uint8_t, 16> addr{};
  int prefix_len = 0;
  ExportOptions options;
};

struct Export {
  // Absolute and normalised: no trailing slash except for "/", no "." or ".." components,
  // no repeated slashes.
  std::string path;
  std::vector<ClientRule> clients;  // in the order written; never empty
  // Whether a rule names clients by host name or pattern, so that matching needs the
  // client's name.
  bool HasNameRules() const {
    return std::ranges::any_of(clients, [](const ClientRule& c) { return !c.hostname.empty(); });
  }
  // Goes into every file handle of the export, so it must stay the same for the same file
  // across restarts: the export's fsid when one is given; otherwise the FNV-1a 64 hash of
  // the path xor-folded to 16 bits, moving up one at a time (wrapping, never 0) past ids
  // already taken by an fsid anywhere in the file or by an earlier line. Adding a line can
  // therefore only move another export's id if their hashes collide; set fsid to rule even
  // that out.
  uint16_t export_id = 0;
};

// An AF_INET or AF_INET6 address as 16 bytes, IPv4 in its v4-mapped form
// (::ffff:a.b.c.d); nullopt for other families.
std::optional<std::array<uint8_t, 16>> ClientAddress(const sockaddr* addr);

class ExportTable {
 public:
  // A table that exports nothing.
  ExportTable() = default;

  // Parses exports(5) text. On failure returns EINVAL and, when `error` is not null, sets
  // it to "line N: what is wrong", N counting physical lines from 1.
  //
  // Syntax: one export per line, `/path client(opt,...) client ...`. `#` starts a comment
  // anywhere outside double quotes; a backslash at the end of a line (trailing blanks and
  // a comment may follow it) continues the line. Double quotes may enclose any part of
  // the path (for spaces), and \ooo (three octal digits) stands for one byte of it.
  // `-opt,...` after the path sets default options for the clients after it on the same
  // line; a client without parentheses gets those defaults, and a line without clients
  // exports to "*" with them. Clients: "*", a.b.c.d, an IPv6 address (no brackets),
  // a.b.c.d/nn, a.b.c.d/255.255.0.0, ipv6/nn, a hostname, or a hostname pattern.
  // Options: rw ro root_squash no_root_squash all_squash no_all_squash anonuid=N
  // anongid=N secure insecure sync async fsid=N|root sec=sys, and the accepted no-ops
  // no_subtree_check subtree_check wdelay no_wdelay crossmnt nohide hide. When options
  // contradict each other the later one wins, except that all_squash overrides
  // no_root_squash whatever the order (as in Linux).
  static Result<ExportTable> Parse(std::string_view text, std::string* error);

  // Reads and parses `file`. Errors name the file: "FILE: line N: ..." for syntax errors
  // (EINVAL), "FILE: <strerror>" with the errno for files that cannot be read.
  static Result<ExportTable> Load(const std::string& file, std::string* error);

  // What `nfsx serve DIR` exports without a file: `abs_path` to 127.0.0.1 and ::1 only,
  // rw, root_squash, sync and insecure, so that unprivileged clients (the Linux kernel
  // client behind a user-mode port forwarder) can mount. The export id is the one Parse()
  // would give the path alone. `abs_path` must be absolute and free of ".." components
  // (realpath()'s output is); anything else is a programming error, and aborts.
  static ExportTable Single(const std::string& abs_path);

  const std::vector<Export>& exports() const { return exports_; }

  // The export a MOUNT request's path names, compared after normalising it like the export
  // paths ("/srv/a/" and "/srv//a" name "/srv/a"); nullptr if none. A path with ".." or
  // that is not absolute names no export.
  const Export* FindByPath(std::string_view path) const;
  const Export* FindById(uint16_t id) const;

  // The options that `e` grants the client at `addr` (an AF_INET or AF_INET6 address;
  // IPv4-mapped IPv6 addresses count as IPv4), or nullptr if `e` does not admit it. Among
  // the rules that match, the one of the most specific kind wins (see ClientRule::Kind),
  // then the first written. Hostname rules match when `hostname`, the client's already
  // resolved and verified name, is given and matches; a rule naming one host also
  // matches a client at one of the addresses that name resolved to when the export
  // was set up (`resolved`, by rule index: how exportfs matches an abbreviated name
  // such as `build`). The table does no DNS. Address rules never match other address
  // families. A null `addr` matches nothing. The result points into `e`.
  using ResolvedRules = std::vector<std::vector<std::array<uint8_t, 16>>>;
  const ExportOptions* Match(const Export& e, const sockaddr* addr, std::string_view hostname = {},
                             const ResolvedRules* resolved = nullptr) const;

 private:
  std::vector<Export> exports_;
};

}  // namespace nfsx::server
