// Package runtimes builds what tcpxogen ships as typed Kubernetes objects:
// the torch-distributed-tcpxo ClusterTrainingRuntime that carries the full
// GPUDirect-TCPXO wiring, and the installer-side components (the NCCL plugin
// installer and the NRI device injector DaemonSets). Every pinned value comes
// from the generated constants (generated/tcpxo) and the bill of materials;
// nothing here is a hand-typed image or env literal.
//
// The golden manifests next to this file are what ships; `go generate ./...`
// re-renders them and the goldie tests fail when they are stale.
package runtimes
