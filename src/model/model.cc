#include "model/model.h"

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unordered_map>

#include "backend/parallel/communicator.h"
#include "model/rank_memory.h"
#include "model/step_message.h"

namespace pagoda::model {
namespace {

// The ranks a model is split across (tensor or pipeline parallelism); size 1: not split.
// Every rank of the job: the pipeline's world, else the tensor-parallel group.
backend::TensorParallel peers(const backend::Backend& backend) {
  const backend::PipelineParallel pp = backend.pipeline_parallel();
  if (pp.size > 1) return backend::TensorParallel{pp.comm, pp.comm->rank(), pp.comm->size()};
  return backend.tensor_parallel();
}

void send_step(const backend::TensorParallel& tp, const std::vector<uint8_t>& bytes) {
  uint64_t n = bytes.size();
  tp.comm->broadcast(&n, sizeof(n), 0);
  tp.comm->broadcast(const_cast<uint8_t*>(bytes.data()), bytes.size(), 0);
}

// This process's resident memory in MiB from /proc/self/status: "RSS x (anon y, file z)", or
// "" where there is no such file.
std::string resident_memory() {
  std::ifstream in("/proc/self/status");
  std::string line, out;
  for (const char* key : {"VmRSS:", "RssAnon:", "RssFile:"}) {
    in.clear();
    in.seekg(0);
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) != 0) continue;
      const double mib = std::strtod(line.c_str() + std::string(key).size(), nullptr) / 1024;
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%s %.1f MiB", key, mib);
      out += out.empty() ? buf : std::string(", ") + buf;
    }
  }
  return out;
}

// Whether layers share K arrays (a hybrid model's KV groups: model::kv_layout's kv_groups).
bool layers_share_arrays(std::span<const kernels::KvLayerView> kv_layers) {
  std::vector<const void*> keys;
  for (const auto& kv : kv_layers)
    keys.push_back(kv.k);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

// The id rank 0 names a KV cache by in its step messages (its first layer's K storage).
KvCacheShape cache_shape(std::span<const kernels::KvLayerView> kv_layers) {
  const kernels::KvLayerView& kv = kv_layers[0];
  return KvCacheShape{reinterpret_cast<uint64_t>(kv.k), kv.num_blocks, kv.block_size, kv.dtype,
                      layers_share_arrays(kv_layers)};
}

// Collective over the model's peers: every rank's {weight bytes, KV cache bytes}, in rank order.
std::vector<RankMemory> all_gather_memory(const backend::TensorParallel& tp, uint64_t weights,
                                          uint64_t kv_bytes) {
  const uint64_t mine[2] = {weights, kv_bytes};
  std::vector<uint64_t> all(2 * static_cast<size_t>(tp.size));
  tp.comm->all_gather(mine, sizeof(mine), all.data());
  std::vector<RankMemory> out;
  for (int32_t r = 0; r < tp.size; ++r)
    out.push_back({r, all[2 * static_cast<size_t>(r)], all[2 * static_cast<size_t>(r) + 1]});
  return out;
}

}  // namespace

Result<std::vector<RankMemory>> gather_rank_memory(const Model& model,
                                                   const backend::KvStorage& kv) {
  const backend::TensorParallel tp = peers(model.backend());
  if (tp.size <= 1) return std::vector<RankMemory>{{0, model.weight_bytes(), kv.total_bytes()}};
  if (tp.rank != 0) {
    return failed_precondition("gather_rank_memory runs on rank 0 (the workers answer it)");
  }
  if (kv.layers().empty()) return invalid_argument("gather_rank_memory: a KV cache of no layers");
  send_step(tp, encode_step(StepOp::kReport, cache_shape(kv.layers()), ForwardBatch{}));
  return all_gather_memory(tp, model.weight_bytes(), kv.total_bytes());
}

Model::~Model() {
  const backend::TensorParallel tp = peers(backend_);
  if (tp.size > 1 && tp.rank == 0) send_step(tp, encode_step(StepOp::kShutdown, {}, {}));
}

Status Model::run_worker() {
  const backend::TensorParallel tp = peers(backend_);
  if (tp.size <= 1 || tp.rank == 0) {
    return failed_precondition("run_worker runs on tensor/pipeline-parallel ranks other than 0");
  }
  backend::parallel::Communicator& comm = *tp.comm;
  std::unordered_map<uint64_t, backend::KvStorage> caches;
  std::vector<uint8_t> bytes;
  std::vector<float> logits;
  for (;;) {
    uint64_t n = 0;
    comm.broadcast(&n, sizeof(n), 0);
    if (n > (uint64_t{1} << 32)) comm.abort(1, "step message of " + std::to_string(n) + " bytes");
    bytes.resize(static_cast<size_t>(n));
    comm.broadcast(bytes.data(), bytes.size(), 0);
    auto msg = decode_step(bytes);
    if (!msg.ok()) comm.abort(1, std::string(msg.status().message()));
    if (msg->op == StepOp::kShutdown) {
      // Resident memory after serving: weights (placed copies, touched file pages) + KV + code.
      std::fprintf(stderr, "pagoda: rank %d/%d at shutdown: %s\n", tp.rank, tp.size,
                   resident_memory().c_str());
      return Status();
    }
    const KvCacheShape& shape = msg->kv;
    auto it = caches.find(shape.id);
    // (kv_groups: rank 0's layers share arrays; this rank's share them only where its own
    // layers span both groups: a pipeline stage of local layers alone keeps one array each.)
    if (it != caches.end() &&
        (it->second.num_blocks() != shape.num_blocks ||
         it->second.block_size() != shape.block_size ||
         it->second.layers()[0].dtype != shape.dtype ||
         it->second.num_arrays() != kv_layout(shape.kv_groups).num_arrays())) {
      caches.erase(it);  // rank 0 made a new cache where an old one was
      it = caches.end();
    }
    if (it == caches.end()) {
      auto storage = backend::KvStorage::create(backend_, kv_layout(shape.kv_groups),
                                                shape.num_blocks, shape.block_size, shape.dtype);
      if (!storage.ok()) comm.abort(1, "KV cache: " + std::string(storage.status().message()));
      std::fprintf(stderr, "pagoda: rank %d/%d: %.1f MiB of weights, %.1f MiB of KV cache\n",
                   tp.rank, tp.size, static_cast<double>(weight_bytes()) / (1 << 20),
                   static_cast<double>(storage->total_bytes()) / (1 << 20));
      it = caches.emplace(shape.id, std::move(storage).value()).first;
    }
    backend::KvStorage& cache = it->second;
    for (const KvBlockCopy& c : msg->copies) {
      if (c.src < 0 || c.dst < 0 || c.src >= cache.num_blocks() || c.dst >= cache.num_blocks()) {
        comm.abort(1, "step message: block copy outside the KV cache");
      }
      cache.copy_block(c.src, c.dst);
    }
    if (msg->op == StepOp::kReport) {
      all_gather_memory(tp, weight_bytes(), cache.total_bytes());
      continue;
    }
    if (msg->tokens.empty()) continue;
    logits.resize(msg->logit_rows.size() * static_cast<size_t>(config_.vocab_size));
    Status s = forward(msg->batch, cache.layers(), logits.data());
    if (!s.ok()) comm.abort(1, "forward pass: " + std::string(s.message()));
  }
}

Status Model::classify(const float* /*pooled*/, int64_t /*rows*/, float* /*scores*/) const {
  return failed_precondition("model '{}' has no classifier head", config_.name);
}

Status Model::forward(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                      float* logits) {
  const size_t n = batch.tokens.size();
  if (batch.positions.size() != n) {
    return invalid_argument("batch has {} tokens but {} positions", n, batch.positions.size());
  }
  if (kv_layers.size() != static_cast<size_t>(config_.num_layers)) {
    return invalid_argument("{} KV layers given, model has {}", kv_layers.size(),
                            config_.num_layers);
  }
  const backend::KvLayout layout = kv_layout();
  for (const auto& kv : kv_layers) {
    if (kv.n_kv_heads != layout.num_kv_heads || kv.head_dim != layout.head_dim ||
        kv.block_size <= 0 || (layout.values_in_keys && kv.v != kv.k)) {
      return invalid_argument("KV layer shape does not match the model");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (batch.tokens[i] < 0 || batch.tokens[i] >= config_.vocab_size) {
      return invalid_argument("token id {} at batch row {} is outside the vocabulary [0, {})",
                              batch.tokens[i], i, config_.vocab_size);
    }
    if (batch.positions[i] < 0) {
      return invalid_argument("negative position at batch row {}", i);
    }
  }
  // Layers sharing arrays (a hybrid model's KV groups) hold the two groups' blocks apart only
  // through the two tables: every sequence must bring its sliding-window table.
  const bool grouped = layers_share_arrays(kv_layers);
  size_t covered = 0;
  for (const auto& seq : batch.sequences) {
    if (grouped && seq.sliding_block_table.empty()) {
      return invalid_argument(
          "the KV cache keeps hybrid layer groups but a sequence has no sliding-window table");
    }
    if (!seq.sliding_block_table.empty() &&
        seq.sliding_block_table.size() != seq.block_table.size()) {
      return invalid_argument("a sequence's sliding-window table has {} entries, its table {}",
                              seq.sliding_block_table.size(), seq.block_table.size());
    }
    if (seq.num_tokens <= 0 || seq.token_begin < 0 ||
        static_cast<size_t>(seq.token_begin) != covered ||
        static_cast<size_t>(seq.token_begin) + static_cast<size_t>(seq.num_tokens) > n) {
      return invalid_argument("sequence slices must tile the batch in order");
    }
    covered += static_cast<size_t>(seq.num_tokens);
    const int32_t block_size = kv_layers.empty() ? 1 : kv_layers[0].block_size;
    for (int32_t t = 0; t < seq.num_tokens; ++t) {
      const int64_t pos = batch.positions[static_cast<size_t>(seq.token_begin + t)];
      const int64_t logical = pos / block_size;
      if (logical >= static_cast<int64_t>(seq.block_table.size())) {
        return invalid_argument("position {} is beyond the sequence's block table", pos);
      }
    }
    for (const std::span<const int32_t> table : {seq.block_table, seq.sliding_block_table}) {
      for (int32_t b : table) {
        if (!kv_layers.empty() && (b < 0 || b >= kv_layers[0].num_blocks)) {
          return invalid_argument("block id {} is outside the KV cache", b);
        }
      }
    }
  }
  if (covered != n) return invalid_argument("sequence slices cover {} of {} rows", covered, n);
  for (int32_t r : batch.logit_rows) {
    if (r < 0 || static_cast<size_t>(r) >= n) {
      return invalid_argument("logit row {} is outside the batch", r);
    }
  }
  for (int32_t r : batch.hidden_rows) {
    if (r < 0 || static_cast<size_t>(r) >= n) {
      return invalid_argument("hidden row {} is outside the batch", r);
    }
  }
  if (!batch.token_types.empty()) {
    if (batch.token_types.size() != n) {
      return invalid_argument("batch has {} tokens but {} token types", n,
                              batch.token_types.size());
    }
    for (size_t i = 0; i < n; ++i) {
      if (batch.token_types[i] < 0 || batch.token_types[i] > 1) {
        return invalid_argument("token type {} at batch row {} is not 0 or 1", batch.token_types[i],
                                i);
      }
    }
  }
  if (!batch.hidden_rows.empty() && batch.hidden == nullptr) {
    return invalid_argument("{} hidden rows requested without an output buffer",
                            batch.hidden_rows.size());
  }
  const backend::TensorParallel tp = peers(backend_);
  if (tp.size > 1 && tp.rank == 0 && (n > 0 || !batch.block_copies.empty())) {
    send_step(tp, encode_step(StepOp::kForward, cache_shape(kv_layers), batch));
  }
  if (n == 0) return Status();
  forward_impl(batch, kv_layers, logits);
  return Status();
}

}  // namespace pagoda::model
