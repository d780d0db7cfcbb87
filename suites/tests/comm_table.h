// comm_table.h: reads the table `parity bench comm` prints (nccl-tests columns: size, count, type,
// collective, time, algbw, busbw, #wrong), for the tests of the MPI and NCCL paths alike.
#ifndef PARITY_TEST_COMM_TABLE_H
#define PARITY_TEST_COMM_TABLE_H

// The data rows (lines not starting with '#' that have the 8 columns) of `collective` (NULL: every
// collective): how many, and how many of them have a non-zero #wrong.
void comm_table_count(const char *output, const char *collective, int *rows, int *wrong_rows);

#endif
