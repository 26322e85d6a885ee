#!/bin/bash
# tcpxogen reconstruction of /scripts/init_ssh.sh, installer v1.0.17: written from
# the public facts (sshd on port 222, root login by the key baked into
# /root/.ssh); not Google's script. Starts sshd for the MPI benchmark.
set -euo pipefail
mkdir -p /run/sshd
exec /usr/sbin/sshd -D
