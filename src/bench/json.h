// A small JSON value: what `nfsx bench --json` writes and `nfsx bench report` reads back.
// Objects keep their keys in insertion order so that the files read like the tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace nfsx::bench {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : v_(b) {}
  Json(double d) : v_(d) {}
  Json(int i) : v_(static_cast<double>(i)) {}
  Json(uint32_t u) : v_(static_cast<double>(u)) {}
  Json(int64_t i) : v_(static_cast<double>(i)) {}
  Json(uint64_t u) : v_(static_cast<double>(u)) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(std::string_view s) : v_(std::string(s)) {}
  Json(Array a) : v_(std::move(a)) {}

  static Json MakeObject() {
    Json j;
    j.v_ = Object{};
    return j;
  }
  static Json MakeArray() {
    Json j;
    j.v_ = Array{};
    return j;
  }

  bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_number() const { return std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_object() const { return std::holds_alternative<Object>(v_); }

  // Typed reads; the fallback when the value has another type.
  bool AsBool(bool fallback = false) const;
  double AsNumber(double fallback = 0) const;
  const std::string& AsString() const;  // "" unless a string
  const Array& AsArray() const;         // empty unless an array
  const Object& AsObject() const;       // empty unless an object

  // Object access. Set replaces an existing key or appends; Get returns null when missing
  // (or when this is not an object). Path("a.b.c") walks nested objects.
  Json& Set(std::string_view key, Json value);
  const Json& Get(std::string_view key) const;
  const Json& Path(std::string_view dotted) const;
  bool Has(std::string_view key) const { return !Get(key).is_null(); }

  // Array append (a null becomes an array first).
  Json& Push(Json value);
  size_t size() const;

  // Two-space indented text; integral numbers print without a fraction.
  std::string Dump(bool pretty = true) const;
  // Parses JSON text; nullopt (with *error) on malformed input.
  static std::optional<Json> Parse(std::string_view text, std::string* error);

 private:
  void DumpTo(std::string* out, int indent, bool pretty) const;
  std::variant<std::monostate, bool, double, std::string, Array, Object> v_;
};

// Reads and writes whole files. False with *error on failure.
bool WriteJsonFile(const std::string& path, const Json& value, std::string* error);
std::optional<Json> ReadJsonFile(const std::string& path, std::string* error);

}  // namespace nfsx::bench
