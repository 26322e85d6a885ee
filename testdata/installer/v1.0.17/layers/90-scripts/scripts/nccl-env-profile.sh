#!/bin/bash
#
# NCCL environment profile for GPUDirect-TCPXO on A3 Mega (a3-megagpu-8g),
# NCCL plugin installer v1.0.15.
#
# tcpxogen reconstruction: written from the public facts about the installer
# image (see testdata/installer/v1.0.15/README.md). It is not Google's script;
# it exports the same variables with the same values and the same fallbacks.
#
# Source it with NCCL_LIB_DIR pointing at the installed plugin directory:
#
#   NCCL_LIB_DIR=/usr/local/nvidia/lib64 source nccl-env-profile.sh

if [ -z "${NCCL_LIB_DIR:-}" ]; then
  echo "nccl-env-profile.sh: NCCL_LIB_DIR is not set; set it to the directory the NCCL plugin was installed into (inside a workload: /usr/local/nvidia/lib64)" >&2
  # Sourced, return to the caller; executed, return fails and exit ends the script.
  return 1 2>/dev/null || exit 1
fi

# The GKE multi-network layout of an A3 Mega pod: eth0 is the default
# (host) network, eth1..eth8 are the eight GPU NICs. In a non-privileged pod
# these defaults are the right answer, and discovery below finds nothing.
host_nic=eth0
gpu_nics=eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8

# Discovery: read each NIC's PCI slot from sysfs. A NIC on PCI bus 00 is taken
# as the host NIC, a NIC behind any other bus as a GPU NIC. The result replaces
# the defaults only when it is complete (one host NIC, eight GPU NICs);
# anything else, including no sysfs or no tools, leaves the defaults alone.
tcpxo_found_host=""
tcpxo_found_gpus=""
tcpxo_found_count=0
for tcpxo_nic in $(ls /sys/class/net 2>/dev/null); do
  tcpxo_slot=$(cat "/sys/class/net/${tcpxo_nic}/device/uevent" 2>/dev/null | grep '^PCI_SLOT_NAME=' | awk -F= '{ print $2 }')
  case "${tcpxo_slot}" in
    "")
      ;; # virtual or non-PCI device
    *:00:*)
      if [ -z "${tcpxo_found_host}" ]; then
        tcpxo_found_host="${tcpxo_nic}"
      fi
      ;;
    *)
      tcpxo_found_gpus="${tcpxo_found_gpus:+${tcpxo_found_gpus},}${tcpxo_nic}"
      tcpxo_found_count=$((tcpxo_found_count + 1))
      ;;
  esac
done
if [ -n "${tcpxo_found_host}" ] && [ "${tcpxo_found_count}" -eq 8 ]; then
  host_nic="${tcpxo_found_host}"
  gpu_nics="${tcpxo_found_gpus}"
fi
unset tcpxo_nic tcpxo_slot tcpxo_found_host tcpxo_found_gpus tcpxo_found_count

export LD_LIBRARY_PATH="${NCCL_LIB_DIR}:${LD_LIBRARY_PATH}"
export NCCL_FASTRAK_IFNAME="${gpu_nics}"
export NCCL_FASTRAK_CTRL_DEV="${host_nic}"
export NCCL_SOCKET_IFNAME="${host_nic}"
export NCCL_CROSS_NIC=0
export NCCL_PROTO=Simple,LL128
export NCCL_MIN_NCHANNELS=4
export NCCL_NVLSTREE_MAX_CHUNKSIZE=131072
export NCCL_P2P_NET_CHUNKSIZE=524288
export NCCL_P2P_PCI_CHUNKSIZE=524288
export NCCL_P2P_NVL_CHUNKSIZE=1048576
export NCCL_FASTRAK_NUM_FLOWS=2
export NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL=0
export NCCL_BUFFSIZE=8388608
export NCCL_FASTRAK_USE_SNAP=1
export NCCL_FASTRAK_USE_LLCM=1
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export NCCL_NET_GDR_LEVEL=PIX
export NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING=0
export NCCL_TUNER_PLUGIN=libnccl-tuner.so
export NCCL_TUNER_CONFIG_PATH="${NCCL_LIB_DIR}/a3plus_tuner_config.textproto"
export NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE="${NCCL_LIB_DIR}/a3plus_guest_config.textproto"
export NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS=600000
export NCCL_DEBUG=WARN
export NCCL_DEBUG_SUBSYS=INIT,NET,ENV,COLL,GRAPH
