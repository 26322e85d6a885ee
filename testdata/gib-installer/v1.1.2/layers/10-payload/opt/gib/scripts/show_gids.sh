#!/bin/bash
#
# Lists the GIDs of the node's RDMA devices, one line each: device, port, GID index, GID, RoCE
# version and network interface. set_nccl_env.sh's NCCL_IB_GID_INDEX picks one index on every
# device; this shows which address and RoCE version that index is on eth2..eth9.
#
# tcpxogen reconstruction of scripts/show_gids.sh of the NCCL/gIB installer nccl-plugin-gib
# v1.1.2, not Google's script: Google's docs name the script, and no public Dockerfile or source
# exists. Its place in the image and what it does are tcpxogen's belief, written from the sources
# in the project's gIB facts (gib-facts.md); only the published image
# (sha256:b71627dcf88862cd0e64434dfd0224441960db58f2022f94b5f56123659c207e) can confirm them.

set -euo pipefail
shopt -s nullglob

printf '%-12s %-4s %-5s %-39s %-8s %s\n' DEV PORT INDEX GID TYPE NETDEV
for gid_file in /sys/class/infiniband/*/ports/*/gids/*; do
  # An unused entry reads as zeros or fails to read.
  gid=""
  IFS= read -r gid <"${gid_file}" 2>/dev/null || true
  if [ -z "${gid}" ] || [ "${gid}" = 0000:0000:0000:0000:0000:0000:0000:0000 ]; then
    continue
  fi
  index=${gid_file##*/}
  port_dir=${gid_file%/gids/*}
  dev_dir=${port_dir%/ports/*}
  gid_type="" netdev=""
  IFS= read -r gid_type <"${port_dir}/gid_attrs/types/${index}" 2>/dev/null || true
  IFS= read -r netdev <"${port_dir}/gid_attrs/ndevs/${index}" 2>/dev/null || true
  printf '%-12s %-4s %-5s %-39s %-8s %s\n' "${dev_dir##*/}" "${port_dir##*/}" "${index}" "${gid}" "${gid_type}" "${netdev}"
done
