#!/bin/bash
#
# Starts sshd (port 222, /etc/ssh/sshd_config) in the background for the MPI benchmark, and
# returns: container_entry.sh shell runs it before the pod's own command goes on.
#
# tcpxogen reconstruction of /scripts/init_ssh.sh of nccl-plugin-gib-diagnostic v1.1.2, not
# Google's script (the TCPXO installer has a script of this name; whether this image has one is
# not published). No public Dockerfile or source exists: what it does is tcpxogen's belief,
# written from the sources in the project's gIB facts (gib-facts.md); only the published image
# (sha256:61c917022538e59d24f597038a8ad7087a026d60715256ae39e7f06ef20ebde0) can confirm it.

set -euo pipefail
mkdir -p /run/sshd
# Without -D, sshd detaches once it listens.
/usr/sbin/sshd
