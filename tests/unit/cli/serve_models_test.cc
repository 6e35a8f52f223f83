// `pagoda serve`'s model list: -m PATH (named after the stem) and -m NAME=PATH, --models-dir (every
// *.gguf file and every directory holding config.json, sorted, other files ignored), and the
// refusals: bad names, missing paths, FIFOs, duplicate names, an empty directory.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/serve_models.h"

namespace pagoda::cli {
namespace {

namespace fs = std::filesystem;

class ServeModels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pagoda_serve_models_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string touch(const std::string& rel) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
    return p.string();
  }
  fs::path dir_;
};

TEST_F(ServeModels, NamesFromStemsOrGiven) {
  const std::string a = touch("m/llama-3.2-1b.Q4_0.gguf");
  const std::string b = touch("m/other.gguf");
  std::vector<ServedModel> out;
  ASSERT_EQ(resolve_served_models({a, "small=" + b}, "", out), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "llama-3.2-1b.Q4_0");
  EXPECT_EQ(out[0].path, a);
  EXPECT_EQ(out[1].name, "small");
  EXPECT_EQ(out[1].path, b);
  // A path holding '=' after a directory separator stays a path.
  const std::string eq = touch("x=y/model.gguf");
  ASSERT_EQ(resolve_served_models({eq}, "", out), "");
  EXPECT_EQ(out[0].name, "model");
  EXPECT_EQ(out[0].path, eq);
}

TEST_F(ServeModels, DirectoryEntries) {
  touch("d/beta.gguf");
  touch("d/alpha.gguf");
  touch("d/readme.txt");
  touch("d/hf-model/config.json");
  fs::create_directories(dir_ / "d" / "not-a-model");
  const std::string first = touch("first.gguf");
  std::vector<ServedModel> out;
  ASSERT_EQ(resolve_served_models({first}, (dir_ / "d").string(), out), "");
  std::vector<std::string> names;
  for (const ServedModel& m : out)
    names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"first", "alpha", "beta", "hf-model"}));
  EXPECT_EQ(out[3].path, (dir_ / "d" / "hf-model").string());
}

TEST_F(ServeModels, Refusals) {
  std::vector<ServedModel> out;
  const std::string a = touch("a.gguf");
  EXPECT_NE(resolve_served_models({(dir_ / "missing.gguf").string()}, "", out).find("not found"),
            std::string::npos);
  EXPECT_NE(resolve_served_models({a, "a=" + a}, "", out).find("two models are named 'a'"),
            std::string::npos);
  // A stem that is not a valid name needs NAME=PATH.
  const std::string odd = touch("we ird.gguf");
  EXPECT_NE(resolve_served_models({odd}, "", out).find("NAME=PATH"), std::string::npos);
  EXPECT_EQ(resolve_served_models({"ok=" + odd}, "", out), "");
  EXPECT_NE(resolve_served_models({}, (dir_ / "nope").string(), out).find("not a directory"),
            std::string::npos);
  fs::create_directories(dir_ / "empty");
  EXPECT_NE(resolve_served_models({}, (dir_ / "empty").string(), out).find("no *.gguf"),
            std::string::npos);
  const std::string fifo = (dir_ / "fifo.gguf").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(resolve_served_models({fifo}, "", out).find("not a regular file"), std::string::npos);
}

TEST(ServeModelNames, Check) {
  EXPECT_EQ(check_model_name("demo"), "");
  EXPECT_EQ(check_model_name("org/Model-7B:q4_0.v2"), "");
  EXPECT_NE(check_model_name(""), "");
  EXPECT_NE(check_model_name(std::string(129, 'a')), "");
  EXPECT_NE(check_model_name("-dash"), "");
  EXPECT_NE(check_model_name("a b"), "");
  EXPECT_NE(check_model_name("a\"b"), "");
  EXPECT_NE(check_model_name("caf\xc3\xa9"), "");
}

}  // namespace
}  // namespace pagoda::cli
