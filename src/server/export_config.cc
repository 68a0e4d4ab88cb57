#include "server/export_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <bitset>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <system_error>
#include <utility>

#include "base/logging.h"

namespace nfsx::server {
namespace {

// MOUNT's MNTPATHLEN: a longer export could never be named in a MNT request.
constexpr size_t kMaxPathLength = 1024;
// An exports file is a few lines; this only stops a mistaken path such as /dev/zero.
constexpr size_t kMaxFileSize = 16 << 20;
// Letters, digits, '.', '-', '_', and the fnmatch(3) pattern characters.
constexpr std::string_view kHostnameChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_*?[]!";

// Errors of the helpers below; Parse() adds the line number.
template <class T>
using Parsed = std::expected<T, std::string>;

std::unexpected<std::string> Bad(std::string message) {
  return std::unexpected<std::string>(std::move(message));
}

struct LineError {
  int line = 0;
  std::string message;
};

// Refuses ".." instead of resolving it: behind a symlink "a/b/.." need not be "a", and an
// export must be exactly the directory its line names.
Parsed<std::string> NormalizePath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return Bad(fmt::format("export path '{}' is not absolute", path));
  }
  if (path.find('\0') != std::string_view::npos) return Bad("export path contains a NUL byte");
  std::string out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return Bad(fmt::format("export path '{}' contains '..'", path));
    out += '/';
    out += part;
  }
  if (out.empty()) out = "/";
  if (out.size() > kMaxPathLength) {
    return Bad(fmt::format("export path is longer than {} bytes", kMaxPathLength));
  }
  return out;
}

// \ooo stands for one byte of a path, as exportfs writes names with spaces.
Parsed<std::string> DecodeEscapes(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
      if (v == 0 || v > 255) return Bad(fmt::format("bad escape '{}' in path", s.substr(i, 4)));
      out += static_cast<char>(v);
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Token {
  std::string text;  // quotes removed; escapes still in place
  int line = 0;      // physical line the token starts on
};

// Splits text into logical lines of tokens. Whitespace inside parentheses does not end a
// token, so "host(rw, sync)" stays one client.
std::expected<std::vector<std::vector<Token>>, LineError> Lex(std::string_view text) {
  std::vector<std::vector<Token>> lines;
  std::vector<Token> tokens;
  Token token;
  bool in_token = false;
  bool in_quotes = false;
  int depth = 0;
  int line = 1;
  int quote_line = 0;

  auto begin_token = [&] {
    if (!in_token) {
      in_token = true;
      token.line = line;
    }
  };
  auto end_token = [&] {
    if (in_token) tokens.push_back(std::move(token));
    token = Token{};
    in_token = false;
    depth = 0;
  };
  auto blank = [&](char c) {
    if (depth > 0) {
      token.text += c;
    } else {
      end_token();
    }
  };
  auto end_line = [&] {
    end_token();
    if (!tokens.empty()) lines.push_back(std::move(tokens));
    tokens.clear();
  };

  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\0') return std::unexpected(LineError{line, "NUL byte in file"});
    if (in_quotes) {
      if (c == '"') {
        in_quotes = false;
      } else if (c == '\n') {
        return std::unexpected(LineError{quote_line, "unterminated quote"});
      } else {
        token.text += c;
      }
      continue;
    }
    switch (c) {
      case '\n':
        end_line();
        ++line;
        break;
      case ' ':
      case '\t':
      case '\r':
      case '\f':
      case '\v':
        blank(c);
        break;
      case '#':
        while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        break;
      case '"':
        begin_token();
        in_quotes = true;
        quote_line = line;
        break;
      case '\\': {
        // A continuation if only blanks and perhaps a comment follow on this line.
        size_t j = i + 1;
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r')) ++j;
        if (j < text.size() && text[j] == '#') {
          while (j < text.size() && text[j] != '\n') ++j;
        }
        if (j < text.size() && text[j] != '\n') {
          begin_token();
          token.text += c;
          break;
        }
        blank(' ');
        if (j < text.size()) ++line;
        i = j;
        break;
      }
      case '(':
        begin_token();
        ++depth;
        token.text += c;
        break;
      case ')':
        begin_token();
        if (depth > 0) --depth;
        token.text += c;
        break;
      default:
        begin_token();
        token.text += c;
        break;
    }
  }
  if (in_quotes) return std::unexpected(LineError{quote_line, "unterminated quote"});
  end_line();
  return lines;
}

// Options while a line is read. root_squash and all_squash are separate switches, as in
// Linux, so that "all_squash,no_root_squash" still squashes everyone.
struct OptionState {
  ExportOptions options;
  bool root_squash = true;
  bool all_squash = false;

  ExportOptions Finish() const {
    ExportOptions o = options;
    o.squash = all_squash ? Squash::kAll : root_squash ? Squash::kRoot : Squash::kNone;
    return o;
  }
};

Parsed<uint32_t> ParseNumber(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return Bad("");
  return v;
}

Parsed<void> ApplyOption(std::string_view option, OptionState* st) {
  ExportOptions& o = st->options;
  size_t eq = option.find('=');
  std::string_view name = option.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? "" : option.substr(eq + 1);

  if (name == "anonuid" || name == "anongid") {
    // uid (uint32_t)-1 means "no change" to chown and setfsuid, so it cannot be an identity.
    auto id = ParseNumber(value);
    if (eq == std::string_view::npos || !id || *id == UINT32_MAX) {
      return Bad(fmt::format("bad {} in '{}': expected a number from 0 to {}", name, option,
                             UINT32_MAX - 1));
    }
    (name == "anonuid" ? o.anonuid : o.anongid) = *id;
    return {};
  }
  if (name == "fsid") {
    auto id = value == "root" ? Parsed<uint32_t>(0) : ParseNumber(value);
    if (eq == std::string_view::npos || !id || *id > UINT16_MAX) {
      return Bad(fmt::format("bad fsid in '{}': expected a number from 0 to {}, or root", option,
                             UINT16_MAX));
    }
    o.fsid = *id;
    return {};
  }
  if (name == "sec" && eq != std::string_view::npos) {
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t colon = value.find(':', pos);
      if (colon == std::string_view::npos) colon = value.size();
      std::string_view flavor = value.substr(pos, colon - pos);
      if (flavor != "sys") {
        return Bad(fmt::format("sec={} is not supported (only sec=sys)", flavor));
      }
      pos = colon + 1;
    }
    return {};
  }

  if (option == "rw") {
    o.read_only = false;
  } else if (option == "ro") {
    o.read_only = true;
  } else if (option == "root_squash") {
    st->root_squash = true;
  } else if (option == "no_root_squash") {
    st->root_squash = false;
  } else if (option == "all_squash") {
    st->all_squash = true;
  } else if (option == "no_all_squash") {
    st->all_squash = false;
  } else if (option == "secure") {
    o.secure = true;
  } else if (option == "insecure") {
    o.secure = false;
  } else if (option == "sync") {
    o.sync = true;
  } else if (option == "async") {
    o.sync = false;
  } else if (option == "no_subtree_check" || option == "subtree_check" || option == "wdelay" ||
             option == "no_wdelay" || option == "crossmnt" || option == "nohide" ||
             option == "hide") {
    // Kernel-server tuning with no meaning here; accepted so Linux files load unchanged.
  } else {
    return Bad(fmt::format("unknown option '{}'", option));
  }
  return {};
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// A comma-separated list; blanks around items and empty items are ignored.
Parsed<void> ApplyOptions(std::string_view list, OptionState* st) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view option = list.substr(pos, comma - pos);
    pos = comma + 1;
    while (!option.empty() && IsBlank(option.front())) option.remove_prefix(1);
    while (!option.empty() && IsBlank(option.back())) option.remove_suffix(1);
    if (option.empty()) continue;
    if (auto r = ApplyOption(option, st); !r) return r;
  }
  return {};
}

std::array<uint8_t, 16> MapV4(const in_addr& a) {
  std::array<uint8_t, 16> out{};
  out[10] = 0xff;
  out[11] = 0xff;
  std::memcpy(&out[12], &a, 4);
  return out;
}

void ClearHostBits(std::array<uint8_t, 16>* addr, int prefix_len) {
  for (int i = 0; i < 16; ++i) {
    int keep = std::clamp(prefix_len - i * 8, 0, 8);
    (*addr)[i] &= static_cast<uint8_t>(0xff00u >> keep);
  }
}

bool PrefixMatches(const std::array<uint8_t, 16>& net, int prefix_len,
                   const std::array<uint8_t, 16>& addr) {
  std::array<uint8_t, 16> masked = addr;
  ClearHostBits(&masked, prefix_len);
  return masked == net;
}

// An IPv4 address comes back v4-mapped, so one 128-bit comparison serves both families.
bool ParseAddress(std::string_view text, std::array<uint8_t, 16>* addr, bool* v4) {
  std::string s(text);
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) {
    *addr = MapV4(a4);
    *v4 = true;
    return true;
  }
  if (inet_pton(AF_INET6, s.c_str(), &a6) == 1) {
    std::memcpy(addr->data(), &a6, 16);
    *v4 = false;
    return true;
  }
  return false;
}

Parsed<ClientRule> ParseNetwork(std::string_view spec) {
  size_t slash = spec.find('/');
  std::string_view host = spec.substr(0, slash);
  std::string_view mask = spec.substr(slash + 1);
  ClientRule rule;
  rule.kind = ClientRule::Kind::kNetwork;
  rule.spec = std::string(spec);
  bool v4 = false;
  if (!ParseAddress(host, &rule.addr, &v4)) {
    return Bad(fmt::format("bad network '{}': '{}' is not an IP address", spec, host));
  }
  int max_len = v4 ? 32 : 128;
  if (auto len = ParseNumber(mask)) {
    if (*len > static_cast<uint32_t>(max_len)) {
      return Bad(fmt::format("bad network '{}': prefix length must be 0 to {}", spec, max_len));
    }
    rule.prefix_len = static_cast<int>(*len);
  } else {
    in_addr m{};
    if (!v4 || inet_pton(AF_INET, std::string(mask).c_str(), &m) != 1) {
      return Bad(fmt::format("bad network '{}': expected /length{}", spec,
                             v4 ? " or /a.b.c.d netmask" : ""));
    }
    uint32_t bits = ntohl(m.s_addr);
    uint32_t host_bits = ~bits;
    if ((host_bits & (host_bits + 1)) != 0) {
      return Bad(fmt::format("bad network '{}': netmask is not contiguous", spec));
    }
    rule.prefix_len = std::popcount(bits);
  }
  if (v4) rule.prefix_len += 96;
  // exportfs accepts host bits in the base address (192.0.2.7/24) and means the network.
  ClearHostBits(&rule.addr, rule.prefix_len);
  return rule;
}

Parsed<ClientRule> ParseClient(std::string_view spec) {
  ClientRule rule;
  rule.spec = std::string(spec);
  if (spec.empty()) return Bad("empty client name");
  if (spec == "*") {
    rule.kind = ClientRule::Kind::kAnyone;
    return rule;
  }
  if (spec.front() == '@') return Bad(fmt::format("netgroups are not supported: '{}'", spec));
  if (spec.starts_with("gss/")) {
    return Bad(fmt::format("'{}' is not supported; only AUTH_SYS (sec=sys) is", spec));
  }
  if (spec.find('/') != std::string_view::npos) return ParseNetwork(spec);
  bool v4 = false;
  if (ParseAddress(spec, &rule.addr, &v4)) {
    rule.kind = ClientRule::Kind::kHost;
    rule.prefix_len = 128;
    return rule;
  }
  // What looks like an address must be one, or a typo would become a hostname that never
  // matches and the line would silently admit nobody.
  if (spec.find(':') != std::string_view::npos ||
      spec.find_first_not_of("0123456789.") == std::string_view::npos) {
    return Bad(fmt::format("bad IP address '{}'", spec));
  }
  if (spec.find_first_not_of(kHostnameChars) != std::string_view::npos) {
    return Bad(fmt::format("bad client '{}'", spec));
  }
  // A verified client name has no empty label, so "host..example" or ".example" (a typo)
  // would silently admit nobody. One trailing dot is a fully qualified name.
  std::string_view labels = spec.ends_with('.') ? spec.substr(0, spec.size() - 1) : spec;
  if (labels.empty() || labels.front() == '.' || labels.back() == '.' ||
      labels.find("..") != std::string_view::npos) {
    return Bad(fmt::format("bad host name '{}': empty label", spec));
  }
  rule.kind = spec.find_first_of("*?[") == std::string_view::npos ? ClientRule::Kind::kHost
                                                                  : ClientRule::Kind::kWildcard;
  // exports(5) matches patterns against host names only, so "192.168.1.*" would
  // admit whoever names a host 192.168.1.anything in a domain they own.
  if (rule.kind == ClientRule::Kind::kWildcard &&
      spec.find_first_not_of("0123456789.*?[]-!") == std::string_view::npos) {
    return Bad(fmt::format(
        "'{}' looks like an address pattern, but patterns match host names: use a network "
        "(192.0.2.0/24)",
        spec));
  }
  for (char c : spec) {
    rule.hostname += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  if (rule.hostname.size() > 1 && rule.hostname.back() == '.') rule.hostname.pop_back();
  return rule;
}

// FNV-1a 64, xor-folded to 16 bits. Folding rather than keeping the top 16 bits matters:
// the FNV prime is 2^40 + 0x1b3, so the last byte barely reaches the top bits, and
// /srv/vol1 ... /srv/vol9 would all get the same top 16 bits. Never change this function:
// its values are inside file handles that clients hold across server restarts.
uint16_t PathHash(std::string_view path) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : path) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 32;
  h ^= h >> 16;
  return static_cast<uint16_t>(h);
}

// The first free id at or after the path's hash, skipping 0; nullopt if all are taken.
std::optional<uint16_t> ProbeId(std::string_view path, const std::bitset<65536>& taken) {
  uint16_t id = PathHash(path);
  for (int tries = 0; tries < 65536; ++tries, ++id) {
    if (id != 0 && !taken[id]) return id;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::array<uint8_t, 16>> ClientAddress(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof(in));
    return MapV4(in.sin_addr);
  }
  if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof(in6));
    std::array<uint8_t, 16> out;
    std::memcpy(out.data(), &in6.sin6_addr, 16);
    return out;
  }
  return std::nullopt;
}

Result<ExportTable> ExportTable::Parse(std::string_view text, std::string* error) {
  auto fail = [error](int line, std::string_view message) {
    if (error != nullptr) *error = fmt::format("line {}: {}", line, message);
    return Fail(EINVAL);
  };
  auto lines = Lex(text);
  if (!lines) return fail(lines.error().line, lines.error().message);

  ExportTable table;
  std::vector<int> line_of;  // per export, for messages about an earlier line
  std::vector<std::optional<uint16_t>> fsid_of;
  std::bitset<65536> taken;
  for (const std::vector<Token>& tokens : *lines) {
    const Token& first = tokens.front();
    auto decoded = DecodeEscapes(first.text);
    if (!decoded) return fail(first.line, decoded.error());
    auto path = NormalizePath(*decoded);
    if (!path) return fail(first.line, path.error());
    for (size_t k = 0; k < table.exports_.size(); ++k) {
      if (table.exports_[k].path == *path) {
        return fail(first.line,
                    fmt::format("{} is already exported on line {}", *path, line_of[k]));
      }
    }

    Export e;
    e.path = *path;
    OptionState defaults;
    std::optional<uint16_t> fsid;
    for (size_t t = 1; t < tokens.size(); ++t) {
      const Token& tok = tokens[t];
      std::string_view s = tok.text;
      if (s.starts_with('-')) {
        if (auto r = ApplyOptions(s.substr(1), &defaults); !r) return fail(tok.line, r.error());
        continue;
      }
      if (s.starts_with('(')) {
        return fail(tok.line, fmt::format("options '{}' must follow a client with no space "
                                          "between, as in client{}",
                                          s, s));
      }
      size_t open = s.find('(');
      auto rule = ParseClient(s.substr(0, open));
      if (!rule) return fail(tok.line, rule.error());
      OptionState st = defaults;
      if (open != std::string_view::npos) {
        std::string_view list = s.substr(open + 1);
        if (!list.ends_with(')')) return fail(tok.line, fmt::format("missing ')' in '{}'", s));
        list.remove_suffix(1);
        if (list.find_first_of("()") != std::string_view::npos) {
          return fail(tok.line, fmt::format("bad option list in '{}'", s));
        }
        if (auto r = ApplyOptions(list, &st); !r) return fail(tok.line, r.error());
      }
      rule->options = st.Finish();
      if (rule->options.fsid) {
        auto id = static_cast<uint16_t>(*rule->options.fsid);
        if (fsid && *fsid != id) {
          return fail(tok.line,
                      fmt::format("conflicting fsid values {} and {} for {}", *fsid, id, e.path));
        }
        fsid = id;
      }
      e.clients.push_back(std::move(*rule));
    }
    if (e.clients.empty()) {
      ClientRule anyone;
      anyone.kind = ClientRule::Kind::kAnyone;
      anyone.spec = "*";
      anyone.options = defaults.Finish();
      if (anyone.options.fsid) fsid = static_cast<uint16_t>(*anyone.options.fsid);
      e.clients.push_back(std::move(anyone));
    }
    if (fsid) {
      if (taken[*fsid]) {
        for (size_t k = 0; k < fsid_of.size(); ++k) {
          if (fsid_of[k] == fsid) {
            return fail(first.line, fmt::format("fsid {} is already used by {} on line {}", *fsid,
                                                table.exports_[k].path, line_of[k]));
          }
        }
      }
      taken.set(*fsid);
      e.export_id = *fsid;
    }
    table.exports_.push_back(std::move(e));
    line_of.push_back(first.line);
    fsid_of.push_back(fsid);
  }

  // Hashed ids only after every fsid is known, so that an fsid on a later line still
  // gets exactly its number.
  for (size_t k = 0; k < table.exports_.size(); ++k) {
    if (fsid_of[k]) continue;
    auto id = ProbeId(table.exports_[k].path, taken);
    if (!id) return fail(line_of[k], "too many exports: no 16-bit export id left");
    taken.set(*id);
    table.exports_[k].export_id = *id;
  }
  return table;
}

Result<ExportTable> ExportTable::Load(const std::string& file, std::string* error) {
  auto io_fail = [&](int code) {
    if (error != nullptr) {
      *error =
          fmt::format("{}: {}", file, std::error_code(code, std::generic_category()).message());
    }
    return Fail(code);
  };
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_fail(errno);
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int code = errno;
      ::close(fd);
      return io_fail(code);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxFileSize) {
      ::close(fd);
      return io_fail(EFBIG);
    }
  }
  ::close(fd);
  auto table = Parse(text, error);
  if (!table && error != nullptr) *error = fmt::format("{}: {}", file, *error);
  return table;
}

ExportTable ExportTable::Single(const std::string& abs_path) {
  auto path = NormalizePath(abs_path);
  if (!path) {
    log::Error("ExportTable::Single: {}", path.error());
    std::abort();
  }
  ExportOptions options;
  options.read_only = false;
  options.squash = Squash::kRoot;
  options.secure = false;
  options.sync = true;

  Export e;
  e.path = *path;
  for (std::string_view spec : {"127.0.0.1", "::1"}) {
    ClientRule rule = *ParseClient(spec);
    rule.options = options;
    e.clients.push_back(std::move(rule));
  }
  e.export_id = *ProbeId(e.path, std::bitset<65536>());

  ExportTable table;
  table.exports_.push_back(std::move(e));
  return table;
}

const Export* ExportTable::FindByPath(std::string_view path) const {
  auto normal = NormalizePath(path);
  if (!normal) return nullptr;
  for (const Export& e : exports_) {
    if (e.path == *normal) return &e;
  }
  return nullptr;
}

const Export* ExportTable::FindById(uint16_t id) const {
  for (const Export& e : exports_) {
    if (e.export_id == id) return &e;
  }
  return nullptr;
}

const ExportOptions* ExportTable::Match(const Export& e, const sockaddr* addr,
                                        std::string_view hostname,
                                        const ResolvedRules* resolved) const {
  if (addr == nullptr) return nullptr;
  std::optional<std::array<uint8_t, 16>> client = ClientAddress(addr);
  std::string name;
  for (char c : hostname) name += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (name.size() > 1 && name.back() == '.') name.pop_back();

  const ClientRule* best = nullptr;
  for (size_t i = 0; i < e.clients.size(); ++i) {
    const ClientRule& rule = e.clients[i];
    if (best != nullptr && best->kind <= rule.kind) continue;
    bool matches = false;
    switch (rule.kind) {
      case ClientRule::Kind::kAnyone:
        matches = true;
        break;
      case ClientRule::Kind::kHost:
      case ClientRule::Kind::kNetwork:
        if (!rule.hostname.empty()) {
          matches = !name.empty() && name == rule.hostname;
          if (!matches && client && resolved && i < resolved->size()) {
            matches = std::ranges::find((*resolved)[i], *client) != (*resolved)[i].end();
          }
        } else {
          matches = client && PrefixMatches(rule.addr, rule.prefix_len, *client);
        }
        break;
      case ClientRule::Kind::kWildcard:
        // Without FNM_PERIOD or FNM_PATHNAME "*" also spans dots, so *.example.com covers
        // subdomains too, as exports(5) says.
        matches = !name.empty() && fnmatch(rule.hostname.c_str(), name.c_str(), 0) == 0;
        break;
    }
    if (matches) best = &rule;
  }
  return best != nullptr ? &best->options : nullptr;
}

}  // namespace nfsx::server
