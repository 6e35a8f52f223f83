#include "test_vocabs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "format/gguf_file.h"
#include "loader/gguf_vocab.h"

namespace pagoda::testing {

tokenizer::Vocab load_gguf_vocab(const std::filesystem::path& path) {
  auto file = format::GgufFile::open(path.string());
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return {};
  auto vocab = loader::load_vocab(**file);
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  if (!vocab.ok()) return {};
  return std::move(vocab).value();
}

const tokenizer::Tokenizer* load_gguf_tokenizer(const std::filesystem::path& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(path.string());
  if (it != cache.end()) return it->second.get();
  auto file = format::GgufFile::open(path.string());
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return nullptr;
  auto vocab = loader::load_vocab(**file);
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  if (!vocab.ok()) return nullptr;
  auto tok = tokenizer::Tokenizer::create(std::move(vocab).value());
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  if (!tok.ok()) return nullptr;
  const tokenizer::Tokenizer* raw = tok->get();
  cache.emplace(path.string(), std::move(tok).value());
  return raw;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<tokenizer::TokenId> parse_ids(const std::string& line) {
  std::vector<tokenizer::TokenId> ids;
  std::istringstream in(line);
  long long v;
  while (in >> v)
    ids.push_back(static_cast<tokenizer::TokenId>(v));
  return ids;
}

}  // namespace pagoda::testing
