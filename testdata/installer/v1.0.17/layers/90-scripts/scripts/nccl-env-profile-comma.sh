#!/bin/bash
#
# NCCL environment profile with the CoMMA profiler, NCCL plugin installer
# v1.0.17.
#
# tcpxogen reconstruction: written from the public facts about the installer
# image (see testdata/installer/v1.0.17/README.md); not Google's script. The
# facts record this profile as the default one with four differences: the
# guest config checker reads a3plus_guest_config_comma.textproto, and it
# exports NCCL_NVLS_ENABLE=1, NCCL_PROFILER_PLUGIN=comma and
# NCCL_TELEMETRY_MODE=4. So it sources the default profile beside it and
# applies them.
#
#   NCCL_LIB_DIR=/usr/local/nvidia/lib64 source nccl-env-profile-comma.sh

here="$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=nccl-env-profile.sh
. "${here}/nccl-env-profile.sh" || return 1 2>/dev/null || exit 1

export NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE="${NCCL_LIB_DIR}/a3plus_guest_config_comma.textproto"
export NCCL_NVLS_ENABLE=1
export NCCL_PROFILER_PLUGIN=comma
export NCCL_TELEMETRY_MODE=4
