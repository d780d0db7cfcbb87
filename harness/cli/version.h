// version.h: the version `parity --version` prints. Bumped by hand with each tagged release.
#ifndef PARITY_CLI_VERSION_H
#define PARITY_CLI_VERSION_H

#define PARITY_VERSION "0.1.0"

#endif
