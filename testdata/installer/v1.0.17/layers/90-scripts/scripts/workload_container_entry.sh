#!/bin/bash
# tcpxogen reconstruction of /scripts/workload_container_entry.sh, installer
# v1.0.17: written from the public facts; not Google's script. Sources the
# installed profile, then runs the workload command.
set -euo pipefail
export NCCL_LIB_DIR=${NCCL_LIB_DIR:-/usr/local/nvidia/lib64}
source "${NCCL_LIB_DIR}/nccl-env-profile.sh"
exec "$@"
