// blocks.h: the op check engine's loops over large tensors (op_check.c), run on every core: [0, count)
// in fixed blocks of OP_CHECK_BLOCK elements, each block handed to `fn` once, by whichever worker
// takes it next. A reduction keeps one partial per block and combines them in block order, so its
// result does not depend on the number of cores or on which worker ran which block. Small counts (one
// block) run on the calling thread.
#ifndef PARITY_OP_CHECK_BLOCKS_H
#define PARITY_OP_CHECK_BLOCKS_H

#include <stdint.h>

#define OP_CHECK_BLOCK ((int64_t)1 << 18)

// Number of blocks of [0, count).
static inline int64_t op_check_block_count(int64_t count) { return count <= 0 ? 0 : (count + OP_CHECK_BLOCK - 1) / OP_CHECK_BLOCK; }

// fn(context, block, begin, end) for every block of [0, count), on up to the online cores (at most 32).
typedef void (*op_check_block_fn)(void *context, int64_t block, int64_t begin, int64_t end);
void op_check_for_blocks(int64_t count, op_check_block_fn fn, void *context);

#endif
