#!/bin/bash
#
# Entry point of the NCCL/gIB diagnostic image nccl-plugin-gib-diagnostic v1.1.2
# (/scripts/container_entry.sh, the installer's path).
#
# tcpxogen reconstruction, not Google's script: no public Dockerfile or source exists. What it
# does is tcpxogen's belief, written from the sources in the project's gIB facts (gib-facts.md)
# and Google's NCCL test manifests, whose pods run
#
#   /scripts/container_entry.sh shell
#   source /usr/local/gib/scripts/set_nccl_env.sh
#   sleep infinity
#
# and then nccl-tests over MPI with sshd on port 222; only the published image
# (sha256:61c917022538e59d24f597038a8ad7087a026d60715256ae39e7f06ef20ebde0) can confirm it.
#
#   container_entry.sh shell
#
# starts sshd (init_ssh.sh) and returns, so the pod's command goes on. Anything else exits 2: the
# diagnostic image carries no payload to install (belief; the installer image installs it).

set -euo pipefail

usage() {
  echo "usage: $0 shell" >&2
  exit 2
}

[ "$#" -eq 1 ] && [ "$1" = shell ] || usage
/scripts/init_ssh.sh
echo "nccl-plugin-gib-diagnostic v1.1.2: sshd listens on port 222; source /usr/local/gib/scripts/set_nccl_env.sh, then run /usr/local/gib/scripts/run_nccl_tests.sh"
