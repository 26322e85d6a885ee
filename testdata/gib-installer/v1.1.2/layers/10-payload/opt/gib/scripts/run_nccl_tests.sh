#!/bin/bash
#
# Runs an nccl-tests benchmark over MPI across the given hosts, one rank per GPU, from the
# NCCL/gIB diagnostic image (nccl-plugin-gib-diagnostic, whose sshd listens on port 222 once
# `/scripts/container_entry.sh shell` ran), with set_nccl_env.sh's settings. Google's docs:
#
#   /usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G host1 host2
#
# tcpxogen reconstruction of scripts/run_nccl_tests.sh of the NCCL/gIB installer nccl-plugin-gib
# v1.1.2, not Google's script: Google's docs name the script and show the invocation above, and no
# public Dockerfile or source exists. Its place in the image, its options beyond -t, -b and -e,
# and how it starts MPI are tcpxogen's belief, written from the sources in the project's gIB facts
# (gib-facts.md); only the published image
# (sha256:b71627dcf88862cd0e64434dfd0224441960db58f2022f94b5f56123659c207e) can confirm them.

set -euo pipefail

usage() {
  echo "usage: $0 [-t TEST] [-b MIN_BYTES] [-e MAX_BYTES] [-g GPUS_PER_HOST] HOST..." >&2
  exit 2
}

test_name=all_gather
min_bytes=1K
max_bytes=8G
gpus_per_host=8
while getopts t:b:e:g: opt; do
  case "${opt}" in
    t) test_name=${OPTARG} ;;
    b) min_bytes=${OPTARG} ;;
    e) max_bytes=${OPTARG} ;;
    g) gpus_per_host=${OPTARG} ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ "$#" -ge 1 ] || usage

source /usr/local/gib/scripts/set_nccl_env.sh

hosts=""
for host in "$@"; do
  hosts="${hosts:+${hosts},}${host}:${gpus_per_host}"
done
# Every rank gets the NCCL settings and the library path of this shell.
env_args=()
for name in $(compgen -e); do
  case "${name}" in
    NCCL_* | LD_LIBRARY_PATH) env_args+=(-x "${name}") ;;
  esac
done

exec mpirun --allow-run-as-root --mca plm_rsh_args "-p 222" \
  -np $(($# * gpus_per_host)) -H "${hosts}" "${env_args[@]}" \
  "/third_party/nccl-tests-mpi/build/${test_name}_perf" -b "${min_bytes}" -e "${max_bytes}" -f 2 -g 1
