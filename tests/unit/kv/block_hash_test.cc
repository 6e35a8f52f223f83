// XXH3-128 wrapper against published reference vectors, and the chained block-key properties.
#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/hash.h"

namespace pagoda::kv {
namespace {

// Reference values of XXH3_128bits (seed 0) from the xxHash sanity tests.
TEST(Hash128, MatchesReferenceVectors) {
  EXPECT_EQ(xxh3_128(std::string_view("")),
            (Hash128{0x6001c324468d497full, 0x99aa06d3014798d8ull}));
  EXPECT_EQ(xxh3_128(std::string_view("a")),
            (Hash128{0xe6c632b61e964e1full, 0xa96faf705af16834ull}));
  EXPECT_EQ(xxh3_128(std::string_view("abc")),
            (Hash128{0x78af5f94892f3950ull, 0x06b05ab6733a6185ull}));
  EXPECT_EQ(xxh3_128(std::string_view("hello")),
            (Hash128{0xc779cfaa5e523818ull, 0xb5e9c1ad071b3e7full}));
}

TEST(Hash128, StreamingEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i)
    data.push_back(static_cast<char>(i * 7 + 3));
  Hasher128 h;
  h.update(std::as_bytes(std::span<const char>(data.data(), 10)));
  h.update(std::as_bytes(std::span<const char>(data.data() + 10, 500)));
  h.update(std::as_bytes(std::span<const char>(data.data() + 510, data.size() - 510)));
  EXPECT_EQ(h.digest(), xxh3_128(data));
  h.reset();
  EXPECT_EQ(h.digest(), xxh3_128(std::string_view("")));
  Hasher128 moved = std::move(h);
  moved.update(std::as_bytes(std::span<const char>(data.data(), 3)));
  EXPECT_EQ(moved.digest(), xxh3_128(std::string_view(data.data(), 3)));
}

TEST(BlockHash, LayoutIsParentThenTokens) {
  // Independent re-statement of the documented layout: parent (low, high) then int32 tokens.
  const BlockHash parent{0x0123456789abcdefull, 0xfedcba9876543210ull};
  const std::vector<TokenId> tokens = {1, -2, 300000, 4};
  std::string bytes;
  bytes.append(reinterpret_cast<const char*>(&parent.low), 8);
  bytes.append(reinterpret_cast<const char*>(&parent.high), 8);
  bytes.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 4);
  EXPECT_EQ(hash_block(parent, tokens), xxh3_128(bytes));
  // Extra keys are appended after the tokens.
  const std::vector<uint64_t> extra = {42};
  bytes.append(reinterpret_cast<const char*>(extra.data()), 8);
  EXPECT_EQ(hash_block(parent, tokens, extra), xxh3_128(bytes));
}

TEST(BlockHash, LargeBlocksUseTheHeapPathConsistently) {
  std::vector<TokenId> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<TokenId>(i * 31);
  const BlockHash parent = root_block_hash("");
  std::string bytes;
  bytes.append(reinterpret_cast<const char*>(&parent.low), 8);
  bytes.append(reinterpret_cast<const char*>(&parent.high), 8);
  bytes.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 4);
  EXPECT_EQ(hash_block(parent, tokens), xxh3_128(bytes));
}

TEST(BlockHash, ChainCommitsToEveryEarlierTokenAndTheSalt) {
  const std::vector<TokenId> a = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<TokenId> b = a;
  b[0] = 99;  // differs only in block 0
  std::vector<BlockHash> ha, hb, hs, hs2;
  extend_block_hashes(ha, a, 4, 2, "");
  extend_block_hashes(hb, b, 4, 2, "");
  extend_block_hashes(hs, a, 4, 2, "tenant-1");
  extend_block_hashes(hs2, a, 4, 2, "tenant-2");
  ASSERT_EQ(ha.size(), 2u);
  EXPECT_NE(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);  // block 1's tokens are equal, but its parent differs
  EXPECT_NE(ha[0], hs[0]);
  EXPECT_NE(hs[0], hs2[0]);
  EXPECT_NE(ha[0], ha[1]);
  // The chain equals repeated hash_block calls, and extending is incremental.
  EXPECT_EQ(ha[0], hash_block(root_block_hash(""), std::span<const TokenId>(a).first(4)));
  EXPECT_EQ(ha[1], hash_block(ha[0], std::span<const TokenId>(a).subspan(4, 4)));
  std::vector<BlockHash> inc;
  extend_block_hashes(inc, a, 4, 1, "");
  extend_block_hashes(inc, a, 4, 2, "");
  EXPECT_EQ(inc, ha);
  // A salt is not confusable with a prefix of tokens: distinct roots.
  EXPECT_NE(root_block_hash(""), root_block_hash("x"));
}

// LoRA (issue 37): each adapter id has its own root, distinct from the base model's, from every
// salt and from every other adapter's, with or without a salt; id 0 is the base model's root.
TEST(BlockHash, AdapterIdsSeparateRoots) {
  EXPECT_EQ(root_block_hash("", 0), root_block_hash(""));
  EXPECT_EQ(root_block_hash("s", 0), root_block_hash("s"));
  std::vector<BlockHash> roots = {root_block_hash(""), root_block_hash("s")};
  for (uint32_t id : {1u, 2u, 3u, 0xffffffffu}) {
    roots.push_back(root_block_hash("", id));
    roots.push_back(root_block_hash("s", id));
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    for (size_t j = i + 1; j < roots.size(); ++j)
      EXPECT_NE(roots[i], roots[j]) << i << " " << j;
  }
  const std::vector<TokenId> a = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<BlockHash> base, lora;
  extend_block_hashes(base, a, 4, 2, "");
  extend_block_hashes(lora, a, 4, 2, "", 7);
  EXPECT_NE(base[0], lora[0]);
  EXPECT_NE(base[1], lora[1]);
  EXPECT_EQ(lora[0], hash_block(root_block_hash("", 7), std::span<const TokenId>(a).first(4)));
}

// Issue 40: the roots carry a random per-process secret, so nobody outside the process can
// precompute a block's hash (the unkeyed constants of before are not the roots any more).
TEST(BlockHash, RootsAreKeyedWithAPerProcessSecret) {
  const std::array<uint64_t, 2>& secret = process_hash_secret();
  EXPECT_FALSE(secret[0] == 0 && secret[1] == 0);
  EXPECT_EQ(&secret, &process_hash_secret());  // drawn once
  EXPECT_NE(root_block_hash(""), xxh3_128(std::string_view("pagoda.kv.root")));
  std::string unkeyed = "pagoda.kv.salt";
  const uint64_t len = 1;
  unkeyed.append(reinterpret_cast<const char*>(&len), sizeof(len));
  unkeyed.append("x");
  EXPECT_NE(root_block_hash("x"), xxh3_128(unkeyed));
  // The layout with the secret: H("pagoda.kv.root" || secret).
  std::string keyed = "pagoda.kv.root";
  keyed.append(reinterpret_cast<const char*>(secret.data()), sizeof(secret));
  EXPECT_EQ(root_block_hash(""), xxh3_128(keyed));
  EXPECT_EQ(root_block_hash("x"), root_block_hash("x"));  // stable within the process
}

}  // namespace
}  // namespace pagoda::kv
