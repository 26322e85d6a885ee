package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	trainerconst "github.com/kubeflow/trainer/v2/pkg/constants"
)

// toMap is obj as the generic map its JSON encoding decodes to: what the
// YAML encoder writes, fields in the API's spelling.
func toMap(obj any) (map[string]any, error) {
	if obj == nil {
		return nil, fmt.Errorf("no object was rendered")
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var u map[string]any
	if err := json.Unmarshal(data, &u); err != nil {
		return nil, err
	}
	return u, nil
}

// field returns m[key] as a T, or an error naming the key.
func field[T any](m map[string]any, key string) (T, error) {
	v, ok := m[key].(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("field %s is missing or of another kind than the builders write", key)
	}
	return v, nil
}

// wiredPods returns the pod templates of the replicated jobs named node of
// a (Cluster)TrainingRuntime: the pods that carry the fabric's wiring.
func wiredPods(rt map[string]any) ([]map[string]any, error) {
	jobs, ok := dig(rt, "spec", "template", "spec", "replicatedJobs").([]any)
	if !ok {
		return nil, fmt.Errorf("the runtime has no replicatedJobs list")
	}
	var pods []map[string]any
	for _, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok || job["name"] != trainerconst.Node {
			continue
		}
		p, ok := dig(job, "template", "spec", "template").(map[string]any)
		if !ok {
			return nil, fmt.Errorf("replicated job %s has no pod template", trainerconst.Node)
		}
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("the runtime has no replicated job %s", trainerconst.Node)
	}
	return pods, nil
}

// container returns the container named name of a pod spec.
func container(spec map[string]any, name string) (map[string]any, error) {
	cs, _ := spec["containers"].([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["name"] == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("the wired pod has no container %s", name)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// dig returns the value at keys under m, or nil where a key is missing or
// a value on the way is not a map.
func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}
