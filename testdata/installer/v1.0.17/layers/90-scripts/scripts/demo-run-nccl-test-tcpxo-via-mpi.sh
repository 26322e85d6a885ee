#!/bin/bash
# tcpxogen reconstruction of /scripts/demo-run-nccl-test-tcpxo-via-mpi.sh,
# installer v1.0.17: written from the public facts (mpirun over the hostfile,
# ranks pinned with taskset -c 32-63); not Google's script.
#   demo-run-nccl-test-tcpxo-via-mpi.sh HOSTFILE BENCHMARK [ARGS...]
set -euo pipefail
hostfile=$1; benchmark=$2; shift 2
exec mpirun --allow-run-as-root --hostfile "${hostfile}" \
  taskset -c 32-63 /scripts/demo_mpi_entry_with_config_profile.sh "${benchmark}" "$@"
