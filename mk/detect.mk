# detect.mk: finds the optional toolchains and libraries and prints what was found, once per build.
# HDF5 on Debian lives under hdf5/serial; on Ubuntu hosts the same. pkg-config knows it as hdf5.
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5 2>/dev/null || echo -I/usr/include/hdf5/serial)
HDF5_LIBS := $(shell pkg-config --libs hdf5 2>/dev/null || echo -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5)
# Open MPI (the collectives of ops/core/comm_mpi.c); pkg-config knows it as ompi-c; Debian's paths
# before the packages are installed (mk/deps.mk runs after this file is read).
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null || echo -I/usr/lib/x86_64-linux-gnu/openmpi/include -I/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi)
MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null || echo -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi)

found = $(if $(1),found,missing)
have_header = $(shell test -f $(1) && echo yes)

.PHONY: print-config
print-config:
	@echo "parity build configuration:"
	@echo "  CUDA       $(if $(filter 1,$(WITH_CUDA)),on ($(NVCC), $(CUDA_ARCH)),off)"
	@echo "  cuBLAS     $(call found,$(call have_header,$(CUDA_HOME)/include/cublas_v2.h))"
	@echo "  NCCL       $(call found,$(or $(call have_header,$(CUDA_HOME)/include/nccl.h),$(call have_header,/usr/include/nccl.h)))"
	@echo "  cuDNN      $(call found,$(or $(call have_header,$(CUDA_HOME)/include/cudnn.h),$(call have_header,/usr/include/cudnn.h),$(call have_header,/usr/include/x86_64-linux-gnu/cudnn.h)))"
	@echo "  MPI        $(call found,$(shell command -v mpicc 2>/dev/null))"
	@echo "  HDF5       $(call found,$(or $(call have_header,/usr/include/hdf5/serial/hdf5.h),$(call have_header,/usr/include/hdf5.h)))"
	@echo "  OpenBLAS   $(call found,$(or $(call have_header,/usr/include/x86_64-linux-gnu/cblas.h),$(call have_header,/usr/include/cblas.h),$(call have_header,/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h)))"
	@echo "  Criterion  $(call found,$(call have_header,/usr/include/criterion/criterion.h))"
