#include "bench/json.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace nfsx::bench {
namespace {

const Json kNull;
const std::string kEmptyString;
const Json::Array kEmptyArray;
const Json::Object kEmptyObject;

void Escape(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          *out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string Number(double d) {
  if (!std::isfinite(d)) return "null";  // JSON has no NaN or infinity
  if (d == std::floor(d) && std::fabs(d) < 9.007199254740992e15) {
    return fmt::format("{}", static_cast<int64_t>(d));
  }
  return fmt::format("{:.6g}", d);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<Json> Document(std::string* error) {
    auto v = Value();
    Space();
    if (v && i_ != s_.size()) v.reset(), error_ = "trailing characters";
    if (!v) *error = fmt::format("JSON: {} at offset {}", error_, i_);
    return v;
  }

 private:
  void Space() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Eat(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  std::optional<Json> Fail(const char* what) {
    error_ = what;
    return std::nullopt;
  }

  std::optional<Json> Value() {
    if (++depth_ > 64) return Fail("nested too deeply");
    Space();
    std::optional<Json> out;
    if (i_ >= s_.size()) {
      out = Fail("unexpected end");
    } else if (s_[i_] == '{') {
      out = ObjectValue();
    } else if (s_[i_] == '[') {
      out = ArrayValue();
    } else if (s_[i_] == '"') {
      auto str = String();
      if (str) out = Json(std::move(*str));
    } else if (Eat("true")) {
      out = Json(true);
    } else if (Eat("false")) {
      out = Json(false);
    } else if (Eat("null")) {
      out = Json();
    } else {
      out = NumberValue();
    }
    --depth_;
    return out;
  }

  std::optional<Json> NumberValue() {
    size_t start = i_;
    while (i_ < s_.size() &&
           std::string_view("+-0123456789.eE").find(s_[i_]) != std::string_view::npos) {
      ++i_;
    }
    if (start == i_) return Fail("unexpected character");
    std::string text(s_.substr(start, i_ - start));
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return Fail("bad number");
    return Json(d);
  }

  std::optional<std::string> String() {
    ++i_;  // the opening quote
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return std::nullopt;
          unsigned code = std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16);
          i_ += 4;
          // What we write is ASCII; anything else is kept as UTF-8 of the BMP code point.
          if (code < 0x80) {
            out.push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out.push_back(static_cast<char>(0xc0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
          } else {
            out.push_back(static_cast<char>(0xe0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
          }
          break;
        }
        default:
          out.push_back(e);
      }
    }
    if (i_ >= s_.size()) {
      error_ = "unterminated string";
      return std::nullopt;
    }
    ++i_;
    return out;
  }

  std::optional<Json> ArrayValue() {
    ++i_;
    Json out = Json::MakeArray();
    Space();
    if (Eat("]")) return out;
    for (;;) {
      auto v = Value();
      if (!v) return std::nullopt;
      out.Push(std::move(*v));
      Space();
      if (Eat("]")) return out;
      if (!Eat(",")) return Fail("expected , or ]");
    }
  }

  std::optional<Json> ObjectValue() {
    ++i_;
    Json out = Json::MakeObject();
    Space();
    if (Eat("}")) return out;
    for (;;) {
      Space();
      if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected a key");
      auto key = String();
      if (!key) return std::nullopt;
      Space();
      if (!Eat(":")) return Fail("expected :");
      auto v = Value();
      if (!v) return std::nullopt;
      out.Set(*key, std::move(*v));
      Space();
      if (Eat("}")) return out;
      if (!Eat(",")) return Fail("expected , or }");
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

bool Json::AsBool(bool fallback) const { return is_bool() ? std::get<bool>(v_) : fallback; }
double Json::AsNumber(double fallback) const {
  return is_number() ? std::get<double>(v_) : fallback;
}
const std::string& Json::AsString() const {
  return is_string() ? std::get<std::string>(v_) : kEmptyString;
}
const Json::Array& Json::AsArray() const { return is_array() ? std::get<Array>(v_) : kEmptyArray; }
const Json::Object& Json::AsObject() const {
  return is_object() ? std::get<Object>(v_) : kEmptyObject;
}

Json& Json::Set(std::string_view key, Json value) {
  if (!is_object()) v_ = Object{};
  auto& obj = std::get<Object>(v_);
  for (auto& [k, v] : obj) {
    if (k == key) {
      v = std::move(value);
      return v;
    }
  }
  obj.emplace_back(std::string(key), std::move(value));
  return obj.back().second;
}

const Json& Json::Get(std::string_view key) const {
  for (const auto& [k, v] : AsObject()) {
    if (k == key) return v;
  }
  return kNull;
}

const Json& Json::Path(std::string_view dotted) const {
  const Json* cur = this;
  while (!dotted.empty()) {
    size_t dot = dotted.find('.');
    cur = &cur->Get(dotted.substr(0, dot));
    dotted = dot == std::string_view::npos ? std::string_view{} : dotted.substr(dot + 1);
  }
  return *cur;
}

Json& Json::Push(Json value) {
  if (!is_array()) v_ = Array{};
  auto& arr = std::get<Array>(v_);
  arr.push_back(std::move(value));
  return arr.back();
}

size_t Json::size() const {
  if (is_array()) return std::get<Array>(v_).size();
  if (is_object()) return std::get<Object>(v_).size();
  return 0;
}

void Json::DumpTo(std::string* out, int indent, bool pretty) const {
  auto newline = [&](int level) {
    if (!pretty) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(level) * 2, ' ');
  };
  if (is_null()) {
    *out += "null";
  } else if (is_bool()) {
    *out += std::get<bool>(v_) ? "true" : "false";
  } else if (is_number()) {
    *out += Number(std::get<double>(v_));
  } else if (is_string()) {
    Escape(std::get<std::string>(v_), out);
  } else if (is_array()) {
    const auto& arr = std::get<Array>(v_);
    // Arrays of plain values stay on one line: record sizes, thread counts.
    bool flat = true;
    for (const auto& v : arr) flat = flat && !v.is_array() && !v.is_object();
    out->push_back('[');
    for (size_t i = 0; i < arr.size(); ++i) {
      if (i) *out += flat && pretty ? ", " : ",";
      if (!flat) newline(indent + 1);
      arr[i].DumpTo(out, indent + 1, pretty);
    }
    if (!flat && !arr.empty()) newline(indent);
    out->push_back(']');
  } else {
    const auto& obj = std::get<Object>(v_);
    out->push_back('{');
    for (size_t i = 0; i < obj.size(); ++i) {
      if (i) out->push_back(',');
      newline(indent + 1);
      Escape(obj[i].first, out);
      *out += pretty ? ": " : ":";
      obj[i].second.DumpTo(out, indent + 1, pretty);
    }
    if (!obj.empty()) newline(indent);
    out->push_back('}');
  }
}

std::string Json::Dump(bool pretty) const {
  std::string out;
  DumpTo(&out, 0, pretty);
  if (pretty) out.push_back('\n');
  return out;
}

std::optional<Json> Json::Parse(std::string_view text, std::string* error) {
  return Parser(text).Document(error);
}

bool WriteJsonFile(const std::string& path, const Json& value, std::string* error) {
  // Written beside and renamed, so a reader never sees half a file.
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    *error = fmt::format("cannot write {}: {}", tmp, std::strerror(errno));
    return false;
  }
  std::string text = value.Dump();
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

std::optional<Json> ReadJsonFile(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("cannot read {}", path);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string parse_error;
  auto j = Json::Parse(ss.str(), &parse_error);
  if (!j) *error = fmt::format("{}: {}", path, parse_error);
  return j;
}

}  // namespace nfsx::bench
