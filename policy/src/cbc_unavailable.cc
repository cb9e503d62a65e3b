// Built instead of cbc_solver.cc when CBC (coinor-libcbc-dev) is absent: no CBC backend.
#include "gshare/policy/exact.h"

namespace gshare::policy {

std::unique_ptr<ExactSolver> MakeCbcSolver() { return nullptr; }

}  // namespace gshare::policy
