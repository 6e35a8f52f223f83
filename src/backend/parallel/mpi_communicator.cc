#include "backend/parallel/mpi_communicator.h"

// The C API only: the deprecated C++ bindings need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pagoda::backend::parallel {
namespace {

[[noreturn]] void die(int rank, std::string_view message, int code) {
  std::fprintf(stderr, "pagoda: rank %d: %.*s\n", rank, static_cast<int>(message.size()),
               message.data());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // (MPI_Abort does not return)
}

class MpiCommunicator final : public Communicator {
 public:
  // Over `comm` (MPI_COMM_WORLD, or a group split from it, which this object then frees).
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_WORLD && !finalized) MPI_Comm_free(&comm_);
  }
  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(float* data, size_t n) override {
    for (size_t done = 0; done < n;) {
      const int c = chunk(n - done);
      check(MPI_Allreduce(MPI_IN_PLACE, data + done, c, MPI_FLOAT, MPI_SUM, comm_),
            "MPI_Allreduce");
      done += static_cast<size_t>(c);
    }
  }
  void broadcast(void* bytes, size_t n, int root) override {
    auto* p = static_cast<char*>(bytes);
    for (size_t done = 0; done < n;) {
      const int c = chunk(n - done);
      check(MPI_Bcast(p + done, c, MPI_BYTE, root, comm_), "MPI_Bcast");
      done += static_cast<size_t>(c);
    }
  }
  void all_gather(const void* send, size_t n, void* recv) override {
    if (n > static_cast<size_t>(INT_MAX))
      die(world_rank_, "all_gather of more than 2 GiB per rank", 1);
    check(MPI_Allgather(send, static_cast<int>(n), MPI_BYTE, recv, static_cast<int>(n), MPI_BYTE,
                        comm_),
          "MPI_Allgather");
  }
  void send(const void* bytes, size_t n, int peer, int tag) override {
    const auto* p = static_cast<const char*>(bytes);
    for (size_t done = 0; done < n;) {
      const int c = chunk(n - done);
      check(MPI_Send(p + done, c, MPI_BYTE, peer, tag, comm_), "MPI_Send");
      done += static_cast<size_t>(c);
    }
  }
  void recv(void* bytes, size_t n, int peer, int tag) override {
    auto* p = static_cast<char*>(bytes);
    for (size_t done = 0; done < n;) {
      const int c = chunk(n - done);
      check(MPI_Recv(p + done, c, MPI_BYTE, peer, tag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
      done += static_cast<size_t>(c);
    }
  }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm group = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &group), "MPI_Comm_split");
    MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN);
    return std::make_unique<MpiCommunicator>(group);
  }
  [[noreturn]] void abort(int code, std::string_view message) override {
    die(world_rank_, message, code);
  }

 private:
  static int chunk(size_t left) { return static_cast<int>(std::min<size_t>(left, 1u << 30)); }
  void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    die(world_rank_, std::string(call) + " failed: " + std::string(text, static_cast<size_t>(len)),
        1);
  }
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, world_rank_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> init_mpi_world() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      std::fprintf(stderr, "pagoda: MPI_Init_thread failed\n");
      std::_Exit(1);
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      std::fprintf(stderr, "pagoda: this MPI does not support MPI_THREAD_SERIALIZED\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  // Failures come back as codes, so the message names the call and the rank before the abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
}

void finalize_mpi_world() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace pagoda::backend::parallel
