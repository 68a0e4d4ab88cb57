#include "bench/nfsx_driver.h"

#include <fmt/format.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <mutex>

#include "bench/counters.h"
#include "client/url.h"
#include "proto/nfs3_types.h"
#include "rpc/message.h"
#include "rpc/tcp_client.h"

namespace nfsx::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The client(s) all forks of one driver share.
struct Shared {
  std::string url;
  std::unique_ptr<Client> client;
  std::string dir;  // inside the mounted export, "" or "a/b/"
  std::mutex mu;
  std::unique_ptr<Client> fresh;  // actimeo=0, made on first use; GUARDED_BY(mu)
  client::NfsUrl parsed;
};

std::string WithQuery(const std::string& url, const std::string& kv) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + kv;
}

class NfsxFile final : public BenchFile {
 public:
  explicit NfsxFile(std::unique_ptr<File> f) : f_(std::move(f)) {}
  ~NfsxFile() override { WaitForStarted(); }
  Result<size_t> Pread(std::span<std::byte> out, uint64_t offset) override {
    return f_->Pread(out, offset);
  }
  Result<size_t> Pwrite(std::span<const std::byte> data, uint64_t offset) override {
    return f_->Pwrite(data, offset);
  }
  Result<size_t> Append(std::span<const std::byte> data) override { return f_->Write(data); }
  Result<uint64_t> Size() override {
    auto st = f_->Fstat();
    if (!st) return std::unexpected(st.error());
    return st->size;
  }
  Result<void> Fsync() override { return f_->Fsync(); }
  Result<void> Close() override {
    WaitForStarted();
    return f_->Close();
  }

  // The callbacks run on the client's threads (a connection's reader for O_DIRECT): they
  // only queue the completion for Reap.
  Result<void> StartPread(std::span<std::byte> out, uint64_t offset, uint64_t tag) override {
    Started();
    f_->PreadAsync(out, offset, [this, tag](Result<size_t> r) { Ended(tag, std::move(r)); });
    return {};
  }
  Result<void> StartPwrite(std::span<const std::byte> data, uint64_t offset,
                           uint64_t tag) override {
    Started();
    f_->PwriteAsync(data, offset, [this, tag](Result<size_t> r) { Ended(tag, std::move(r)); });
    return {};
  }
  Result<void> Reap(std::vector<Completion>* done) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !ended_.empty() || started_ == 0; });
    if (ended_.empty()) return Fail(EINVAL);  // nothing was started
    for (auto& c : ended_) done->push_back(std::move(c));
    ended_.clear();
    return {};
  }

 private:
  void Started() {
    std::lock_guard lock(mu_);
    ++started_;
  }
  void Ended(uint64_t tag, Result<size_t> r) {
    std::lock_guard lock(mu_);
    --started_;
    ended_.push_back(Completion{tag, std::move(r)});
    cv_.notify_all();
  }
  void WaitForStarted() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_ == 0; });
  }

  std::unique_ptr<File> f_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t started_ = 0;           // GUARDED_BY(mu_): not ended yet
  std::vector<Completion> ended_;  // GUARDED_BY(mu_): not reaped yet
};

rpc::Credential PingCredential() {
  rpc::Credential c;
  c.flavor = rpc::auth_flavor::AUTH_SYS;
  char host[256] = "nfsx";
  gethostname(host, sizeof(host) - 1);
  c.machinename = host;
  c.uid = getuid();
  c.gid = getgid();
  return c;
}

class NfsxDriver final : public Driver {
 public:
  explicit NfsxDriver(std::shared_ptr<Shared> shared) : s_(std::move(shared)) {}

  std::string kind() const override { return "nfsx"; }
  std::string description() const override {
    return fmt::format("nfsx client library, {}", s_->url);
  }

  Result<std::unique_ptr<BenchFile>> Open(const std::string& name, int flags,
                                          OpenOptions options) override {
    Client* c = s_->client.get();
    if (options.fresh_attributes) {
      auto fresh = FreshClient();
      if (!fresh) return std::unexpected(fresh.error());
      c = *fresh;
    }
    auto f = c->Open(s_->dir + name, flags, 0644);
    if (!f) return std::unexpected(f.error());
    return std::unique_ptr<BenchFile>(new NfsxFile(std::move(*f)));
  }

  Result<void> Unlink(const std::string& name) override {
    return s_->client->Unlink(s_->dir + name);
  }

  Result<std::unique_ptr<Driver>> Fork() override {
    return std::unique_ptr<Driver>(new NfsxDriver(s_));
  }

  std::optional<WireStats> counters() const override {
    WireStats s = s_->client->stats();
    std::lock_guard lock(s_->mu);
    if (s_->fresh) s = s + s_->fresh->stats();
    return s;
  }

  bool client_cache() const override { return true; }
  uint64_t max_io() const override { return 0; }

  Result<void> Ping(int in_flight, uint64_t calls, load::Histogram* latency_ns) override;

 private:
  Result<Client*> FreshClient() {
    std::lock_guard lock(s_->mu);
    if (!s_->fresh) {
      std::string error;
      auto c = Client::Connect(WithQuery(s_->url, "actimeo=0"), &error);
      if (!c) return std::unexpected(c.error());
      s_->fresh = std::move(*c);
    }
    return s_->fresh.get();
  }

  std::shared_ptr<Shared> s_;
};

// NULL calls through nfsx's RPC transport (the one the client library's channel uses), on a
// connection of their own so that the client's counters stay those of the workloads.
Result<void> NfsxDriver::Ping(int in_flight, uint64_t calls, load::Histogram* latency_ns) {
  uint16_t port = s_->parsed.options.nfs_port ? s_->parsed.options.nfs_port : 2049;
  auto conn = rpc::RpcClient::Connect(s_->parsed.host, port);
  if (!conn) return std::unexpected(conn.error());
  rpc::Credential cred = PingCredential();
  auto no_args = [](xdr::XdrEncoder&) {};
  if (in_flight <= 1) {
    for (uint64_t i = 0; i < calls; ++i) {
      auto start = Clock::now();
      auto r = (*conn)->CallSync(nfs3::NFS_PROGRAM, nfs3::NFS_V3, 0, cred, no_args);
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
      if (!r) return std::unexpected(r.error());
      latency_ns->Record(static_cast<uint64_t>(ns.count()));
    }
    return {};
  }
  // Keep `in_flight` calls outstanding: each reply sends the next call.
  std::mutex mu;
  std::condition_variable cv;
  uint64_t sent = 0, done = 0;
  int error = 0;
  std::function<void()> send_one;
  send_one = [&] {
    auto start = Clock::now();
    (*conn)->Call(
        nfs3::NFS_PROGRAM, nfs3::NFS_V3, 0, cred, no_args, [&, start](Result<rpc::RpcReply> r) {
          auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
          bool more = false;
          {
            std::lock_guard lock(mu);
            if (!r && error == 0) error = r.error().code;
            latency_ns->Record(static_cast<uint64_t>(ns.count()));
            ++done;
            if (error == 0 && sent < calls) {
              ++sent;
              more = true;
            }
          }
          if (more) send_one();
          cv.notify_all();
        });
  };
  uint64_t first = std::min<uint64_t>(static_cast<uint64_t>(in_flight), calls);
  {
    std::lock_guard lock(mu);
    sent = first;
  }
  for (uint64_t i = 0; i < first; ++i) send_one();
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done == sent; });
  if (error) return Fail(error);
  return {};
}

}  // namespace

Result<std::unique_ptr<Driver>> MakeNfsxDriver(const std::string& url, std::string* error) {
  auto shared = std::make_shared<Shared>();
  shared->url = url;
  auto parsed = client::ParseNfsUrl(url, ClientOptions{}, error);
  if (!parsed) return std::unexpected(parsed.error());
  shared->parsed = *parsed;
  auto c = Client::Connect(url, error);
  if (!c) return std::unexpected(c.error());
  shared->client = std::move(*c);
  shared->dir = shared->client->path_in_export();
  if (!shared->dir.empty() && shared->dir.back() != '/') shared->dir += '/';
  return std::unique_ptr<Driver>(new NfsxDriver(std::move(shared)));
}

}  // namespace nfsx::bench
