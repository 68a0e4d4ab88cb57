// XDR (RFC 4506) encoding and decoding.
//
// Both directions share one description per type: a wire type T provides
//     template <class X> void Xdr(X& x, T& v) { x(v.a); x(v.b); ... }
// and XdrEncoder/XdrDecoder implement operator() for primitives, so the same
// function encodes and decodes. Errors are sticky: after the first failure the
// decoder yields zeros and ok() is false, so descriptions need no error
// plumbing; check ok() once at the end.
//
// Decoding never allocates more than the input could describe: every variable
// length is checked against both the protocol maximum and the bytes remaining.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/out_buffer.h"

namespace nfsx::xdr {

inline uint32_t LoadBe32(const std::byte* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
inline void StoreBe32(std::byte* p, uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}
inline constexpr size_t Pad4(size_t n) { return (4 - (n & 3)) & 3; }

// A borrowed run of bytes on the wire (WRITE and READ payloads). Decoding points
// into the input buffer; encoding attaches the bytes without copying them.
struct Opaque {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;  // keeps `bytes` alive when encoding, may be null
};

// Fixed-capacity variable-length opaque, e.g. nfs_fh3 (at most 64 bytes): no heap.
template <size_t N>
struct BoundedOpaque {
  uint32_t size = 0;
  std::array<std::byte, N> data{};
  std::span<const std::byte> view() const { return {data.data(), size}; }
  void assign(std::span<const std::byte> b) {
    size = static_cast<uint32_t>(b.size() <= N ? b.size() : N);
    std::memcpy(data.data(), b.data(), size);
  }
  friend bool operator==(const BoundedOpaque& a, const BoundedOpaque& b) {
    return a.size == b.size && std::memcmp(a.data.data(), b.data.data(), a.size) == 0;
  }
};

// A string with a protocol maximum length (filename3, nfspath3, machinename).
template <uint32_t Max>
struct BoundedString {
  std::string value;
  friend bool operator==(const BoundedString&, const BoundedString&) = default;
};

class XdrDecoder {
 public:
  static constexpr bool kDecoding = true;
  // `owner`, if given, keeps `in` alive: every decoded Opaque (a view into `in`)
  // holds a reference to it, so decoded values may outlive the decoder's caller.
  explicit XdrDecoder(std::span<const std::byte> in, std::shared_ptr<const void> owner = nullptr)
      : p_(in.data()), end_(in.data() + in.size()), owner_(std::move(owner)) {}

  bool ok() const { return ok_; }
  void Fail() {
    ok_ = false;
    p_ = end_;
  }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const std::byte* position() const { return p_; }

  void operator()(uint32_t& v) { v = Take32(); }
  void operator()(int32_t& v) { v = static_cast<int32_t>(Take32()); }
  void operator()(uint64_t& v) {
    uint64_t hi = Take32();
    v = (hi << 32) | Take32();
  }
  void operator()(int64_t& v) {
    uint64_t u;
    (*this)(u);
    v = static_cast<int64_t>(u);
  }
  void operator()(bool& v) {
    uint32_t u = Take32();
    if (u > 1) Fail();
    v = (u == 1);
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(E& v) { v = static_cast<E>(Take32()); }
  template <size_t N>
  void operator()(std::array<std::byte, N>& v) {
    const std::byte* p = Take(N + Pad4(N));
    if (p) std::memcpy(v.data(), p, N);
  }
  template <size_t N>
  void operator()(BoundedOpaque<N>& v) {
    uint32_t n = Take32();
    if (n > N) return Fail();
    const std::byte* p = Take(n + Pad4(n));
    if (!p) return;
    v.size = n;
    std::memcpy(v.data.data(), p, n);
  }
  template <uint32_t Max>
  void operator()(BoundedString<Max>& v) {
    std::string_view s = View(Max);
    v.value.assign(s);
  }
  // Variable-length opaque with no protocol maximum beyond the record itself.
  void operator()(Opaque& v) {
    v.bytes = OpaqueView(UINT32_MAX);
    v.owner = owner_;
  }
  void operator()(std::vector<std::byte>& v) {
    auto b = OpaqueView(UINT32_MAX);
    v.assign(b.begin(), b.end());
  }
  template <class T>
  void operator()(std::optional<T>& v) {
    bool present = false;
    (*this)(present);
    if (present && ok_) {
      v.emplace();
      (*this)(*v);
    } else {
      v.reset();
    }
  }
  // Bodies of structs: dispatch to the type's Xdr() description.
  template <class T>
  requires requires(XdrDecoder& d, T& t) { Xdr(d, t); }
  void operator()(T& v) { Xdr(*this, v); }

  // Counted array with a maximum element count.
  template <class T>
  void Array(std::vector<T>& v, uint32_t max) {
    uint32_t n = Take32();
    // Each element takes at least 4 bytes: a count beyond that is a lie, not a reason to allocate.
    if (n > max || n > remaining() / 4) return Fail();
    v.resize(n);
    for (auto& e : v) (*this)(e);
  }

  std::span<const std::byte> OpaqueView(uint32_t max) {
    uint32_t n = Take32();
    if (n > max) {
      Fail();
      return {};
    }
    const std::byte* p = Take(size_t(n) + Pad4(n));
    return p ? std::span<const std::byte>(p, n) : std::span<const std::byte>();
  }
  std::string_view View(uint32_t max) {
    auto b = OpaqueView(max);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

 private:
  const std::byte* Take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) {
      Fail();
      return nullptr;
    }
    const std::byte* p = p_;
    p_ += n;
    return p;
  }
  uint32_t Take32() {
    const std::byte* p = Take(4);
    return p ? LoadBe32(p) : 0;
  }

  const std::byte* p_;
  const std::byte* end_;
  std::shared_ptr<const void> owner_;
  bool ok_ = true;
};

class XdrEncoder {
 public:
  static constexpr bool kDecoding = false;
  explicit XdrEncoder(OutBuffer* out) : out_(out) {}
  // An invalid union discriminant: only decoding can meet one.
  void Fail() {}

  OutBuffer& buffer() { return *out_; }

  void operator()(uint32_t v) { StoreBe32(out_->Extend(4), v); }
  void operator()(int32_t v) { (*this)(static_cast<uint32_t>(v)); }
  void operator()(uint64_t v) {
    std::byte* p = out_->Extend(8);
    StoreBe32(p, static_cast<uint32_t>(v >> 32));
    StoreBe32(p + 4, static_cast<uint32_t>(v));
  }
  void operator()(int64_t v) { (*this)(static_cast<uint64_t>(v)); }
  void operator()(bool v) { (*this)(uint32_t{v ? 1u : 0u}); }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(E v) { (*this)(static_cast<uint32_t>(v)); }
  template <size_t N>
  void operator()(const std::array<std::byte, N>& v) {
    Raw(v);
  }
  template <size_t N>
  void operator()(const BoundedOpaque<N>& v) {
    Bytes(v.view());
  }
  template <uint32_t Max>
  void operator()(const BoundedString<Max>& v) {
    Bytes(std::as_bytes(std::span(v.value)));
  }
  void operator()(const Opaque& v) {
    (*this)(static_cast<uint32_t>(v.bytes.size()));
    if (v.owner) {
      out_->AppendExternal(v.bytes, v.owner);
    } else {
      out_->Append(v.bytes);
    }
    Zeros(Pad4(v.bytes.size()));
  }
  void operator()(const std::vector<std::byte>& v) { Bytes(v); }
  template <class T>
  void operator()(const std::optional<T>& v) {
    (*this)(v.has_value());
    if (v) (*this)(*v);
  }
  template <class T>
  requires requires(XdrEncoder& e, T& t) { Xdr(e, t); }
  void operator()(const T& v) {
    // Descriptions take T& so one function serves both directions; encoding never writes.
    Xdr(*this, const_cast<T&>(v));
  }

  template <class T>
  void Array(const std::vector<T>& v, uint32_t /*max*/) {
    (*this)(static_cast<uint32_t>(v.size()));
    for (const auto& e : v) (*this)(e);
  }

  // Length-prefixed opaque, copied inline.
  void Bytes(std::span<const std::byte> b) {
    (*this)(static_cast<uint32_t>(b.size()));
    Raw(b);
  }
  void String(std::string_view s) { Bytes(std::as_bytes(std::span(s))); }
  // Fixed-length opaque (no length word), padded.
  void Raw(std::span<const std::byte> b) {
    out_->Append(b);
    Zeros(Pad4(b.size()));
  }

 private:
  void Zeros(size_t n) {
    if (n) std::memset(out_->Extend(n), 0, n);
  }
  OutBuffer* out_;
};

// Decoders take mutable references; an encoder reuses the same description.
template <class T>
bool Decode(std::span<const std::byte> in, T& v) {
  XdrDecoder d(in);
  d(v);
  return d.ok();
}
template <class T>
void Encode(OutBuffer* out, const T& v) {
  XdrEncoder e(out);
  e(v);
}

}  // namespace nfsx::xdr
