// Communicator: the transport between the ranks of a parallel job (tensor, pipeline and expert
// parallelism split one model across them). MPI implements it now (mpi_communicator.cc); NCCL
// can take its place on GPUs behind the same calls. Every call is collective over all ranks
// unless it says otherwise: each rank makes the same calls in the same order. A transport
// failure is not recoverable (a peer died): the implementations abort the whole job with a
// message rather than return, so no rank waits forever on a dead peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace pagoda::backend::parallel {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data[n] := the element-wise sum of every rank's data[n].
  virtual void all_reduce_sum(float* data, size_t n) = 0;
  // bytes[n] := root's bytes[n] on every rank.
  virtual void broadcast(void* bytes, size_t n, int root) = 0;
  // recv[size() * n] := every rank's send[n], in rank order.
  virtual void all_gather(const void* send, size_t n, void* recv) = 0;
  // Point to point (not collective): n bytes to / from one peer, matched by tag.
  virtual void send(const void* bytes, size_t n, int peer, int tag) = 0;
  virtual void recv(void* bytes, size_t n, int peer, int tag) = 0;
  virtual void barrier() = 0;
  // Collective: the ranks with the same `color` form a communicator of their own, ordered by
  // `key` (then by rank here). Tensor x pipeline parallelism splits the job into one group per
  // stage for the stage's all-reduces.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Ends every rank of the job with exit code `code` after printing `message` (with this
  // rank's number) to stderr. Not collective: one rank that cannot go on calls it.
  [[noreturn]] virtual void abort(int code, std::string_view message) = 0;
};

// A job of one rank: collectives are copies or nothing.
class LocalCommunicator final : public Communicator {
 public:
  std::string_view name() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(float*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void all_gather(const void* send, size_t n, void* recv) override;
  void send(const void* bytes, size_t n, int peer, int tag) override;
  void recv(void* bytes, size_t n, int peer, int tag) override;
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override;
  [[noreturn]] void abort(int code, std::string_view message) override;
};

// True when this process was started by mpirun (OpenMPI's OMPI_COMM_WORLD_SIZE, or PMI/PMIx
// variables) as one of more than one rank.
bool launched_as_job();

// The process's communicator over every rank of the job: MPI when launched_as_job(), else a
// LocalCommunicator. The first call initialises MPI (thread level "serialized": calls may come
// from any one thread at a time); later calls return the same object.
Communicator& world();

// Ends the job's use of the transport (MPI_Finalize) if world() started it. Call once, last.
void finalize_world();

}  // namespace pagoda::backend::parallel
