// SHA-256 against the FIPS 180-4 example vectors: the cache's content addresses depend on it.
#include "core/sha256.h"

#include <gtest/gtest.h>

namespace kevo {
namespace {

TEST(Sha256, MatchesTheFipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesEqualOneShot) {
  // Split points straddle the 64-byte block and the 56-byte padding boundary.
  std::string text(200, '\0');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(i * 37 + 11);
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 119, 128, 200}) {
    Sha256 h;
    h.update(std::string_view(text).substr(0, cut)).update(std::string_view(text).substr(cut));
    EXPECT_EQ(h.hex_digest(), sha256_hex(text)) << cut;
  }
}

TEST(Sha256, DistinguishesLengthsOfZeroBytes) {
  EXPECT_NE(sha256_hex(std::string(55, '\0')), sha256_hex(std::string(56, '\0')));
  EXPECT_EQ(sha256_hex(std::string(64, '\0')), "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b");
}

}  // namespace
}  // namespace kevo
