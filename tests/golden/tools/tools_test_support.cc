#include "tools_test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "diagnostics/logit_trace.h"
#include "loader/model_loader.h"
#include "test_support.h"

namespace pagoda::testing {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    path = std::filesystem::temp_directory_path() /
           ("pagoda-tools-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::filesystem::path pagoda_binary() {
  return binary_dir() / "bin" / "pagoda";
}

std::filesystem::path scratch_dir() {
  static ScratchDir dir;
  return dir.path;
}

CliResult run_pagoda(const std::vector<std::string>& args) {
  static int counter = 0;
  const auto out_path = scratch_dir() / ("cli-" + std::to_string(counter) + ".out");
  const auto err_path = scratch_dir() / ("cli-" + std::to_string(counter) + ".err");
  ++counter;
  std::string cmd = quote(pagoda_binary().string());
  for (const std::string& a : args)
    cmd += " " + quote(a);
  cmd += " >" + quote(out_path.string()) + " 2>" + quote(err_path.string());
  CliResult r;
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_all(out_path);
  r.err = read_all(err_path);
  std::error_code ec;
  std::filesystem::remove(out_path, ec);
  std::filesystem::remove(err_path, ec);
  return r;
}

Result<std::vector<std::vector<float>>> prompt_logits(const std::string& model_path) {
  PAGODA_ASSIGN_OR_RETURN(loader::LoadedModel loaded, loader::load_model(model_path));
  PAGODA_ASSIGN_OR_RETURN(
      diagnostics::LogitTrace trace,
      diagnostics::trace_logits(loaded, "Once upon a time, there was a little robot who", 0));
  return std::move(trace.rows);
}

double relative_logit_error(const std::vector<std::vector<float>>& reference,
                            const std::vector<std::vector<float>>& test) {
  double sq = 0, var = 0;
  size_t n = 0;
  for (size_t r = 0; r < reference.size() && r < test.size(); ++r) {
    const auto& a = reference[r];
    const auto& b = test[r];
    double mean = 0;
    for (float v : a)
      mean += v;
    mean /= static_cast<double>(a.size());
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      sq += (static_cast<double>(b[i]) - a[i]) * (static_cast<double>(b[i]) - a[i]);
      var += (a[i] - mean) * (a[i] - mean);
      ++n;
    }
  }
  if (n == 0 || var == 0) return INFINITY;
  return std::sqrt(sq / var);
}

bool all_finite(const std::vector<std::vector<float>>& rows) {
  for (const auto& row : rows) {
    for (float v : row) {
      if (!std::isfinite(v)) return false;
    }
  }
  return !rows.empty();
}

}  // namespace pagoda::testing
