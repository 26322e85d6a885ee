#!/bin/bash
#
# Entry point of the NCCL plugin installer image, installer v1.0.17.
#
# tcpxogen reconstruction: written from the public facts about the installer
# image (see testdata/installer/v1.0.17/README.md); not Google's script.
#
#   container_entry.sh install [--install-nccl]
#
# copies the plugin libraries, their configs and the env profiles into
# /var/lib/tcpxo/lib64, and with --install-nccl the NCCL core libraries too.
# The installer DaemonSet mounts the host's /home/kubernetes/bin/nvidia/lib64
# there, which workloads see as /usr/local/nvidia/lib64.

set -euo pipefail

readonly install_dir=/var/lib/tcpxo/lib64
readonly plugin_dir=/plugins
readonly script_dir=/scripts
readonly nccl_dir=/third_party/nccl-netsupport/build/lib

usage() {
  echo "usage: $0 install [--install-nccl]" >&2
  exit 2
}

[ "$#" -ge 1 ] || usage
[ "$1" = install ] || usage
shift

install_nccl=false
for arg in "$@"; do
  case "${arg}" in
    --install-nccl) install_nccl=true ;;
    *) usage ;;
  esac
done

mkdir -p "${install_dir}"
# -P keeps symlinks as symlinks (libnccl.so -> libnccl.so.2 -> libnccl.so.2.28.7).
cp -P "${plugin_dir}"/* "${install_dir}/"
# v1.0.17 adds the CoMMA profile; every file under /plugins, the CoMMA
# profiler library among them, is copied above.
cp -P "${script_dir}/nccl-env-profile.sh" "${script_dir}/nccl-env-profile-simple.sh" "${script_dir}/nccl-env-profile-comma.sh" "${install_dir}/"
if [ "${install_nccl}" = true ]; then
  cp -P "${nccl_dir}"/libnccl.so* "${install_dir}/"
fi
echo "installed the NCCL plugin$([ "${install_nccl}" = true ] && echo ' and NCCL') into ${install_dir}"
