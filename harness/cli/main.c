// main.c: placeholder entry point (replaced by the CLI).
#include <stdio.h>
int main(void) { puts("parity"); return 0; }
