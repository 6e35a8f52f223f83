// The MPI transport (Debian's OpenMPI): MPI_COMM_WORLD with errors returned, not fatal, so that
// a failed call prints which call failed on which rank before MPI_Abort ends the job.
#pragma once

#include <memory>

#include "backend/parallel/communicator.h"

namespace pagoda::backend::parallel {

// Initialises MPI (MPI_THREAD_SERIALIZED) and returns the communicator over MPI_COMM_WORLD.
// Aborts the process with a message when MPI cannot start.
std::unique_ptr<Communicator> init_mpi_world();

// MPI_Finalize (after init_mpi_world).
void finalize_mpi_world();

}  // namespace pagoda::backend::parallel
