#include "polarmem/content_id.hpp"

#include <array>
#include <cstdint>
#include <cstring>

namespace polarmem {

namespace {

// SHA-256 (FIPS 180-4), streaming; the core has no crypto library to call (tests/unit check it
// against hashlib).
class Sha256 {
 public:
  void update(std::string_view data) {
    for (const char c : data) {
      block_[used_++] = static_cast<std::uint8_t>(c);
      if (used_ == 64) {
        compress();
        used_ = 0;
      }
    }
    bits_ += static_cast<std::uint64_t>(data.size()) * 8;
  }
  std::array<std::uint8_t, 32> finish() {
    const std::uint64_t bits = bits_;
    block_[used_++] = 0x80;
    if (used_ > 56) {
      std::memset(block_.data() + used_, 0, 64 - used_);
      compress();
      used_ = 0;
    }
    std::memset(block_.data() + used_, 0, 56 - used_);
    for (int i = 0; i < 8; ++i) block_[56 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    compress();
    std::array<std::uint8_t, 32> out{};
    for (int i = 0; i < 8; ++i)
      for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * b));
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress() {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (static_cast<std::uint32_t>(block_[4 * i]) << 24) | (static_cast<std::uint32_t>(block_[4 * i + 1]) << 16) |
             (static_cast<std::uint32_t>(block_[4 * i + 2]) << 8) | block_[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4], f = state_[5],
                  g = state_[6], h = state_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
  }

  std::array<std::uint32_t, 8> state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> block_{};
  std::size_t used_ = 0;
  std::uint64_t bits_ = 0;
};

void update_sized(Sha256& digest, std::string_view part) {
  char size[8];
  const auto length = static_cast<std::uint64_t>(part.size());
  for (int i = 0; i < 8; ++i) size[i] = static_cast<char>(length >> (8 * i));
  digest.update(std::string_view(size, 8));
  digest.update(part);
}

}  // namespace

std::string content_id(std::string_view kind, std::string_view text, std::string_view uri, std::string_view content,
                       std::string_view extra) {
  Sha256 digest;
  for (const std::string_view part : {kind, text, uri, content}) update_sized(digest, part);
  digest.update(extra);
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "h";
  for (const std::uint8_t byte : digest.finish()) {
    id.push_back(hex[byte >> 4]);
    id.push_back(hex[byte & 15]);
  }
  id.resize(32);  // "h" + 31 digits
  return id;
}

}  // namespace polarmem
