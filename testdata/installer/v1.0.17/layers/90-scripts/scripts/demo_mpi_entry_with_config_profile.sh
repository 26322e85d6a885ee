#!/bin/bash
# tcpxogen reconstruction of /scripts/demo_mpi_entry_with_config_profile.sh,
# installer v1.0.17: written from the public facts (raises the open-file limit,
# sources the profile, runs the MPI build of nccl-tests); not Google's script.
set -euo pipefail
ulimit -n 1048576
export NCCL_LIB_DIR=${NCCL_LIB_DIR:-/usr/local/nvidia/lib64}
source "${NCCL_LIB_DIR}/nccl-env-profile.sh"
benchmark=$1; shift
exec "/third_party/nccl-tests-mpi/build/${benchmark}" "$@"
