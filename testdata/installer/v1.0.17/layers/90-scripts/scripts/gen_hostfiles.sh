#!/bin/bash
# tcpxogen reconstruction of /scripts/gen_hostfiles.sh, installer v1.0.17: written
# from the public facts (hostfile entries carry port=222); not Google's script.
#   gen_hostfiles.sh HOST... > hostfile
set -euo pipefail
for host in "$@"; do
  echo "${host} port=222 slots=8"
done
