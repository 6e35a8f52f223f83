#include "backend/parallel/communicator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/parallel/mpi_communicator.h"

namespace pagoda::backend::parallel {

void LocalCommunicator::all_gather(const void* send, size_t n, void* recv) {
  if (n > 0 && send != recv) std::memmove(recv, send, n);
}

void LocalCommunicator::send(const void*, size_t, int peer, int) {
  abort(1, "send to rank " + std::to_string(peer) + " in a job of one rank");
}

void LocalCommunicator::recv(void*, size_t, int peer, int) {
  abort(1, "recv from rank " + std::to_string(peer) + " in a job of one rank");
}

std::unique_ptr<Communicator> LocalCommunicator::split(int, int) {
  return std::make_unique<LocalCommunicator>();
}

void LocalCommunicator::abort(int code, std::string_view message) {
  std::fprintf(stderr, "pagoda: %.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::_Exit(code);
}

bool launched_as_job() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && std::atoi(v) > 1) return true;
  }
  return false;
}

namespace {
std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> slot;
  return slot;
}
}  // namespace

Communicator& world() {
  auto& slot = world_slot();
  if (!slot) {
    if (launched_as_job()) {
      slot = init_mpi_world();
    } else {
      slot = std::make_unique<LocalCommunicator>();
    }
  }
  return *slot;
}

void finalize_world() {
  auto& slot = world_slot();
  if (slot && slot->size() > 1) finalize_mpi_world();
  slot.reset();
}

}  // namespace pagoda::backend::parallel
