#include "rpc/dispatcher.h"

#include <algorithm>
#include <chrono>

#include "base/atomic_max.h"
#include "base/logging.h"
#include "rpc/record_marking.h"

namespace nfsx::rpc {

void ProcStats::Record(uint64_t ns) {
  Shard& s = shards_[CounterShard()];
  s.calls.fetch_add(1, std::memory_order_relaxed);
  s.total_ns.fetch_add(ns, std::memory_order_relaxed);
  RaiseTo(s.max_ns, ns);
  uint64_t us = ns / 1000;
  int bucket = us == 0 ? 0 : std::min(kBuckets - 1, 64 - __builtin_clzll(us));
  s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
}

uint64_t ProcStats::Sum(std::atomic<uint64_t> Shard::*field) const {
  uint64_t n = 0;
  for (const Shard& s : shards_) n += (s.*field).load(std::memory_order_relaxed);
  return n;
}

uint64_t ProcStats::Calls() const { return Sum(&Shard::calls); }

uint64_t ProcStats::TotalNs() const { return Sum(&Shard::total_ns); }

uint64_t ProcStats::MaxNs() const {
  uint64_t n = 0;
  for (const Shard& s : shards_) n = std::max(n, s.max_ns.load(std::memory_order_relaxed));
  return n;
}

uint64_t ProcStats::PercentileMicros(double fraction) const {
  std::array<uint64_t, kBuckets> counts{};
  uint64_t total = 0;
  for (const Shard& s : shards_) {
    for (int i = 0; i < kBuckets; ++i) counts[i] += s.buckets[i].load(std::memory_order_relaxed);
  }
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  uint64_t want = static_cast<uint64_t>(fraction * static_cast<double>(total) + 0.5);
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= want) return uint64_t{1} << i;
  }
  return uint64_t{1} << (kBuckets - 1);
}

void Dispatcher::Register(Program program) { programs_.push_back(std::move(program)); }

const Program* Dispatcher::FindProgram(uint32_t prog, uint32_t vers, uint32_t* low, uint32_t* high,
                                       bool* prog_known) const {
  *prog_known = false;
  *low = UINT32_MAX;
  *high = 0;
  for (const Program& p : programs_) {
    if (p.prog != prog) continue;
    *prog_known = true;
    *low = std::min(*low, p.vers);
    *high = std::max(*high, p.vers);
    if (p.vers == vers) return &p;
  }
  return nullptr;
}

Dispatcher::Route Dispatcher::Accept(std::span<const std::byte> record, const Peer& peer,
                                     Call* call, OutBuffer* reply) {
  xdr::XdrDecoder d(record);
  CallHeader& h = call->header;
  CallDecode decoded = DecodeCallHeader(d, &h);
  auto error_reply = [&](auto&& encode) {
    BeginRecord(reply);
    xdr::XdrEncoder e(reply);
    encode(e);
    EndRecord(reply);
    garbage_.fetch_add(1, std::memory_order_relaxed);
    return Route::kReply;
  };
  switch (decoded) {
    case CallDecode::kOk:
      break;
    case CallDecode::kNotACall:
      log::Debug("{}: dropped a record that is not an RPC call", peer.host);
      garbage_.fetch_add(1, std::memory_order_relaxed);
      return Route::kDrop;
    case CallDecode::kRpcMismatch:
      return error_reply([&](auto& e) { EncodeRpcMismatch(e, h.xid); });
    case CallDecode::kBadCred:
      return error_reply([&](auto& e) { EncodeAuthError(e, h.xid, auth_stat::AUTH_BADCRED); });
    case CallDecode::kBadVerf:
      return error_reply([&](auto& e) { EncodeAuthError(e, h.xid, auth_stat::AUTH_BADVERF); });
  }

  uint32_t low, high;
  bool prog_known;
  const Program* program = FindProgram(h.prog, h.vers, &low, &high, &prog_known);
  if (!program) {
    if (!prog_known) {
      return error_reply(
          [&](auto& e) { EncodeAcceptedReply(e, h.xid, accept_stat::PROG_UNAVAIL); });
    }
    return error_reply([&](auto& e) { EncodeProgMismatch(e, h.xid, low, high); });
  }
  if (h.proc >= program->procs.size() || !program->procs[h.proc].fn) {
    return error_reply([&](auto& e) { EncodeAcceptedReply(e, h.xid, accept_stat::PROC_UNAVAIL); });
  }
  call->program = program;
  call->proc = &program->procs[h.proc];
  call->args = record.subspan(static_cast<size_t>(d.position() - record.data()));
  call->drc = false;
  if (call->proc->flags & (kProcNonIdempotent | kProcRewritesData)) {
    call->drc_key = DuplicateRequestCache::MakeKey(h, peer, call->args);
    DrcClass cls =
        (call->proc->flags & kProcNonIdempotent) ? DrcClass::kNamespace : DrcClass::kWrite;
    std::vector<std::byte> cached;
    switch (drc_.Begin(call->drc_key, cls, &cached)) {
      case DuplicateRequestCache::Lookup::kNew:
        call->drc = true;
        break;
      case DuplicateRequestCache::Lookup::kInProgress:
        log::Debug("{}: xid {:#x} retransmitted while in progress: dropped", peer.host, h.xid);
        return Route::kDrop;
      case DuplicateRequestCache::Lookup::kDone:
        log::Debug("{}: xid {:#x} answered from the duplicate request cache", peer.host, h.xid);
        reply->Append(cached);
        return Route::kReply;
    }
  }
  return Route::kRun;
}

bool Dispatcher::Run(Call& call, const Peer& peer, OutBuffer* reply, bool on_event_loop) {
  auto start = std::chrono::steady_clock::now();
  BeginRecord(reply);
  xdr::XdrEncoder e(reply);
  size_t header_mark = reply->inline_size();
  EncodeAcceptedReply(e, call.header.xid, accept_stat::SUCCESS);
  xdr::XdrDecoder args(call.args);
  CallContext ctx{call.header, peer, on_event_loop};
  accept_stat stat = call.proc->fn(ctx, args, e);
  if (ctx.would_block) return false;
  if (stat == accept_stat::SUCCESS && !args.ok()) stat = accept_stat::GARBAGE_ARGS;
  if (stat != accept_stat::SUCCESS) {
    if (stat == accept_stat::GARBAGE_ARGS) {
      garbage_.fetch_add(1, std::memory_order_relaxed);
      log::Debug("{}: garbage arguments for {} (xid {:#x})", peer.host, call.proc->name,
                 call.header.xid);
    }
    reply->Truncate(header_mark);
    EncodeAcceptedReply(e, call.header.xid, stat);
  }
  EndRecord(reply);
  if (call.drc) drc_.Finish(call.drc_key, reply->Flatten());
  auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  call.proc->stats.Record(static_cast<uint64_t>(ns));
  return true;
}

void Dispatcher::Rebase(Call& call, std::span<const std::byte> old_record,
                        std::span<const std::byte> new_record) {
  size_t offset = static_cast<size_t>(call.args.data() - old_record.data());
  call.args = new_record.subspan(offset, call.args.size());
}

}  // namespace nfsx::rpc
