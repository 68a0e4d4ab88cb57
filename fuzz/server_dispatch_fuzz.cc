// The whole server behind the transport: call records go through the dispatcher (header,
// credentials, program/version/procedure routing, the duplicate request cache) into every
// NFSv3, MOUNT v3 and port mapper procedure, whose argument decoders and implementations
// run against in-memory exports (memfs backend: no disk, no root).
//
// Input: one byte choosing the caller's address and port (kPeers), then call records, each
// as a 2-byte big-endian length and that many bytes (the last one may be cut short). A
// record is an RPC call message without its record mark, as the transport hands it over.
//
// File handles carry a MAC, so the fuzzer cannot make one up. Anywhere in a record, the
// 8 bytes 00 00 00 04 FF 'F' 'H' N (an opaque of 4 bytes, the way a 4-byte nfs_fh3 would be
// written) are replaced by a real handle: N = 0 the root of /fuzz/rw, 1 the root of /fuzz/ro,
// 2.. the handles that earlier replies handed out, newest first (LOOKUP, CREATE, MKDIR,
// READDIRPLUS, MNT...), and from 0xF0 up handles with a valid MAC that name an unknown
// export, a malformed backend handle or a file that does not exist.
//
// Invariants (a violation aborts): every reply is one record-marked RPC reply with the
// call's xid; a successful one decodes as exactly the procedure's result type, and any
// other carries nothing after its header; a record that is not answered leaves no reply.
//
// One server serves every input, as a real one serves every client (so a crash may need
// the inputs before it: run the whole corpus directory to reproduce); it is rebuilt when
// its exports hold more than kMaxBytes or kMaxFiles, or after kMaxInputs inputs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/out_buffer.h"
#include "fuzz/round_trip.h"
#include "proto/mount3_types.h"
#include "proto/nfs3_types.h"
#include "proto/portmap_types.h"
#include "rpc/dispatcher.h"
#include "rpc/message.h"
#include "server/file_handle.h"
#include "server/portmap_service.h"
#include "server/server.h"
#include "xdr/xdr.h"

namespace nfsx::fuzz {
namespace {

using Bytes = std::span<const std::byte>;

// Exports of the shapes the server distinguishes: read-write and read-only, root squashed
// or not, all_squash, secure and insecure, by address, network, IPv6, host name, wildcard
// and anyone. fsids fix the export ids (1 and 2), so kUnknownExport names no export.
constexpr const char* kExports =
    "/fuzz/rw 127.0.0.1(rw,insecure,no_root_squash,async,fsid=1) "
    "192.0.2.0/24(rw,all_squash,anonuid=1000,anongid=1000) fuzz.example(rw,secure) "
    "::1(rw,insecure) *.wild.example(ro,insecure) *(ro,insecure)\n"
    "/fuzz/ro -ro,fsid=2 127.0.0.0/8(insecure,root_squash) 198.51.100.1(rw)\n";
constexpr uint16_t kUnknownExport = 3;

struct PeerSpec {
  const char* addr;  // null: a transport without an address family we know
  uint16_t port;
};
constexpr PeerSpec kPeers[] = {
    {"127.0.0.1", 700},         {"127.0.0.1", 40000}, {"127.0.0.2", 800},
    {"192.0.2.9", 900},         {"::1", 600},         {"198.51.100.1", 1023},
    {"::ffff:127.0.0.1", 2049}, {"203.0.113.5", 111}, {nullptr, 0},
};

// A stand-in for DNS, so that host-name rules are exercised without the network:
// 127.0.0.2 is fuzz.example, 192.0.2.9 claims a name whose forward lookup disagrees.
server::NameResolver FakeResolver() {
  auto v4 = [](uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return server::Address16{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
  };
  server::NameResolver r;
  r.reverse = [v4](const server::Address16& a) {
    server::ReverseAnswer answer;
    if (a == v4(127, 0, 0, 2)) answer = {server::ReverseAnswer::kName, "Fuzz.Example."};
    if (a == v4(192, 0, 2, 9)) answer = {server::ReverseAnswer::kName, "a.wild.example"};
    if (a == v4(203, 0, 113, 5)) answer.kind = server::ReverseAnswer::kFailed;
    return answer;
  };
  r.forward = [v4](const std::string& name) {
    server::ForwardAnswer answer;
    if (name == "fuzz.example") answer.addresses.push_back(v4(127, 0, 0, 2));
    if (name == "a.wild.example") answer.addresses.push_back(v4(192, 0, 2, 10));
    return answer;
  };
  return r;
}

rpc::Peer MakePeer(const PeerSpec& spec) {
  rpc::Peer peer;
  peer.port = spec.port;
  if (spec.addr == nullptr) {
    peer.addr.ss_family = AF_UNIX;
    peer.addr_len = sizeof(sa_family_t);
    peer.host = "unix";
    return peer;
  }
  peer.host = spec.addr;
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (inet_pton(AF_INET, spec.addr, &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(spec.port);
    memcpy(&peer.addr, &v4, sizeof(v4));
    peer.addr_len = sizeof(v4);
  } else if (inet_pton(AF_INET6, spec.addr, &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(spec.port);
    memcpy(&peer.addr, &v6, sizeof(v6));
    peer.addr_len = sizeof(v6);
  } else {
    std::abort();
  }
  return peer;
}

// ---- what a reply must decode as ----

using Check = bool (*)(xdr::XdrDecoder&);

template <class T>
bool Decodes(xdr::XdrDecoder& d) {
  T value{};
  d(value);
  return d.ok();
}
bool DecodesVoid(xdr::XdrDecoder&) { return true; }

constexpr Check kNfs3Results[nfs3::kNumProcs] = {
    DecodesVoid,
    Decodes<nfs3::GETATTR3res>,
    Decodes<nfs3::SETATTR3res>,
    Decodes<nfs3::LOOKUP3res>,
    Decodes<nfs3::ACCESS3res>,
    Decodes<nfs3::READLINK3res>,
    Decodes<nfs3::READ3res>,
    Decodes<nfs3::WRITE3res>,
    Decodes<nfs3::CREATE3res>,
    Decodes<nfs3::MKDIR3res>,
    Decodes<nfs3::SYMLINK3res>,
    Decodes<nfs3::MKNOD3res>,
    Decodes<nfs3::REMOVE3res>,
    Decodes<nfs3::RMDIR3res>,
    Decodes<nfs3::RENAME3res>,
    Decodes<nfs3::LINK3res>,
    Decodes<nfs3::READDIR3res>,
    Decodes<nfs3::READDIRPLUS3res>,
    Decodes<nfs3::FSSTAT3res>,
    Decodes<nfs3::FSINFO3res>,
    Decodes<nfs3::PATHCONF3res>,
    Decodes<nfs3::COMMIT3res>,
};
constexpr Check kMount3Results[] = {
    DecodesVoid, Decodes<mount3::mountres3>, Decodes<mount3::mountlist>, DecodesVoid,
    DecodesVoid, Decodes<mount3::exports>,
};
constexpr Check kPortmapResults[] = {
    DecodesVoid, Decodes<bool>, Decodes<bool>, Decodes<uint32_t>, Decodes<portmap::pmaplist>,
};

Check ResultCheck(uint32_t prog, uint32_t vers, uint32_t proc) {
  auto pick = [proc](std::span<const Check> table) {
    return proc < table.size() ? table[proc] : nullptr;
  };
  if (prog == nfs3::NFS_PROGRAM && vers == nfs3::NFS_V3) return pick(kNfs3Results);
  if (prog == mount3::MOUNT_PROGRAM && vers == mount3::MOUNT_V3) return pick(kMount3Results);
  if (prog == portmap::PMAP_PROGRAM && vers == portmap::PMAP_VERS) return pick(kPortmapResults);
  return nullptr;
}

// ---- the server ----

// Bounds on what one server accumulates, for memory and for speed: with 20,000 files allowed,
// a 20-minute run slowed from about 3,000 to about 500 inputs per second before each rebuild.
constexpr uint64_t kMaxBytes = 64u << 20;
constexpr uint64_t kMaxFiles = 4000;
constexpr uint64_t kMaxInputs = 50000;
constexpr size_t kLearned = 32;     // handles remembered from replies
constexpr size_t kMaxRecords = 64;  // per input
constexpr uint8_t kMarker[] = {0, 0, 0, 4, 0xff, 'F', 'H'};

class Harness {
 public:
  Harness() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nfsx-fuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) Fatal("mkdtemp");
    state_dir_ = tmpl;
    for (const PeerSpec& p : kPeers) peers_.push_back(MakePeer(p));
    Build();
  }
  ~Harness() {
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(state_dir_, ec);
  }

  void RunInput(Bytes in) {
    if (in.empty()) return;
    const rpc::Peer& peer = peers_[static_cast<uint8_t>(in[0]) % peers_.size()];
    in = in.subspan(1);
    for (size_t n = 0; n < kMaxRecords && in.size() >= 2; ++n) {
      size_t len = (static_cast<size_t>(in[0]) << 8) | static_cast<size_t>(in[1]);
      len = std::min(len, in.size() - 2);
      RunRecord(in.subspan(2, len), peer);
      in = in.subspan(2 + len);
    }
    if (++inputs_ >= kMaxInputs || Full()) Build();
  }

 private:
  [[noreturn]] static void Fatal(const char* what) {
    std::fprintf(stderr, "server_dispatch_fuzz: %s\n", what);
    std::abort();
  }

  void Build() {
    server_.reset();
    portmap_.reset();
    learned_.clear();
    inputs_ = 0;
    std::string error;
    auto table = server::ExportTable::Parse(kExports, &error);
    if (!table) Fatal(error.c_str());
    server::ServerOptions o;
    o.state_dir = state_dir_;
    o.backend = server::Backend::kMemory;
    o.max_mounts = 64;
    o.drc.namespace_bytes = 1u << 20;
    o.drc.write_bytes = 256u << 10;
    o.drc.shards = 4;
    o.core.file_table_capacity = 512;
    o.core.open_files.max_open = 32;
    o.core.resolver = FakeResolver();
    o.core.client_names.max_entries = 16;
    o.transport.io_threads = 1;
    o.transport.worker_threads = 1;
    auto s = server::Server::Create(std::move(*table), std::move(o), &error);
    if (!s) Fatal(error.c_str());
    server_ = std::move(*s);
    // What Start() registers once it has bound the port mapper's port.
    using portmap::mapping;
    constexpr uint32_t kTcp = portmap::IPPROTO_TCP_;
    portmap_ = std::make_unique<server::PortmapService>(
        std::vector<mapping>{{portmap::PMAP_PROGRAM, portmap::PMAP_VERS, kTcp, 111},
                             {nfs3::NFS_PROGRAM, nfs3::NFS_V3, kTcp, 2049},
                             {mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, kTcp, 20048}});
    server_->dispatcher_for_testing().Register(portmap_->MakeProgram());
    roots_.clear();
    for (const auto& e : server_->core().exports()) roots_.push_back(e->root->fh());
  }

  bool Full() {
    for (const auto& e : server_->core().exports()) {
      auto st = e->fs->StatFs(e->root->node());
      if (!st) continue;
      if (st->total_bytes - st->free_bytes > kMaxBytes) return true;
      if (st->total_files - st->free_files > kMaxFiles) return true;
    }
    return false;
  }

  // The handle a marker's slot stands for.
  nfs3::nfs_fh3 Slot(uint8_t slot) {
    const server::HandleCodec& codec = server_->core().codec();
    std::byte backend[16] = {};
    switch (slot) {
      case 0xf0:  // valid MAC, no such export
        return codec.Make(kUnknownExport, {backend, 16});
      case 0xf1:  // valid MAC, a backend handle memfs cannot parse
        return codec.Make(1, {backend, 3});
      case 0xf2:  // valid MAC, a file memfs never had
        backend[0] = std::byte{0x77};
        backend[8] = std::byte{0x01};
        return codec.Make(1, {backend, 16});
      default:
        break;
    }
    if (slot < roots_.size()) return roots_[slot];
    if (learned_.empty()) return roots_[0];
    return learned_[(slot - roots_.size()) % learned_.size()];
  }

  // The record with every marker replaced by the handle it names.
  std::vector<std::byte> Substitute(Bytes record) {
    std::vector<std::byte> out;
    out.reserve(record.size() + 64);
    const auto* p = reinterpret_cast<const uint8_t*>(record.data());
    size_t left = record.size();
    while (left > 0) {
      const void* hit = memmem(p, left, kMarker, sizeof(kMarker));
      if (hit == nullptr || static_cast<const uint8_t*>(hit) + sizeof(kMarker) >= p + left) {
        out.insert(out.end(), reinterpret_cast<const std::byte*>(p),
                   reinterpret_cast<const std::byte*>(p + left));
        break;
      }
      const auto* at = static_cast<const uint8_t*>(hit);
      out.insert(out.end(), reinterpret_cast<const std::byte*>(p),
                 reinterpret_cast<const std::byte*>(at));
      nfs3::nfs_fh3 fh = Slot(at[sizeof(kMarker)]);
      OutBuffer enc;
      xdr::XdrEncoder e(&enc);
      e(fh);
      std::vector<std::byte> bytes = enc.Flatten();
      out.insert(out.end(), bytes.begin(), bytes.end());
      left -= static_cast<size_t>(at + sizeof(kMarker) + 1 - p);
      p = at + sizeof(kMarker) + 1;
    }
    return out;
  }

  // Remembers every file handle in a reply (a length, then version 1 and the length of
  // the backend handle, and a MAC that verifies).
  void Learn(Bytes reply) {
    const server::HandleCodec& codec = server_->core().codec();
    for (size_t at = 4; at + 8 <= reply.size(); at += 4) {
      uint32_t len = xdr::LoadBe32(reply.data() + at);
      if (len < server::kHandleHeader + server::kHandleMac || len > nfs3::NFS3_FHSIZE) continue;
      if (at + 4 + len > reply.size()) continue;
      Bytes fh = reply.subspan(at + 4, len);
      if (fh[0] != std::byte{server::kHandleVersion} ||
          static_cast<size_t>(fh[1]) + server::kHandleHeader + server::kHandleMac != len) {
        continue;
      }
      server::DecodedHandle decoded;
      if (codec.Parse(fh, &decoded) != server::HandleCodec::Check::kOk) continue;
      nfs3::nfs_fh3 h;
      h.assign(fh);
      if (!learned_.empty() && learned_.front() == h) continue;
      learned_.push_front(h);
      if (learned_.size() > kLearned) learned_.pop_back();
    }
  }

  void RunRecord(Bytes raw, const rpc::Peer& peer) {
    std::vector<std::byte> record = Substitute(raw);
    rpc::Dispatcher& dispatcher = server_->dispatcher_for_testing();
    rpc::Dispatcher::Call call;
    OutBuffer out;
    switch (dispatcher.Accept(record, peer, &call, &out)) {
      case rpc::Dispatcher::Route::kDrop:
        if (out.total_size() != 0) Violation("a dropped call left a reply", "Dispatcher::Accept");
        return;
      case rpc::Dispatcher::Route::kReply:
        break;
      case rpc::Dispatcher::Route::kRun:
        dispatcher.Run(call, peer, &out);
        break;
    }
    std::vector<std::byte> reply = out.Flatten();
    CheckReply(record, call.header, reply);
    Learn(reply);
    if (trace_) Trace(call.header, peer, reply);
  }

  // NFSX_FUZZ_TRACE=1: one line per call, to see how deep an input gets.
  void Trace(const rpc::CallHeader& h, const rpc::Peer& peer, Bytes reply) {
    xdr::XdrDecoder d(reply.subspan(4));
    rpc::ReplyHeader r;
    rpc::DecodeReplyHeader(d, &r);
    uint32_t status = 0;
    if (r.ok() && d.remaining() >= 4) d(status);
    std::fprintf(stderr, "%s:%u xid %#x %u/%u/%u uid %u -> reply %u accept %u status %u (%zu B)\n",
                 peer.host.c_str(), peer.port, h.xid, h.prog, h.vers, h.proc, h.cred.uid,
                 static_cast<unsigned>(r.stat), static_cast<unsigned>(r.accepted), status,
                 reply.size());
  }

  static void CheckReply(Bytes record, const rpc::CallHeader& call, Bytes reply) {
    const char* what = "reply";
    if (reply.size() < 4) Violation("no record mark", what);
    if (xdr::LoadBe32(reply.data()) != (0x80000000u | (reply.size() - 4))) {
      Violation("record mark is not one last fragment of the reply's length", what);
    }
    xdr::XdrDecoder d(reply.subspan(4));
    rpc::ReplyHeader h;
    if (!rpc::DecodeReplyHeader(d, &h)) Violation("header does not decode", what);
    uint32_t xid = 0;
    if (rpc::PeekXid(record, &xid) && h.xid != xid) Violation("xid differs from the call's", what);
    if (!h.ok()) {
      if (d.remaining() != 0) Violation("bytes after an error reply", what);
      return;
    }
    Check check = ResultCheck(call.prog, call.vers, call.proc);
    if (check == nullptr) Violation("success for a procedure we do not serve", what);
    if (!check(d)) Violation("results do not decode as the procedure's", what);
    if (d.remaining() != 0) Violation("bytes after the results", what);
  }

  std::string state_dir_;
  std::vector<rpc::Peer> peers_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<server::PortmapService> portmap_;
  std::vector<nfs3::nfs_fh3> roots_;
  std::deque<nfs3::nfs_fh3> learned_;
  uint64_t inputs_ = 0;
  bool trace_ = getenv("NFSX_FUZZ_TRACE") != nullptr;
};

Harness* harness = nullptr;

}  // namespace
}  // namespace nfsx::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nfsx::log::SetLevel(nfsx::log::Level::kOff);
  nfsx::fuzz::harness = new nfsx::fuzz::Harness();
  std::atexit([] { delete nfsx::fuzz::harness; });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nfsx::fuzz::harness->RunInput({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
