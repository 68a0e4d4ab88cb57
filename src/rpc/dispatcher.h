// Dispatcher: one RPC record in, one reply record out.
//
// Owns the RPC-level error policy (RFC 5531): PROG_UNAVAIL, PROG_MISMATCH,
// PROC_UNAVAIL, GARBAGE_ARGS, RPC_MISMATCH and AUTH_ERROR are produced here and
// never by procedures. Also applies the duplicate request cache and records
// per-procedure statistics. Transport-agnostic: tests call it with bytes.
//
// Thread-safe after all programs are registered.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "rpc/drc.h"
#include "rpc/program.h"

namespace nfsx::rpc {

class Dispatcher {
 public:
  explicit Dispatcher(DrcOptions drc = {}) : drc_(std::move(drc)) {}

  // REQUIRES: before the first call is routed.
  void Register(Program program);

  // A call that passed header checks and is ready to run.
  struct Call {
    CallHeader header;
    const Program* program = nullptr;
    const Procedure* proc = nullptr;
    std::span<const std::byte> args;  // borrowed from the record
    bool drc = false;                 // a DRC entry is in progress for it
    DuplicateRequestCache::Key drc_key;
  };

  enum class Route {
    kReply,  // *reply is complete (an error, or a DRC hit)
    kRun,    // run *call with Run()
    kDrop,   // send nothing (not a call, or a retransmission still in progress)
  };

  // Decodes the header of `record` and decides what to do with it.
  // REQUIRES: `reply` is empty.
  Route Accept(std::span<const std::byte> record, const Peer& peer, Call* call, OutBuffer* reply);

  // Whether a routed call may block, so that it must run off the I/O thread.
  static bool MayBlock(const Call& call, const Peer& peer) {
    return call.proc->MayBlock(call.args) ||
           (call.program->blocks_for_peer && call.program->blocks_for_peer(peer));
  }

  // The most a routed call's reply may take (0: a small one).
  static size_t ReplyBound(const Call& call) {
    return call.proc->reply_bound ? call.proc->reply_bound(call.args) : 0;
  }

  // Executes a routed call and encodes the whole reply record into `reply`. On an
  // event loop (`on_event_loop`) a procedure may decline to wait on the disk: then
  // Run returns false, `reply` is to be dropped, and the call is to be run again off
  // the loop (its DRC entry, if any, stays in progress until then).
  bool Run(Call& call, const Peer& peer, OutBuffer* reply, bool on_event_loop = false);

  // Re-points a call's argument view after its record was copied elsewhere.
  static void Rebase(Call& call, std::span<const std::byte> old_record,
                     std::span<const std::byte> new_record);

  const std::vector<Program>& programs() const { return programs_; }
  const DuplicateRequestCache& drc() const { return drc_; }
  uint64_t garbage_calls() const { return garbage_.load(std::memory_order_relaxed); }

 private:
  const Program* FindProgram(uint32_t prog, uint32_t vers, uint32_t* low, uint32_t* high,
                             bool* prog_known) const;

  std::vector<Program> programs_;
  DuplicateRequestCache drc_;
  std::atomic<uint64_t> garbage_{0};
};

}  // namespace nfsx::rpc
