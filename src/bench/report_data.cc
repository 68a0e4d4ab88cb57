#include "bench/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "bench/units.h"

namespace nfsx::bench {
namespace {

const Json kNull;

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  for (;;) {
    size_t tab = line.find('\t', i);
    out.push_back(line.substr(i, tab == std::string::npos ? std::string::npos : tab - i));
    if (tab == std::string::npos) return out;
    i = tab + 1;
  }
}

std::optional<double> Num(const Json& j) {
  if (!j.is_number()) return std::nullopt;
  return j.AsNumber();
}

// The row of an iozone document for one record size.
const Json& IozoneRow(const Json& results, uint64_t record) {
  for (const Json& row : results.Get("rows").AsArray()) {
    if (static_cast<uint64_t>(row.Get("record").AsNumber()) == record) return row;
  }
  return kNull;
}

// The point of a randread/randwrite document for a thread count.
const Json& Point(const Json& results, int threads) {
  for (const Json& p : results.Get("points").AsArray()) {
    if (static_cast<int>(p.Get("threads").AsNumber()) == threads) return p;
  }
  return kNull;
}

// The first document of `test_case` among the systems, the subject first: what decides
// which record sizes and thread counts the tables have.
const Json& Reference(const RunData& data, const std::string& test_case) {
  const Json& s = data.Doc(kSubject, test_case);
  if (!s.is_null()) return s;
  for (const auto& [id, desc] : data.systems()) {
    const Json& d = data.Doc(id, test_case);
    if (!d.is_null()) return d;
  }
  return kNull;
}

void IozoneMetrics(const RunData& data, const std::string& test_case, bool latency,
                   std::vector<Metric>* out) {
  const Json& ref = Reference(data, test_case);
  for (const Json& r : ref.Path("results.records").AsArray()) {
    auto record = static_cast<uint64_t>(r.AsNumber());
    for (const char* phase : {"write", "rewrite", "read", "reread"}) {
      std::string p = phase;
      if (latency && (p == "rewrite" || p == "reread")) continue;
      Metric m;
      m.test_case = test_case;
      m.label = fmt::format("{} {}", ShortSize(record), p);
      m.unit = latency ? "us/call" : "MiB/s";
      m.better = latency ? Better::kLower : Better::kHigher;
      const char* key = latency ? "us_per_call" : "mib_per_s";
      m.get = [record, p, key](const Json& res) {
        return Num(IozoneRow(res, record).Get("phases").Get(p).Get(key));
      };
      out->push_back(std::move(m));
    }
    if (!latency) {
      Metric m{test_case, fmt::format("{} reread READs", ShortSize(record)), "calls",
               Better::kLower, nullptr};
      m.get = [record](const Json& res) {
        const Json& wire = IozoneRow(res, record).Path("phases.reread.wire");
        if (wire.is_null()) return std::optional<double>();
        return Num(wire.Get("calls").Get("READ"));
      };
      out->push_back(std::move(m));
    }
  }
}

void RandomMetrics(const RunData& data, const std::string& test_case, std::vector<Metric>* out) {
  const Json& ref = Reference(data, test_case);
  for (const Json& p : ref.Path("results.points").AsArray()) {
    int t = static_cast<int>(p.Get("threads").AsNumber());
    out->push_back({test_case, fmt::format("IOPS, {} thread(s)", t), "IOPS", Better::kHigher,
                    [t](const Json& res) { return Num(Point(res, t).Get("iops")); }});
    out->push_back({test_case, fmt::format("p50, {} thread(s)", t), "us", Better::kLower,
                    [t](const Json& res) { return Num(Point(res, t).Path("latency_us.p50")); }});
    // CPU per operation, where the run measured it: the server's (compare.sh gives the
    // bench its pid) and the bench process's own (the client, for library drivers).
    for (auto [key, who] : {std::pair{"server_cpu_us_per_op", "server"},
                            std::pair{"server_user_cpu_us_per_op", "server user-space"},
                            std::pair{"client_cpu_us_per_op", "client"}}) {
      if (!p.Get(key).is_number()) continue;
      out->push_back({test_case, fmt::format("{} CPU per op, {} thread(s)", who, t), kCpuUnit,
                      Better::kLower,
                      [t, key](const Json& res) { return Num(Point(res, t).Get(key)); }});
    }
  }
  const auto& points = ref.Path("results.points").AsArray();
  if (points.size() > 1) {
    int t = static_cast<int>(points.back().Get("threads").AsNumber());
    out->push_back({test_case, fmt::format("scaling, {} vs first", t), "x", Better::kHigher,
                    [t](const Json& res) { return Num(Point(res, t).Get("scaling")); }});
  }
}

}  // namespace

bool RunData::Load(const std::string& dir, std::string* error) {
  std::ifstream systems(dir + "/systems.tsv");
  if (!systems) {
    *error = fmt::format("{}/systems.tsv is missing (is this a compare run directory?)", dir);
    return false;
  }
  std::string line;
  while (std::getline(systems, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto f = SplitTabs(line);
    systems_.emplace_back(f[0], f.size() > 1 ? f[1] : "");
  }
  std::ifstream meta(dir + "/meta.tsv");
  while (std::getline(meta, line)) {
    auto f = SplitTabs(line);
    if (f.size() >= 2) meta_[f[0]] = f[1];
  }
  std::ifstream notes(dir + "/notes.txt");
  while (std::getline(notes, line)) {
    if (!line.empty()) notes_.push_back(line);
  }
  for (const auto& [id, desc] : systems_) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/" + id, ec)) {
      if (entry.path().extension() != ".json") continue;
      std::string test_case = entry.path().stem().string();
      test_case = test_case.substr(0, test_case.find('@'));  // CASE@N: repetition N
      std::string why;
      auto doc = ReadJsonFile(entry.path().string(), &why);
      if (!doc) {
        failures_.push_back(fmt::format("{}/{}: {}", id, test_case, why));
        continue;
      }
      if (!doc->Get("ok").AsBool(false)) {
        failures_.push_back(fmt::format("{}/{}: {}", id, test_case, doc->Get("error").AsString()));
      }
      docs_[{id, test_case}].push_back(std::move(*doc));
    }
  }
  return true;
}

bool RunData::HasSystem(const std::string& id) const {
  for (const auto& [s, d] : systems_) {
    if (s == id) return true;
  }
  return false;
}

const Json& RunData::Doc(const std::string& system, const std::string& test_case) const {
  auto it = docs_.find({system, test_case});
  return it == docs_.end() || it->second.empty() ? kNull : it->second.front();
}

const std::vector<Json>& RunData::Docs(const std::string& system,
                                       const std::string& test_case) const {
  static const std::vector<Json> kNone;
  auto it = docs_.find({system, test_case});
  return it == docs_.end() ? kNone : it->second;
}

std::string RunData::Meta(const std::string& key) const {
  auto it = meta_.find(key);
  return it == meta_.end() ? "" : it->second;
}

std::vector<Metric> BuildMetrics(const RunData& data) {
  std::vector<Metric> out;
  IozoneMetrics(data, "iozone-direct", true, &out);
  IozoneMetrics(data, "iozone", false, &out);

  for (const char* phase : {"write", "rewrite", "read"}) {
    std::string p = phase;
    out.push_back({"throughput", p + " aggregate", "MiB/s", Better::kHigher,
                   [p](const Json& r) { return Num(r.Get("phases").Get(p).Get("mib_per_s")); }});
    out.push_back(
        {"throughput", p + " slowest thread", "MiB/s", Better::kHigher,
         [p](const Json& r) { return Num(r.Get("phases").Get(p).Get("thread_min_mib_per_s")); }});
  }
  out.push_back({"throughput", "write: wire bytes / app bytes", "ratio", Better::kNone,
                 [](const Json& r) { return Num(r.Get("wire_write_bytes_per_app_byte")); }});

  for (const char* v : {"one_open", "open_close", "naive"}) {
    std::string name = v;
    out.push_back({"append", name + " time", "s", Better::kLower, [name](const Json& r) {
                     return Num(r.Get("variants").Get(name).Get("seconds"));
                   }});
    out.push_back(
        {"append", name + " RPCs per append", "calls", Better::kLower, [name](const Json& r) {
           return Num(r.Get("variants").Get(name).Get("rpcs_per_append"));
         }});
  }
  for (const char* v : {"one_open", "open_close"}) {
    std::string name = v;
    out.push_back({"append", name + " time / naive time", "ratio", Better::kLower,
                   [name](const Json& r) { return Num(r.Get("time_ratio_vs_naive").Get(name)); }});
  }

  RandomMetrics(data, "randread", &out);
  RandomMetrics(data, "randread-direct", &out);
  RandomMetrics(data, "randwrite", &out);
  RandomMetrics(data, "randread-direct-1m", &out);
  RandomMetrics(data, "randwrite-1m", &out);

  out.push_back({"ping", "NULL p50, 1 in flight", "us", Better::kLower,
                 [](const Json& r) { return Num(r.Path("null_1.latency_us.p50")); }});
  out.push_back({"ping", "NULL calls/s, 1 in flight", "calls/s", Better::kHigher,
                 [](const Json& r) { return Num(r.Path("null_1.calls_per_s")); }});
  out.push_back({"ping", "NULL calls/s, many in flight", "calls/s", Better::kHigher,
                 [](const Json& r) { return Num(r.Path("null_many.calls_per_s")); }});
  out.push_back({"ping", "raw TCP p50, 1 in flight", "us", Better::kLower,
                 [](const Json& r) { return Num(r.Path("tcp_1.latency_us.p50")); }});
  out.push_back({"ping", "NULL p50 / raw TCP p50", "ratio", Better::kLower,
                 [](const Json& r) { return Num(r.Get("null_to_tcp_p50")); }});
  return out;
}

std::optional<double> Median(const RunData& data, const std::string& system,
                             const std::string& test_case,
                             const std::function<std::optional<double>(const Json&)>& get) {
  std::vector<double> values;
  for (const Json& doc : data.Docs(system, test_case)) {
    if (auto v = get(doc.Get("results"))) values.push_back(*v);
  }
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<double> Value(const RunData& data, const Metric& m, const std::string& system) {
  return Median(data, system, m.test_case, m.get);
}

}  // namespace nfsx::bench
