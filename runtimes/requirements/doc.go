// Package requirements owns the table of what the platform requires of the
// shipped artefacts (the torch-distributed-tcpxo runtime, the installer and
// NRI injector DaemonSets and the derived NCCL benchmark): every capability,
// device, annotation, host namespace, port, image role, env variable, mount,
// volume and resource, each with the published source that requires it and
// the file that ships it, and the check that holds rendered objects or
// committed goldens to it both ways (nothing required is missing or changed,
// nothing shipped is unexplained) through one generic walker. It does not
// build the artefacts (runtimes, derive) nor decide the fabric's env rules
// (internal/fabric); the coupling check runs it on the committed goldens.
package requirements
