// A deliberately tiny GGUF reader for kernel tests: enough to pull named tensors out of the
// trusted shared fixtures (no hostile-input hardening; the real reader lives in src/format).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace pagoda::kernels::testing {

struct MiniTensor {
  tensor::DType dtype = tensor::DType::kF32;
  std::vector<uint64_t> dims;  // dims[0] contiguous
  const uint8_t* data = nullptr;
  uint64_t rows() const {
    uint64_t r = 1;
    for (size_t i = 1; i < dims.size(); ++i)
      r *= dims[i];
    return r;
  }
};

class MiniGguf {
 public:
  // Returns false if the file cannot be read or is not GGUF.
  bool load(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) return false;
    bytes_.resize(static_cast<size_t>(f.tellg()));
    f.seekg(0);
    if (!f.read(reinterpret_cast<char*>(bytes_.data()),
                static_cast<std::streamsize>(bytes_.size()))) {
      return false;
    }
    pos_ = 0;
    if (bytes_.size() < 24 || std::memcmp(bytes_.data(), "GGUF", 4) != 0) return false;
    pos_ = 4;
    (void)get<uint32_t>();  // version
    const auto num_tensors = get<uint64_t>();
    const auto num_kv = get<uint64_t>();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < num_kv; ++i) {
      const std::string key = str();
      const auto type = get<uint32_t>();
      if (key == "general.alignment" && type == 4) {
        alignment = get<uint32_t>();
      } else {
        skip_value(type);
      }
    }
    struct Info {
      std::string name;
      MiniTensor t;
      uint64_t offset;
    };
    std::vector<Info> infos;
    for (uint64_t i = 0; i < num_tensors; ++i) {
      Info info;
      info.name = str();
      const auto n_dims = get<uint32_t>();
      for (uint32_t d = 0; d < n_dims; ++d)
        info.t.dims.push_back(get<uint64_t>());
      info.t.dtype = static_cast<tensor::DType>(get<uint32_t>());
      info.offset = get<uint64_t>();
      infos.push_back(std::move(info));
    }
    const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    for (auto& info : infos) {
      info.t.data = bytes_.data() + data_start + info.offset;
      tensors_[info.name] = info.t;
    }
    return true;
  }

  const MiniTensor* find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }

 private:
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = get<uint64_t>();
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void skip_value(uint32_t type) {
    static constexpr int kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      (void)str();
    } else if (type == 9) {
      const auto elem = get<uint32_t>();
      const auto count = get<uint64_t>();
      for (uint64_t i = 0; i < count; ++i)
        skip_value(elem);
    } else {
      pos_ += static_cast<size_t>(kSizes[type]);
    }
  }

  std::vector<uint8_t> bytes_;
  size_t pos_ = 0;
  std::map<std::string, MiniTensor> tensors_;
};

}  // namespace pagoda::kernels::testing
