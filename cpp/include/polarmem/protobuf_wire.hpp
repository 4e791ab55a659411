// protobuf's wire format, as much as the core's own readers and writers of stored records and
// API messages need (item_layout.cpp, new_item_record.cpp, item_view.cpp): the core links no
// protobuf library, so the module stays free of one at run time. Little-endian hosts only, as
// everywhere the core builds.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polarmem/error.hpp"
#include "polarmem/item_record_fields.hpp"

namespace polarmem::wire {

using layout::fields::kEndGroup;
using layout::fields::kFixed32;
using layout::fields::kFixed64;
using layout::fields::kLength;
using layout::fields::kStartGroup;
using layout::fields::kVarint;
using layout::fields::WireType;

inline constexpr int kMaxGroupDepth = 100;

[[noreturn]] inline void malformed(const char* what) {
  fail(ErrorCode::kInvalidArgument, std::string("not a well-formed ItemRecord: ") + what);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool done() const { return at_ >= end_; }

  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= end_) malformed("a varint runs past the end");
      const auto byte = static_cast<std::uint8_t>(*at_++);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    malformed("a varint is longer than 10 bytes");
  }
  float fixed32_float() {
    const std::uint32_t bits = fixed32();
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  std::uint32_t fixed32() {
    if (end_ - at_ < 4) malformed("a fixed32 runs past the end");
    std::uint32_t value;
    std::memcpy(&value, at_, 4);  // little-endian on every host the core builds for
    at_ += 4;
    return value;
  }
  std::string_view bytes() {
    const std::uint64_t size = varint();
    if (size > static_cast<std::uint64_t>(end_ - at_)) malformed("a length-delimited field runs past the end");
    std::string_view out(at_, static_cast<std::size_t>(size));
    at_ += size;
    return out;
  }
  // The next field's (number, wire type).
  std::pair<std::uint32_t, std::uint32_t> tag() {
    const std::uint64_t key = varint();
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) malformed("a field number out of range");
    return {static_cast<std::uint32_t>(key >> 3), static_cast<std::uint32_t>(key & 7)};
  }
  void skip(std::uint32_t field, std::uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: varint(); return;
      case kFixed64:
        if (end_ - at_ < 8) malformed("a fixed64 runs past the end");
        at_ += 8;
        return;
      case kLength: bytes(); return;
      case kFixed32: fixed32(); return;
      case kStartGroup: skip_group(field, 0); return;
      default: malformed("an end of group with no group open, or a wire type above 5");
    }
  }
  // A group's fields up to its end (a deprecated encoding ItemRecord never uses; protobuf skips
  // an unknown one, so this does too), nested at most kMaxGroupDepth deep.
  void skip_group(std::uint32_t group, int depth) {
    if (depth >= kMaxGroupDepth) malformed("groups nested too deep");
    for (;;) {
      if (done()) malformed("a group runs past the end");
      const auto [field, type] = tag();
      if (type == kEndGroup) {
        if (field != group) malformed("a group ends with another field's end");
        return;
      }
      if (type == kStartGroup) skip_group(field, depth + 1);
      else skip(field, type);
    }
  }

 private:
  const char* at_;
  const char* end_;
};

// protobuf's wire format, proto3: fields in number order, defaults (0, "", empty) left out, as
// protobuf's own serialiser writes them.
class Writer {
 public:
  void varint(std::uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  void tag(std::uint32_t field, WireType type) { varint((static_cast<std::uint64_t>(field) << 3) | type); }
  void varint_field(std::uint32_t field, std::uint64_t value) {
    if (value == 0) return;
    tag(field, kVarint);
    varint(value);
  }
  void bytes_field(std::uint32_t field, std::string_view bytes) {
    if (bytes.empty()) return;
    tag(field, kLength);
    varint(bytes.size());
    out_.append(bytes);
  }
  void message_field(std::uint32_t field, std::string_view message) {  // written even when empty (length 0)
    tag(field, kLength);
    varint(message.size());
    out_.append(message);
  }
  void fixed32_field(std::uint32_t field, float value) {
    if (value == 0.0f && !std::signbit(value)) return;
    tag(field, kFixed32);
    append_raw(&value, 4);
  }
  void packed_floats(std::uint32_t field, const std::vector<float>& values) {
    if (values.empty()) return;
    tag(field, kLength);
    varint(values.size() * sizeof(float));
    const std::size_t at = out_.size();
    out_.resize(at + values.size() * sizeof(float));
    std::memcpy(out_.data() + at, values.data(), values.size() * sizeof(float));  // little-endian hosts
  }
  void packed_varints(std::uint32_t field, const std::vector<std::uint32_t>& values) {
    if (values.empty()) return;
    Writer packed;
    for (const auto value : values) packed.varint(value);
    bytes_field(field, packed.out_);
  }
  std::string take() { return std::move(out_); }

 private:
  void append_raw(const void* data, std::size_t size) {  // little-endian hosts
    out_.append(static_cast<const char*>(data), size);
  }
  std::string out_;
};

}  // namespace polarmem::wire
