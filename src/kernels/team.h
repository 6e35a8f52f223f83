// Kernel threading: one OpenMP parallel region for a whole forward pass.
//
// Every op in ops.h and attention.h splits its work across the kernel threads (isa.h
// num_threads()). Called on its own, an op opens a parallel region for it and returns when the
// work is done. Called inside run_in_team, it runs on that team instead: each of the team's
// threads makes the same op calls, in the same order, with the same arguments (SPMD, as ggml's
// graph threads do), each does its share, and one fork/join serves the whole forward pass.
//
// Inside a team the threads synchronise lazily. An op that every thread works on begins with a
// barrier only if something was written since the last one; an op too small to be worth
// splitting (a norm, an add or a rope at decode sizes) runs on the team's first thread alone,
// after a barrier only if the other threads wrote since the last one. Every thread makes the same
// calls, so every thread tracks the same state and they agree on every barrier. The first thread
// is the one that called run_in_team: it keeps the small ops' results in its cache, and it
// converts a decode matmul's one activation row while the others wait at the barrier.
//
// The caller's own code between ops runs on every thread. What it writes for a later op to read
// goes through team_first (the first thread writes it; any op after sees it); what it reads from
// an op's results needs team_sync first (after which every thread sees everything written so far).
#pragma once

#include <functional>

namespace pagoda::kernels {

// Runs body on each thread of one parallel region of num_threads() threads, as a team.
// precondition: not called inside a team (inside another parallel region the team has one
// thread). body must not throw: an exception cannot leave a parallel region (the other threads
// wait for the thrower at the next barrier), so one ends the process, as an allocation failure
// does there. Allocate what may fail before the call, as the decoder reserves its scratch.
void run_in_team(const std::function<void()>& body);

// True on a thread running run_in_team's body.
bool in_team();

// Runs fn on the team's first thread, after the barrier its inputs need; the other threads go on
// (an op that reads what fn wrote waits for it). Outside a team: runs fn.
void team_first(const std::function<void()>& fn);

// After this, every thread of the team sees every write made so far by any of them (a barrier,
// or nothing when nothing was written since the last one). Outside a team: nothing.
void team_sync();

}  // namespace pagoda::kernels
