// Status and Result<T> are part of the public API (include/pagoda/status.h); this header keeps
// the internal include path.
#pragma once

#include "pagoda/status.h"
