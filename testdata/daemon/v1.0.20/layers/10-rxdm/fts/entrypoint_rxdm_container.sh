#!/bin/bash
# tcpxogen reconstruction of /fts/entrypoint_rxdm_container.sh, tcpxo-daemon
# v1.0.20: written from the public facts, not Google's script. As in the
# published image it carries no exec bit (mode 0644): the image's entrypoint
# runs it through bash, and so must any pod command that replaces it.
#
# Starts the RxDM daemon with the flags it was given (--num_hops=2; --num_nics
# is retired since v1.0.20: accepted, no effect). When HEALTH_CHECK_LOG_FILE
# is set, the daemon writes it once initialised, which a startup probe reads.
set -euo pipefail
exec /fts/tcpgpudmarxd "$@"
