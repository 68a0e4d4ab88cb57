// ONC RPC v2 message headers (RFC 5531 §9): calls, replies and credentials.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "xdr/xdr.h"

namespace nfsx::rpc {

inline constexpr uint32_t kRpcVersion = 2;
inline constexpr uint32_t kMaxAuthBytes = 400;   // opaque_auth body<400>
inline constexpr uint32_t kMaxMachineName = 255;
inline constexpr uint32_t kMaxAuthSysGroups = 16;

enum class msg_type : uint32_t { CALL = 0, REPLY = 1 };
enum class reply_stat : uint32_t { MSG_ACCEPTED = 0, MSG_DENIED = 1 };
enum class accept_stat : uint32_t {
  SUCCESS = 0,
  PROG_UNAVAIL = 1,
  PROG_MISMATCH = 2,
  PROC_UNAVAIL = 3,
  GARBAGE_ARGS = 4,
  SYSTEM_ERR = 5,
};
enum class reject_stat : uint32_t { RPC_MISMATCH = 0, AUTH_ERROR = 1 };
enum class auth_stat : uint32_t {
  AUTH_OK = 0,
  AUTH_BADCRED = 1,
  AUTH_REJECTEDCRED = 2,
  AUTH_BADVERF = 3,
  AUTH_REJECTEDVERF = 4,
  AUTH_TOOWEAK = 5,
  AUTH_INVALIDRESP = 6,
  AUTH_FAILED = 7,
};
enum class auth_flavor : uint32_t { AUTH_NONE = 0, AUTH_SYS = 1, AUTH_SHORT = 2, AUTH_DH = 3 };

// Who is calling: AUTH_NONE, or AUTH_SYS's uid/gid/groups (RFC 5531 Appendix A).
struct Credential {
  auth_flavor flavor = auth_flavor::AUTH_NONE;
  uint32_t stamp = 0;
  std::string machinename;
  uint32_t uid = 65534;
  uint32_t gid = 65534;
  uint32_t ngids = 0;
  std::array<uint32_t, kMaxAuthSysGroups> gids{};

  std::span<const uint32_t> groups() const { return {gids.data(), ngids}; }
};

struct CallHeader {
  uint32_t xid = 0;
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
  Credential cred;
};

enum class CallDecode {
  kOk,
  kNotACall,      // a REPLY, or no header at all: drop it
  kRpcMismatch,   // rpcvers != 2: answer MSG_DENIED/RPC_MISMATCH
  kBadCred,       // malformed or unsupported credential: AUTH_ERROR/AUTH_BADCRED
  kBadVerf,       // malformed verifier: AUTH_ERROR/AUTH_BADVERF
};

// Decodes a call header; on return `d` is positioned at the procedure arguments.
// header->xid is valid whenever at least 4 bytes were present.
CallDecode DecodeCallHeader(xdr::XdrDecoder& d, CallHeader* header);

// Reply headers. After EncodeAcceptedReply(..., SUCCESS) the results follow.
void EncodeAcceptedReply(xdr::XdrEncoder& e, uint32_t xid, accept_stat stat);
void EncodeProgMismatch(xdr::XdrEncoder& e, uint32_t xid, uint32_t low, uint32_t high);
void EncodeRpcMismatch(xdr::XdrEncoder& e, uint32_t xid);
void EncodeAuthError(xdr::XdrEncoder& e, uint32_t xid, auth_stat stat);

// Client side.
void EncodeCallHeader(xdr::XdrEncoder& e, uint32_t xid, uint32_t prog, uint32_t vers,
                      uint32_t proc, const Credential& cred);

struct ReplyHeader {
  uint32_t xid = 0;
  reply_stat stat = reply_stat::MSG_ACCEPTED;
  accept_stat accepted = accept_stat::SUCCESS;
  reject_stat rejected = reject_stat::RPC_MISMATCH;
  auth_stat auth = auth_stat::AUTH_OK;
  uint32_t mismatch_low = 0;
  uint32_t mismatch_high = 0;
  bool ok() const { return stat == reply_stat::MSG_ACCEPTED && accepted == accept_stat::SUCCESS; }
};
// Decodes a reply header; on success `d` is positioned at the results.
bool DecodeReplyHeader(xdr::XdrDecoder& d, ReplyHeader* header);

// The xid of any message, or false if it is shorter than 4 bytes.
bool PeekXid(std::span<const std::byte> message, uint32_t* xid);

}  // namespace nfsx::rpc
