#!/bin/sh
#
# Entry point of the NCCL/gIB installer image nccl-plugin-gib v1.1.2 (/scripts/container_entry.sh).
#
# tcpxogen reconstruction, not Google's script: no public Dockerfile or source exists. What it
# does, where the payload sits before it copies it (/opt/gib here) and what `shell` does are
# tcpxogen's belief, written from the sources in the project's gIB facts (gib-facts.md) and
# Google's manifests; only the published image
# (sha256:b71627dcf88862cd0e64434dfd0224441960db58f2022f94b5f56123659c207e) can confirm them.
# POSIX sh: the base is Alpine, which has no bash (Google's installer DaemonSet runs /bin/sh too).
#
#   container_entry.sh install [--install-nccl]
#
# copies the payload (/opt/gib/.: lib64/, scripts/, configs/) into /var/lib/gib, the NCCL core
# libraries (lib64/libnccl.so*) only with --install-nccl. Google's installer DaemonSet then copies
# /var/lib/gib/lib64/. to the host's /home/kubernetes/bin/nvidia/lib64 and /var/lib/gib/. to
# /home/kubernetes/bin/gib, which workloads mount at /usr/local/gib.
#
#   container_entry.sh shell
#
# prints what it is and does nothing else. Anything else exits 2.

set -eu

readonly payload_dir=/opt/gib
readonly install_dir=/var/lib/gib

usage() {
  echo "usage: $0 install [--install-nccl] | shell" >&2
  exit 2
}

[ "$#" -ge 1 ] || usage
action=$1
shift

case "${action}" in
  install)
    install_nccl=false
    for arg in "$@"; do
      case "${arg}" in
        --install-nccl) install_nccl=true ;;
        *) usage ;;
      esac
    done
    mkdir -p "${install_dir}/lib64"
    cp -R "${payload_dir}/scripts" "${payload_dir}/configs" "${install_dir}/"
    for lib in "${payload_dir}"/lib64/*; do
      case "${lib##*/}" in
        libnccl.so*) ;; # the NCCL core: only with --install-nccl
        *) cp -P "${lib}" "${install_dir}/lib64/" ;;
      esac
    done
    if [ "${install_nccl}" = true ]; then
      # -P keeps the symlinks: libnccl.so -> libnccl.so.2 -> libnccl.so.2.30.4.
      cp -P "${payload_dir}"/lib64/libnccl.so* "${install_dir}/lib64/"
      echo "installed the NCCL/gIB plugin and NCCL into ${install_dir}"
    else
      echo "installed the NCCL/gIB plugin into ${install_dir}"
    fi
    ;;
  shell)
    [ "$#" -eq 0 ] || usage
    echo "NCCL/gIB installer nccl-plugin-gib v1.1.2: nothing to set up; run '$0 install [--install-nccl]' to install the plugin"
    ;;
  *)
    usage
    ;;
esac
