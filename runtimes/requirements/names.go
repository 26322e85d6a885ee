package requirements

import (
	"fmt"
	"strings"
)

// MaxReplicatedJobName is the longest replicatedJob name a runtime may
// carry: Kubeflow Trainer v2.4.0 rejects longer ones (its release notes,
// kubeflow/trainer PR 4394, because JobSet derives pod and service names
// from them). The module proxy here serves no v2.4.0, so the bound is held
// to what its notes say, not to linked code; every runtime we ship keeps it
// so that a trainer upgrade does not reject what worked the day before.
const MaxReplicatedJobName = 20

const srcReplicatedJobNames = "kubeflow/trainer v2.4.0 release notes (PR 4394): a runtime's replicatedJob names are at most 20 characters"

// TooLong: a shipped name is over a bound the platform sets.
const TooLong Problem = "too long"

// replicatedJobs is where a (Cluster)TrainingRuntime lists its jobs.
var replicatedJobs = []string{"spec", "template", "spec", "replicatedJobs"}

// NameBounds finds every replicatedJob of the objects whose name is longer
// than MaxReplicatedJobName.
func NameBounds(artefact string, objs ...map[string]any) []Finding {
	var out []Finding
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		meta, _ := o["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		var v any = o
		for _, k := range replicatedJobs {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		jobs, _ := v.([]any)
		for _, j := range jobs {
			job, _ := j.(map[string]any)
			jobName, _ := job["name"].(string)
			if len(jobName) > MaxReplicatedJobName {
				out = append(out, Finding{Problem: TooLong, Leaf: jobName, Element: &Element{
					Artefact: artefact, Object: kind + "/" + name,
					Path: strings.Join(replicatedJobs, ".") + "[name=" + jobName + "]", Kind: "replicatedJob name",
				}})
			}
		}
	}
	return out
}

func (f Finding) tooLong() string {
	e := f.Element
	return fmt.Sprintf("%s (%s): %s is %d characters, over the %d of %s: shorten it",
		e.Artefact, e.Object, e.Path, len(f.Leaf), MaxReplicatedJobName, srcReplicatedJobNames)
}
