package realize

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
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
}

// WiringOf extracts the wiring of a pod template whose training container
// is named nodeContainer (the trainer's is "node"). A nil template yields a
// zero Wiring. The result shares nothing with podSpec.
func WiringOf(podSpec *corev1.PodTemplateSpec, nodeContainer string) Wiring {
	if podSpec == nil {
		return Wiring{}
	}
	p := podSpec.DeepCopy()
	w := Wiring{
		Annotations:    p.Annotations,
		InitContainers: p.Spec.InitContainers,
		Volumes:        p.Spec.Volumes,
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.Name != nodeContainer {
			continue
		}
		w.HasNode = true
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

	NodeContainerLost = "node container lost"

	EnvLost       = "env lost"
	EnvOverridden = "env overridden"
	EnvAdded      = "env added"

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
// volumes, then the node container's env, mounts, capabilities and
// resources; within each group, losses and changes come before additions
// and each is sorted by name.
func Diff(runtime, realized Wiring) []Change {
	var out []Change
	out = append(out, diffStringMaps("annotation", AnnotationLost, AnnotationChanged, AnnotationAdded, runtime.Annotations, realized.Annotations)...)
	out = append(out, diffInitContainers(runtime.InitContainers, realized.InitContainers)...)
	out = append(out, diffVolumes(runtime.Volumes, realized.Volumes)...)
	if runtime.HasNode && !realized.HasNode {
		return append(out, Change{What: NodeContainerLost, Path: "container node"})
	}
	out = append(out, diffEnv("", runtime.NodeEnv, realized.NodeEnv)...)
	out = append(out, diffMounts("", runtime.NodeMounts, realized.NodeMounts)...)
	out = append(out, diffCaps("", runtime.NodeCaps, realized.NodeCaps)...)
	out = append(out, diffResources("", runtime.NodeResources, realized.NodeResources)...)
	return out
}

func diffStringMaps(kind, lost, changed, added string, from, to map[string]string) []Change {
	var out []Change
	for _, k := range sortedKeys(from) {
		v, ok := to[k]
		switch {
		case !ok:
			out = append(out, Change{What: lost, Path: kind + " " + k, From: from[k]})
		case v != from[k]:
			out = append(out, Change{What: changed, Path: kind + " " + k, From: from[k], To: v})
		}
	}
	for _, k := range sortedKeys(to) {
		if _, ok := from[k]; !ok {
			out = append(out, Change{What: added, Path: kind + " " + k, To: to[k]})
		}
	}
	return out
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
	f, t := volumeMap(from), volumeMap(to)
	var out []Change
	for _, k := range sortedKeys(f) {
		b, ok := t[k]
		switch {
		case !ok:
			out = append(out, Change{What: VolumeLost, Path: "volume " + k, From: volumeSource(f[k])})
		case !equality.Semantic.DeepEqual(f[k].VolumeSource, b.VolumeSource):
			out = append(out, Change{What: VolumeChanged, Path: "volume " + k, From: volumeSource(f[k]), To: volumeSource(b)})
		}
	}
	for _, k := range sortedKeys(t) {
		if _, ok := f[k]; !ok {
			out = append(out, Change{What: VolumeAdded, Path: "volume " + k, To: volumeSource(t[k])})
		}
	}
	return out
}

func volumeMap(vs []corev1.Volume) map[string]*corev1.Volume {
	m := make(map[string]*corev1.Volume, len(vs))
	for i := range vs {
		m[vs[i].Name] = &vs[i]
	}
	return m
}

// diffEnv compares by name, which is how Kubernetes resolves duplicates
// (the last one wins) and how the trainer upserts.
func diffEnv(prefix string, from, to []corev1.EnvVar) []Change {
	f, t := envMap(from), envMap(to)
	var out []Change
	for _, k := range sortedKeys(f) {
		v, ok := t[k]
		switch {
		case !ok:
			out = append(out, Change{What: EnvLost, Path: prefix + "env " + k, From: f[k]})
		case v != f[k]:
			out = append(out, Change{What: EnvOverridden, Path: prefix + "env " + k, From: f[k], To: v})
		}
	}
	for _, k := range sortedKeys(t) {
		if _, ok := f[k]; !ok {
			out = append(out, Change{What: EnvAdded, Path: prefix + "env " + k, To: t[k]})
		}
	}
	return out
}

func envMap(env []corev1.EnvVar) map[string]string {
	m := make(map[string]string, len(env))
	for i := range env {
		m[env[i].Name] = EnvValue(&env[i])
	}
	return m
}

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
	f, t := mountMap(from), mountMap(to)
	var out []Change
	for _, k := range sortedKeys(f) {
		v, ok := t[k]
		switch {
		case !ok:
			out = append(out, Change{What: MountLost, Path: prefix + "mount " + k, From: f[k]})
		case v != f[k]:
			out = append(out, Change{What: MountChanged, Path: prefix + "mount " + k, From: f[k], To: v})
		}
	}
	for _, k := range sortedKeys(t) {
		if _, ok := f[k]; !ok {
			out = append(out, Change{What: MountAdded, Path: prefix + "mount " + k, To: t[k]})
		}
	}
	return out
}

func mountMap(ms []corev1.VolumeMount) map[string]string {
	m := make(map[string]string, len(ms))
	for _, vm := range ms {
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
		m[vm.MountPath] = v
	}
	return m
}

func diffCaps(prefix string, from, to []corev1.Capability) []Change {
	f, t := map[string]bool{}, map[string]bool{}
	for _, c := range from {
		f[string(c)] = true
	}
	for _, c := range to {
		t[string(c)] = true
	}
	var out []Change
	for _, k := range sortedKeys(f) {
		if !t[k] {
			out = append(out, Change{What: CapabilityLost, Path: prefix + "capability " + k})
		}
	}
	for _, k := range sortedKeys(t) {
		if !f[k] {
			out = append(out, Change{What: CapabilityAdded, Path: prefix + "capability " + k})
		}
	}
	return out
}

func diffResources(prefix string, from, to corev1.ResourceRequirements) []Change {
	var out []Change
	list := func(kind string, a, b corev1.ResourceList) {
		for _, k := range sortedResourceNames(a) {
			q, ok := b[k]
			switch {
			case !ok:
				out = append(out, Change{What: ResourceLost, Path: prefix + kind + " " + string(k), From: quantity(a[k])})
			case q.Cmp(a[k]) != 0:
				out = append(out, Change{What: ResourceChanged, Path: prefix + kind + " " + string(k), From: quantity(a[k]), To: quantity(q)})
			}
		}
		for _, k := range sortedResourceNames(b) {
			if _, ok := a[k]; !ok {
				out = append(out, Change{What: ResourceAdded, Path: prefix + kind + " " + string(k), To: quantity(b[k])})
			}
		}
	}
	list("limits", from.Limits, to.Limits)
	list("requests", from.Requests, to.Requests)
	claims := func(rs []corev1.ResourceClaim) map[string]string {
		m := map[string]string{}
		for _, c := range rs {
			m[c.Name] = c.Request
		}
		return m
	}
	out = append(out, diffStringMaps(prefix+"claims", ResourceLost, ResourceChanged, ResourceAdded, claims(from.Claims), claims(to.Claims))...)
	return out
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func quantity(q resource.Quantity) string { return q.String() }

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
