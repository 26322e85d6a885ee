#!/bin/bash
#
# NCCL environment for GPUDirect-RDMA with NCCL/gIB on A3 Ultra (a3-ultragpu-8g, H200) and A4
# (a4-highgpu-8g, B200), NCCL/gIB installer nccl-plugin-gib v1.1.2: /opt/gib/scripts/ in the
# image, /home/kubernetes/bin/gib/scripts/ on the host once installed, and
# /usr/local/gib/scripts/set_nccl_env.sh in a workload pod.
#
# tcpxogen reconstruction, not Google's script: no public Dockerfile or source exists for this
# image. Its place in the image, the machine detection and every value below are tcpxogen's
# belief, written from the sources in the project's gIB facts (gib-facts.md): the values are
# those a Google-authored 2024 A3 Ultra benchmark script in GoogleCloudPlatform/cluster-toolkit
# lists, the tuner file names those of Google's samples. Only the published image
# (sha256:b71627dcf88862cd0e64434dfd0224441960db58f2022f94b5f56123659c207e) can confirm them,
# and Google says the variables change between releases.
#
# Source it in the workload (bash):
#
#   source /usr/local/gib/scripts/set_nccl_env.sh
#
# It does not set LD_LIBRARY_PATH: Google's manifests set LD_LIBRARY_PATH=/usr/local/nvidia/lib64
# in the pod, where the installer put NCCL and the plugin. Whether the real script also adds
# /usr/local/gib/lib64 is not published; only the image can settle it.
#
# It runs in tcpxogen's profile sandbox: one machine probe (nvidia-smi), no other command, no
# file read or written, nothing sourced.

# The machine: the tuner configuration differs between A3 Ultra and A4 (Google's samples name
# one file each).
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=0)
case "${gpu}" in
  *H200*)
    # A3 Ultra (a3-ultragpu-8g)
    tuner_config=tuner_config_a3u.txtpb
    ;;
  *B200*)
    # A4 (a4-highgpu-8g)
    tuner_config=tuner_config_a4.txtpb
    ;;
  *)
    echo "set_nccl_env.sh: GPU 0 is \"${gpu}\", neither an H200 (A3 Ultra) nor a B200 (A4): no NCCL/gIB settings for this machine" >&2
    return 1
    ;;
esac

export NCCL_NET=gIB
export NCCL_CROSS_NIC=0
export NCCL_NET_GDR_LEVEL=PIX
export NCCL_P2P_NET_CHUNKSIZE=131072
export NCCL_P2P_PCI_CHUNKSIZE=131072
export NCCL_P2P_NVL_CHUNKSIZE=524288
export NCCL_NVLS_CHUNKSIZE=524288
export NCCL_IB_GID_INDEX=3
export NCCL_IB_ADAPTIVE_ROUTING=1
export NCCL_IB_QPS_PER_CONNECTION=4
export NCCL_IB_TC=52
export NCCL_IB_FIFO_TC=84
export NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE=/usr/local/gib/configs/guest_config.txtpb
export NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/${tuner_config}
