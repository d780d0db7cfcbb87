// blocks.c: see blocks.h.
#include "ops/testing/blocks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

enum { MAX_WORKERS = 32 };

typedef struct blocks_job {
    int64_t count, blocks;
    op_check_block_fn fn;
    void *context;
    atomic_llong next;
} blocks_job;

static void *blocks_worker(void *raw) {
    blocks_job *job = raw;
    for (;;) {
        int64_t block = atomic_fetch_add(&job->next, 1);
        if (block >= job->blocks) return NULL;
        int64_t begin = block * OP_CHECK_BLOCK, end = begin + OP_CHECK_BLOCK < job->count ? begin + OP_CHECK_BLOCK : job->count;
        job->fn(job->context, block, begin, end);
    }
}

void op_check_for_blocks(int64_t count, op_check_block_fn fn, void *context) {
    blocks_job job = {.count = count, .blocks = op_check_block_count(count), .fn = fn, .context = context};
    atomic_init(&job.next, 0);
    long cores = job.blocks > 1 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    int workers = cores < 1 ? 1 : cores > MAX_WORKERS ? MAX_WORKERS : (int)cores;
    if (workers > job.blocks) workers = (int)job.blocks;
    pthread_t threads[MAX_WORKERS];
    bool started[MAX_WORKERS] = {false};
    for (int w = 1; w < workers; w++) started[w] = pthread_create(&threads[w], NULL, blocks_worker, &job) == 0;
    blocks_worker(&job); // this thread works too; a worker that could not start leaves its blocks to the others
    for (int w = 1; w < workers; w++)
        if (started[w]) pthread_join(threads[w], NULL);
}
