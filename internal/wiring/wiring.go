// Package wiring is the model of a runtime's fabric wiring and the one
// differ over it: what of a pod template must reach the training pods for
// the fabric to be used (where the pods are placed included), and how a
// realized or derived pod differs from the runtime's. It is a leaf, so the realization proof and the benchmark
// derivation can both use it and one another.
package wiring

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/internal/structdiff"
)

// Wiring is the part of a pod template that carries a runtime's fabric
// wiring: what must reach the training pods for GPUDirect-TCPXO to be used,
// and whose silent loss makes NCCL fall back to TCP without any error.
type Wiring struct {
	// Annotations of the pod template (multi-network interfaces, NRI devices).
	Annotations map[string]string
	// InitContainers, native sidecars (the tcpxo-daemon) included.
	InitContainers []corev1.Container
	// Volumes of the pod.
	Volumes []corev1.Volume
	// HasNode says whether the node container exists; the Node* fields are
	// empty when it does not.
	HasNode bool
	// NodeEnv, NodeMounts, NodeCaps (capabilities added) and NodeResources
	// describe the training container.
	NodeEnv       []corev1.EnvVar
	NodeMounts    []corev1.VolumeMount
	NodeCaps      []corev1.Capability
	NodeResources corev1.ResourceRequirements

	// NodeSelector and NodeAffinity (the terms of the required node
	// affinity: alternatives, each requiring all of its requirements) are
	// the pod's placement: they keep the pods on the machines that have
	// the fabric's NICs.
	NodeSelector map[string]string
	NodeAffinity []corev1.NodeSelectorTerm
	// Containers names the pod's containers in order and NodeIndex is the
	// node container's position among them: GKE gives a pod's RDMA device
	// files only to its first one.
	Containers []string
	NodeIndex  int
}

// Of extracts the wiring of a pod template whose training container
// is named nodeContainer (the trainer's is "node"). A nil template yields a
// zero Wiring. The result shares nothing with podSpec.
func Of(podSpec *corev1.PodTemplateSpec, nodeContainer string) Wiring {
	if podSpec == nil {
		return Wiring{}
	}
	p := podSpec.DeepCopy()
	w := Wiring{
		Annotations:    p.Annotations,
		InitContainers: p.Spec.InitContainers,
		Volumes:        p.Spec.Volumes,
		NodeSelector:   p.Spec.NodeSelector,
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		w.NodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	for i := range p.Spec.Containers {
		w.Containers = append(w.Containers, p.Spec.Containers[i].Name)
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.Name != nodeContainer {
			continue
		}
		w.HasNode = true
		w.NodeIndex = i
		w.NodeEnv = c.Env
		w.NodeMounts = c.VolumeMounts
		w.NodeCaps = addedCaps(c)
		w.NodeResources = c.Resources
		break
	}
	return w
}

// RuntimePodTemplate returns the pod template of the replicated job named
// rjob in a *trainer.ClusterTrainingRuntime or *trainer.TrainingRuntime.
func RuntimePodTemplate(runtime client.Object, rjob string) (*corev1.PodTemplateSpec, error) {
	var spec *trainer.JobSetTemplateSpec
	switch rt := runtime.(type) {
	case *trainer.ClusterTrainingRuntime:
		if rt != nil {
			spec = &rt.Spec.Template
		}
	case *trainer.TrainingRuntime:
		if rt != nil {
			spec = &rt.Spec.Template
		}
	default:
		return nil, fmt.Errorf("runtime must be a *ClusterTrainingRuntime or *TrainingRuntime, got %T", runtime)
	}
	if spec == nil {
		return nil, fmt.Errorf("runtime is nil")
	}
	for i := range spec.Spec.ReplicatedJobs {
		if spec.Spec.ReplicatedJobs[i].Name == rjob {
			return &spec.Spec.ReplicatedJobs[i].Template.Spec.Template, nil
		}
	}
	return nil, fmt.Errorf("runtime %s has no replicated job %q", runtime.GetName(), rjob)
}

// JobSetPodTemplate returns the pod template of the replicated job named
// rjob in a JobSet.
func JobSetPodTemplate(js *jobsetv1alpha2.JobSet, rjob string) (*corev1.PodTemplateSpec, error) {
	if js == nil {
		return nil, fmt.Errorf("JobSet is nil")
	}
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == rjob {
			return &js.Spec.ReplicatedJobs[i].Template.Spec.Template, nil
		}
	}
	return nil, fmt.Errorf("JobSet %s has no replicated job %q", js.Name, rjob)
}

// Change is one difference between a runtime's wiring and the realized one.
// What is one of the Change* constants; Path names the element ("env
// NCCL_DEBUG", "limits nvidia.com/gpu", "initContainer tcpxo-daemon image");
// From and To are the values before and after ("" for absent).
type Change struct {
	What string `json:"what"`
	Path string `json:"path"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

func (c Change) String() string {
	s := c.What + ": " + c.Path
	if c.From != "" || c.To != "" {
		s += fmt.Sprintf(" (%s -> %s)", orNone(c.From), orNone(c.To))
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// The closed vocabulary of Change.What. A "lost" element was in the runtime
// and is not in the realized pod; "changed" and "overridden" are present
// with another value (overridden is reserved for env, where the TrainJob
// deliberately wins); "added" was not in the runtime.
const (
	AnnotationLost    = "annotation lost"
	AnnotationChanged = "annotation changed"
	AnnotationAdded   = "annotation added"

	InitContainerLost    = "init container lost"
	InitContainerChanged = "init container changed"
	InitContainerAdded   = "init container added"

	VolumeLost    = "volume lost"
	VolumeChanged = "volume changed"
	VolumeAdded   = "volume added"

	// A node selector entry is keyed by label; a node affinity change
	// names its term ("nodeAffinity term 0") and, for a requirement of a
	// term both sides have, the requirement's key ("nodeAffinity term 0
	// node.kubernetes.io/instance-type"; "field metadata.name" for
	// matchFields). An added or lost term is a whole alternative.
	NodeSelectorLost    = "node selector lost"
	NodeSelectorChanged = "node selector changed"
	NodeSelectorAdded   = "node selector added"

	NodeAffinityLost    = "node affinity lost"
	NodeAffinityChanged = "node affinity changed"
	NodeAffinityAdded   = "node affinity added"

	NodeContainerLost = "node container lost"
	// NodeContainerMoved: the node container's position among the pod's
	// containers differs; From and To list the containers in order.
	NodeContainerMoved = "node container moved"

	EnvLost       = "env lost"
	EnvOverridden = "env overridden"
	EnvAdded      = "env added"
	// EnvReordered: the names both sides set come in another order; Path
	// names the first that moved, From and To list the orders from there.
	EnvReordered = "env reordered"

	MountLost    = "mount lost"
	MountChanged = "mount changed"
	MountAdded   = "mount added"

	CapabilityLost  = "capability lost"
	CapabilityAdded = "capability added"

	ResourceLost    = "resource lost"
	ResourceChanged = "resource changed"
	ResourceAdded   = "resource added"
)

// IsAddition reports whether a change only adds to the runtime's wiring.
func (c Change) IsAddition() bool { return strings.HasSuffix(c.What, " added") }

// Diff reports how realized differs from runtime, in a deterministic order:
// annotations, init containers (in the runtime's order, then additions),
// volumes, the node selector, the required node affinity (term by term),
// then the node container's position, env, mounts, capabilities and
// resources; within each group, losses and changes come before additions
// and each is sorted by name.
func Diff(runtime, realized Wiring) []Change {
	var out []Change
	out = append(out, diffStrings("annotation", AnnotationLost, AnnotationChanged, AnnotationAdded, runtime.Annotations, realized.Annotations)...)
	out = append(out, diffInitContainers(runtime.InitContainers, realized.InitContainers)...)
	out = append(out, diffVolumes(runtime.Volumes, realized.Volumes)...)
	out = append(out, diffStrings("nodeSelector", NodeSelectorLost, NodeSelectorChanged, NodeSelectorAdded, runtime.NodeSelector, realized.NodeSelector)...)
	out = append(out, diffAffinity(runtime.NodeAffinity, realized.NodeAffinity)...)
	if runtime.HasNode && !realized.HasNode {
		return append(out, Change{What: NodeContainerLost, Path: "container node"})
	}
	if runtime.HasNode && runtime.NodeIndex != realized.NodeIndex {
		out = append(out, Change{What: NodeContainerMoved, Path: "container node position", From: strings.Join(runtime.Containers, ","), To: strings.Join(realized.Containers, ",")})
	}
	out = append(out, diffEnv("", runtime.NodeEnv, realized.NodeEnv)...)
	out = append(out, diffMounts("", runtime.NodeMounts, realized.NodeMounts)...)
	out = append(out, diffCaps("", runtime.NodeCaps, realized.NodeCaps)...)
	out = append(out, diffResources("", runtime.NodeResources, realized.NodeResources)...)
	return out
}

// NodeFirst reports whether the node container is the pod's first
// container.
func (w Wiring) NodeFirst() bool { return w.HasNode && w.NodeIndex == 0 }

// diffAffinity compares the required node affinity term by term: a term
// is an alternative (the scheduler needs one to match), so a term lost or
// added is reported whole; within a term both sides have, requirements are
// keyed by what they select on and compared by their operator and values.
func diffAffinity(from, to []corev1.NodeSelectorTerm) []Change {
	var out []Change
	for i := range max(len(from), len(to)) {
		path := fmt.Sprintf("nodeAffinity term %d", i)
		switch {
		case i >= len(to):
			out = append(out, Change{What: NodeAffinityLost, Path: path, From: termSummary(&from[i])})
		case i >= len(from):
			out = append(out, Change{What: NodeAffinityAdded, Path: path, To: termSummary(&to[i])})
		default:
			out = append(out, diffStrings(path, NodeAffinityLost, NodeAffinityChanged, NodeAffinityAdded, requirements(&from[i]), requirements(&to[i]))...)
		}
	}
	return out
}

// requirements maps a term's requirements by what they select on (a
// label key, or "field " and a field's); several on one key are one
// element, their summaries joined in order.
func requirements(t *corev1.NodeSelectorTerm) map[string]string {
	m := map[string]string{}
	add := func(key string, r *corev1.NodeSelectorRequirement) {
		s := string(r.Operator)
		if len(r.Values) > 0 {
			s += " " + strings.Join(r.Values, ",")
		}
		if m[key] != "" {
			s = m[key] + "; " + s
		}
		m[key] = s
	}
	for i := range t.MatchExpressions {
		add(t.MatchExpressions[i].Key, &t.MatchExpressions[i])
	}
	for i := range t.MatchFields {
		add("field "+t.MatchFields[i].Key, &t.MatchFields[i])
	}
	return m
}

// termSummary shows a whole term: its requirements sorted by key.
func termSummary(t *corev1.NodeSelectorTerm) string {
	m := requirements(t)
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+m[k])
	}
	if len(parts) == 0 {
		return "(no requirement)"
	}
	return strings.Join(parts, " and ")
}

// diffKeyed is the one keyed comparison behind every kind of wiring
// element: elements are matched by key, compared with same and shown with
// show; losses and changes come first, then additions, each sorted by key.
func diffKeyed[V any](kind, lost, changed, added string, from, to map[string]V, same func(a, b V) bool, show func(V) string) []Change {
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(from)) {
		v, ok := to[k]
		switch {
		case !ok:
			out = append(out, Change{What: lost, Path: kind + " " + k, From: show(from[k])})
		case !same(from[k], v):
			out = append(out, Change{What: changed, Path: kind + " " + k, From: show(from[k]), To: show(v)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(to)) {
		if _, ok := from[k]; !ok {
			out = append(out, Change{What: added, Path: kind + " " + k, To: show(to[k])})
		}
	}
	return out
}

// diffStrings is diffKeyed for elements summarised as one string each.
func diffStrings(kind, lost, changed, added string, from, to map[string]string) []Change {
	return diffKeyed(kind, lost, changed, added, from, to, func(a, b string) bool { return a == b }, func(s string) string { return s })
}

// keyed maps a list's elements by key to their summary; the last of a key
// wins, as in Kubernetes.
func keyed[E, V any](list []E, key func(*E) string, summary func(*E) V) map[string]V {
	m := make(map[string]V, len(list))
	for i := range list {
		m[key(&list[i])] = summary(&list[i])
	}
	return m
}

func diffInitContainers(from, to []corev1.Container) []Change {
	toByName := map[string]*corev1.Container{}
	for i := range to {
		toByName[to[i].Name] = &to[i]
	}
	fromNames := map[string]bool{}
	var out []Change
	for i := range from {
		a := &from[i]
		fromNames[a.Name] = true
		path := "initContainer " + a.Name
		b, ok := toByName[a.Name]
		if !ok {
			out = append(out, Change{What: InitContainerLost, Path: path, From: a.Image})
			continue
		}
		out = append(out, diffContainer(path, a, b)...)
	}
	for i := range to {
		if !fromNames[to[i].Name] {
			out = append(out, Change{What: InitContainerAdded, Path: "initContainer " + to[i].Name, To: to[i].Image})
		}
	}
	return out
}

// diffContainer details how a sidecar changed: the fields that make up its
// wiring each get their own Change; anything else that differs is reported
// once, so no difference goes unreported.
func diffContainer(path string, a, b *corev1.Container) []Change {
	var out []Change
	field := func(name, x, y string) {
		if x != y {
			out = append(out, Change{What: InitContainerChanged, Path: path + " " + name, From: x, To: y})
		}
	}
	field("image", a.Image, b.Image)
	field("command", jsonString(a.Command), jsonString(b.Command))
	field("args", jsonString(a.Args), jsonString(b.Args))
	field("restartPolicy", restartPolicy(a), restartPolicy(b))
	out = append(out, diffEnv(path+" ", a.Env, b.Env)...)
	out = append(out, diffMounts(path+" ", a.VolumeMounts, b.VolumeMounts)...)
	out = append(out, diffCaps(path+" ", addedCaps(a), addedCaps(b))...)
	out = append(out, diffResources(path+" ", a.Resources, b.Resources)...)
	if len(out) == 0 && !equality.Semantic.DeepEqual(a, b) {
		out = append(out, Change{What: InitContainerChanged, Path: path, From: "runtime spec", To: "differs outside image, command, args, restartPolicy, env, mounts, capabilities and resources"})
	}
	return out
}

func diffVolumes(from, to []corev1.Volume) []Change {
	name := func(v *corev1.Volume) string { return v.Name }
	self := func(v *corev1.Volume) *corev1.Volume { return v }
	same := func(a, b *corev1.Volume) bool { return equality.Semantic.DeepEqual(a.VolumeSource, b.VolumeSource) }
	return diffKeyed("volume", VolumeLost, VolumeChanged, VolumeAdded, keyed(from, name, self), keyed(to, name, self), same, volumeSource)
}

// diffEnv compares by name, which is how Kubernetes resolves duplicates
// (the last one wins) and how the trainer upserts, and then the order of
// the names both sides set: a $(VAR) reference expands only from an
// earlier entry, so a reordered env is another wiring.
func diffEnv(prefix string, from, to []corev1.EnvVar) []Change {
	name := func(e *corev1.EnvVar) string { return e.Name }
	out := diffStrings(prefix+"env", EnvLost, EnvOverridden, EnvAdded, keyed(from, name, EnvValue), keyed(to, name, EnvValue))
	names := func(env []corev1.EnvVar) []string {
		n := make([]string, len(env))
		for i := range env {
			n[i] = env[i].Name
		}
		return n
	}
	if f, t, i, moved := structdiff.Order(names(from), names(to)); moved {
		out = append(out, Change{What: EnvReordered, Path: prefix + "env order from " + f[i], From: strings.Join(f[i:], ","), To: strings.Join(t[i:], ",")})
	}
	return out
}

// DiffEnv reports how the env to differs from from, order included, as
// Diff reports a node container's env.
func DiffEnv(from, to []corev1.EnvVar) []Change { return diffEnv("", from, to) }

// EnvValue renders an env var's value, including valueFrom sources, as one
// comparable string.
func EnvValue(e *corev1.EnvVar) string {
	if e.ValueFrom == nil {
		return e.Value
	}
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		return "fieldRef:" + vf.FieldRef.FieldPath
	case vf.ResourceFieldRef != nil:
		return "resourceFieldRef:" + vf.ResourceFieldRef.ContainerName + "/" + vf.ResourceFieldRef.Resource
	case vf.ConfigMapKeyRef != nil:
		return "configMapKeyRef:" + vf.ConfigMapKeyRef.Name + "/" + vf.ConfigMapKeyRef.Key
	case vf.SecretKeyRef != nil:
		return "secretKeyRef:" + vf.SecretKeyRef.Name + "/" + vf.SecretKeyRef.Key
	}
	return "valueFrom:" + jsonString(vf)
}

// diffMounts keys mounts by mount path: two mounts cannot share one, and
// the same volume may be mounted at several.
func diffMounts(prefix string, from, to []corev1.VolumeMount) []Change {
	path := func(vm *corev1.VolumeMount) string { return vm.MountPath }
	return diffStrings(prefix+"mount", MountLost, MountChanged, MountAdded, keyed(from, path, mountSummary), keyed(to, path, mountSummary))
}

func mountSummary(vm *corev1.VolumeMount) string {
	v := vm.Name
	if vm.ReadOnly {
		v += " (ro)"
	}
	if vm.SubPath != "" {
		v += " subPath=" + vm.SubPath
	}
	if vm.MountPropagation != nil {
		v += " propagation=" + string(*vm.MountPropagation)
	}
	return v
}

// diffCaps has no "changed": a capability is present or not.
func diffCaps(prefix string, from, to []corev1.Capability) []Change {
	name := func(c *corev1.Capability) string { return string(*c) }
	none := func(*corev1.Capability) string { return "" }
	return diffStrings(prefix+"capability", CapabilityLost, "", CapabilityAdded, keyed(from, name, none), keyed(to, name, none))
}

// diffResources compares quantities by their canonical form, so "8" and
// "8000m" are one value.
func diffResources(prefix string, from, to corev1.ResourceRequirements) []Change {
	list := func(l corev1.ResourceList) map[string]string {
		m := make(map[string]string, len(l))
		for k, q := range l {
			m[string(k)] = q.String()
		}
		return m
	}
	claim := func(c *corev1.ResourceClaim) string { return c.Name }
	request := func(c *corev1.ResourceClaim) string { return c.Request }
	var out []Change
	out = append(out, diffStrings(prefix+"limits", ResourceLost, ResourceChanged, ResourceAdded, list(from.Limits), list(to.Limits))...)
	out = append(out, diffStrings(prefix+"requests", ResourceLost, ResourceChanged, ResourceAdded, list(from.Requests), list(to.Requests))...)
	return append(out, diffStrings(prefix+"claims", ResourceLost, ResourceChanged, ResourceAdded, keyed(from.Claims, claim, request), keyed(to.Claims, claim, request))...)
}

func addedCaps(c *corev1.Container) []corev1.Capability {
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
		return nil
	}
	return c.SecurityContext.Capabilities.Add
}

func restartPolicy(c *corev1.Container) string {
	if c.RestartPolicy == nil {
		return ""
	}
	return string(*c.RestartPolicy)
}

// volumeSource summarises a volume for a Change: hostPath volumes by path,
// emptyDir by medium, anything else as its JSON.
func volumeSource(v *corev1.Volume) string {
	switch {
	case v.HostPath != nil:
		return "hostPath:" + v.HostPath.Path
	case v.EmptyDir != nil && v.EmptyDir.Medium != "":
		return "emptyDir:" + string(v.EmptyDir.Medium)
	case v.EmptyDir != nil:
		return "emptyDir"
	case v.Secret != nil:
		return "secret:" + v.Secret.SecretName
	case v.ConfigMap != nil:
		return "configMap:" + v.ConfigMap.Name
	}
	return jsonString(v.VolumeSource)
}

func jsonString(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		// Only unmarshalable values (channels, funcs) fail, and API types
		// contain none; say so rather than hide it.
		return fmt.Sprintf("<unrenderable: %v>", err)
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}
