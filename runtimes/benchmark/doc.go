// Package derive builds the NCCL benchmark runtime from the shipped one.
//
// One derivation serves every fabric; what differs is a Fabric value (TCPXO,
// GIB): the sidecar the node pod must carry (TCPXO's tcpxo-daemon), whether
// the node container must be the pod's first (gIB: GKE gives RDMA device
// files only to the first non-init container), the rank prelude, the
// collectives (TCPXO all_reduce; gIB all_gather, Google's test and its
// published busbw, or all_reduce), the largest size (16G; gIB 8G as Google's
// test runs) and the image it runs from by default (ParamsFor: TCPXO's
// installer image; GIBParamsFor: gIB's diagnostic image, its MPI build of
// the collective and the port its sshd_config sets). The gIB runtime ships
// one per machine type, and so does its benchmark
// (nccl-tests-rdma-<machine type>).
//
// The benchmark's bandwidth number is evidence about what ships only if the
// pods it measures carry exactly the wiring users get from
// torch-distributed-tcpxo. So the benchmark is never built from the wiring
// builders (that would measure what the builders produce today, not what was
// deployed): Derive copies the node pod template out of the shipped
// ClusterTrainingRuntime object, deployed or rendered, and WiringEqual is the
// structural check that the copy is faithful (the coupling check runs it).
//
// # What is copied and what the benchmark owns
//
// The shipped runtime is torch; all_reduce_perf needs an MPI bootstrap. The
// derived runtime is therefore a namespaced MPI TrainingRuntime (OpenMPI, as
// the trainer's MPI plugin implements) with two replicated jobs:
//
//   - node: the shipped node pod template, deep-copied whole (annotations,
//     the tcpxo-daemon sidecar and any other init containers, volumes,
//     nodeSelector, tolerations, labels, and the node container's env,
//     mounts, securityContext and resources). The benchmark replaces only
//     the node container's image, command and args, and its probes, ports,
//     lifecycle hooks and working directory (see clearOwned): it runs
//     sshd instead of torchrun. This job is the trainer step, so
//     mlPolicy.numNodes sizes it.
//   - launcher: the benchmark's own, never copied (torch has none, and a
//     launcher copied from anywhere would carry wiring it must not have). It
//     runs mpirun once, requests no GPUs, carries no multi-network or NRI
//     annotation, and starts only after every node pod is Ready (JobSet
//     dependsOn), so mpirun never races the daemon's ~30 s initialisation.
//     The JobSet succeeds when the launcher does: sshd never exits.
//
// One rank per GPU: mlPolicy.mpi.numProcPerNode is the shipped node
// container's nvidia.com/gpu limit, which the MPI plugin writes into the
// hostfile as slots=N, and mpirun is given no -np, so it starts one rank per
// slot across however many nodes the TrainJob asks for.
//
// # The rank environment
//
// mpirun starts ranks through sshd, whose sessions do not inherit the pod's
// container env, so without forwarding every rank would run with NCCL's
// defaults, over TCP, while the node pod's spec looks perfectly wired. The
// launcher therefore carries the shipped worker env (copied in order, so
// $(VAR) references expand as in the worker) and forwards every NCCL_*,
// CUDA_* and LD_LIBRARY_PATH variable to the ranks with -x NAME, sorted.
// WiringEqual checks the forwarded names and values against the shipped
// worker env. A worker env the launcher cannot reproduce is refused: envFrom
// (names unknowable) or a fieldRef/resourceFieldRef value (it would resolve
// in the launcher pod, not the worker).
//
// Each TCPXO rank runs `/bin/sh -c RankPrelude all_reduce_perf ...`: it
// raises its open-files limit to 1048576 first, as Google's MPI entry does
// in every rank, and says so on stderr when the node's hard limit is lower.
// A gIB rank runs the perf binary directly (see GIB).
//
// # The launcher command
//
//	/bin/sh -c 'set -eu; umask 077; mkdir -p /tmp/mpi-ssh; cp /root/.ssh/id_rsa /tmp/mpi-ssh/id_rsa; exec "$0" "$@"' \
//	  mpirun --allow-run-as-root --bind-to none \
//	    --mca pml ob1 --mca btl tcp,self \
//	    --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
//	    --mca plm_rsh_args '-o ConnectionAttempts=10 -i /tmp/mpi-ssh/id_rsa -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null' \
//	    -x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x NCCL_... \
//	    /third_party/nccl-tests/build/all_reduce_perf -b 1K -e 16G -f 2 -g 1
//
// MPI only bootstraps; NCCL moves the data. MPI's own traffic (the ob1 PML
// over the tcp BTL, and the out-of-band channel between mpirun and the
// per-node daemons) is pinned to eth0: the launcher pod has no GPU NICs, so
// an address on eth1..eth8 offered by a node is unreachable from it and
// mpirun would hang. ob1 is forced because a UCX PML, the default in many
// OpenMPI builds, ignores the BTL interface list.
//
// The shell prelude works around trainer v2.2.0's MPI plugin, which mounts
// the SSH key pair with the Secret volume default mode 0644: OpenSSH ignores
// a private key that its owner's other users can read, and the launcher runs
// as root, the key's owner. The key is copied to a 0600 file and handed to
// ssh with -i. plm_rsh_args on the command line replaces the plugin's
// OMPI_MCA_plm_rsh_args, so the plugin's value (the trainer constant) is
// repeated first. Host keys are not checked: every node pod is new, its
// address is the JobSet's headless-service name, and the launcher has no
// known_hosts to check against.
//
// # The node command
//
//	/bin/sh -c 'set -eu; mkdir -p /run/sshd; ssh-keygen -A; exec "$0" "$@"' /usr/sbin/sshd -De -o StrictModes=no
//
// sshd in the foreground, logging to stderr. The prelude creates the
// privilege-separation directory and any missing host keys, which images
// that install openssh-server without starting it lack. StrictModes is off
// because the key Secret's mount point is group/world-writable, which sshd
// would otherwise refuse for authorized_keys. A TCP readiness probe on port
// 22 makes "Ready" mean "sshd accepts connections", which the launcher's
// dependsOn waits for.
//
// # Image requirements
//
// Params.Image has no default: the BOM pins no nccl-tests image yet, and a
// guessed image is exactly the silent substitute this project refuses. The
// image must provide, on the default PATH of an ssh session, OpenMPI 4.x
// mpirun and orted (the MPI plugin writes OpenMPI 4 MCA names), openssh
// client and server, /bin/sh, and the collective's perf binary built with MPI=1 at
// Params.Perf. Ranks get LD_LIBRARY_PATH from the shipped worker
// env (the installer's library directory), which replaces the image's, so
// the image must find libmpi without LD_LIBRARY_PATH (RPATH or ld.so.conf),
// as the shipped torch worker must find its own libraries.
//
// # Limits
//
// The derived runtime runs sshd and ranks as root (sshAuthMountPath
// /root/.ssh); a shipped node pod that forbids root is refused. The launcher
// requests no GPUs and tolerates nothing, so it schedules on a CPU node. A
// TrainJob that sets spec.trainer.image, command, args or env changes the
// node (sshd) container, not the launcher, because the node job is the
// trainer step; the validator runs the benchmark from a bare TrainJob.
package benchmark
