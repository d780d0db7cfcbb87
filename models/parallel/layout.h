// layout.h: a parallel layout (issue 16), the fourth axis of the matrix: how many ranks split the
// batch (data parallel, optionally fully sharded), the sequence (Ulysses) and the experts, and the
// test-only faults that prove a comparison sees a wrong reduction. Parsed once from text
// ("dp=2,sp=2,ep=2,fsdp"), then a typed value; its name is the combo id's segment ("dp2", "sp2ep2",
// "fsdp4", "fsdp2sp2ep2").
//
// Ranks: world = dp * sp, rank r = d * sp + s (d: its data shard, s: its sequence shard). Experts are
// split over ep consecutive ranks (ep divides the world; expert shard r % ep), and replicated over
// the world / ep ranks with the same shard. fsdp shards every parameter over the ranks holding the
// same copy of it (the world for dense parameters, the world / ep replicas of an expert shard).
#ifndef PARITY_LAYOUT_H
#define PARITY_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"

typedef struct parity_layout {
    int dp, sp, ep;         // >= 1 each (0 read as 1)
    bool fsdp;              // parameters and gradients sharded (ZeRO-3): all-gather before use, reduce-scatter after
    // Test-only faults (a run with one must fail its comparison, or stop with a named error):
    bool fault_wrong_group;     // the dense gradients summed over every rank but the last (VeOmni's HSDP bug)
    bool fault_skip_all_to_all; // Ulysses without its all-to-all: each rank attends only to its own sequence shard
    int fault_stall_rank;       // rank + 1 that hangs before its first collective (0: none)
    int fault_kill_rank;        // rank + 1 that dies (SIGKILL) before its first collective (0: none)
} parity_layout;

// dp * sp (1 for a zero layout).
int parity_layout_ranks(const parity_layout *layout);
// More than one rank.
bool parity_layout_is_parallel(const parity_layout *layout);
// Parses "dp=D,sp=S,ep=E,fsdp" (any order, each at most once; "fsdp=D" is "dp=D,fsdp") and the
// test-only items test_wrong_group, test_skip_all_to_all, test_stall_rank=R, test_kill_rank=R. Without dp, ep=E asks for
// E / S data-parallel copies ("ep=2" is dp2ep2: experts are cut over ranks that exist). A USAGE error
// names the item; the layout is then checked (parity_layout_check).
parity_error *parity_layout_parse(const char *text, parity_layout *out);
// ep divides the world, faults only on layouts where they mean something; a USAGE error says why.
parity_error *parity_layout_check(const parity_layout *layout);
// The combo id segment: "" for one rank, else the non-trivial axes: fsdpD or dpD, spS, epE, then
// the faults ("+wrong_group", "+skip_all_to_all", "+stall2", "+kill1") so a faulty run never shares an id.
void parity_layout_name(const parity_layout *layout, char *out, size_t size);

#endif
