package bom

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// OverridesRepoPath is the reviewed-overrides file, relative to the module root.
const OverridesRepoPath = "bom/overrides.yaml"

// Override actions; see bom/overrides.yaml for what each means.
const (
	ActionAdd           = "add"
	ActionReplace       = "replace"
	ActionPin           = "pin"
	ActionRemove        = "remove"
	ActionFollowProfile = "follow-profile"
)

// actionRules says, per action, whether the entry needs a value and whether
// the variable must already be in the profile; the staleness checks follow
// from it.
var actionRules = map[string]struct{ needsValue, inProfile bool }{
	ActionAdd:           {needsValue: true, inProfile: false},
	ActionReplace:       {needsValue: true, inProfile: true},
	ActionPin:           {needsValue: true, inProfile: true},
	ActionRemove:        {needsValue: false, inProfile: true},
	ActionFollowProfile: {needsValue: false},
}

// Override is one reviewed difference between the shipped env and the profile.
type Override struct {
	Name   string `yaml:"name"`
	Action string `yaml:"action"`
	Value  string `yaml:"value"`
	Reason string `yaml:"reason"`
	// Installers, when set, scopes the decision to those installer versions:
	// a difference a newer release's published list brings is decided before
	// the bump that pins it, and is neither applied nor judged stale while
	// another installer is pinned.
	Installers []string `yaml:"installers,omitempty"`
}

// AppliesTo says whether the decision is in force for installer.
func (ov Override) AppliesTo(installer string) bool {
	return len(ov.Installers) == 0 || slices.Contains(ov.Installers, installer)
}

// Decides says whether a decision about name is in force for installer.
func (o *Overrides) Decides(name, installer string) bool {
	_, ok := o.Decision(name, installer)
	return ok
}

// Decision returns the decision about name in force for installer.
func (o *Overrides) Decision(name, installer string) (Override, bool) {
	i := slices.IndexFunc(o.Overrides, func(ov Override) bool { return ov.Name == name && ov.AppliesTo(installer) })
	if i < 0 {
		return Override{}, false
	}
	return o.Overrides[i], true
}

// Overrides is bom/overrides.yaml.
type Overrides struct {
	Overrides []Override `yaml:"overrides"`
	Path      string     `yaml:"-"`
	lines     *yamlstrict.Locator
}

// LoadOverrides reads and validates an overrides file.
func LoadOverrides(path string) (*Overrides, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the reviewed overrides: %w (pass the path to %s, or run from the module root)", err, OverridesRepoPath)
	}
	return ParseOverrides(path, data)
}

// ParseOverrides validates overrides content; name is used in error messages.
func ParseOverrides(name string, data []byte) (*Overrides, error) {
	var o Overrides
	loc, err := decodeStrict(name, data, &o)
	if err != nil {
		return nil, err
	}
	c := &checker{file: name, lines: loc}
	o.validate(c)
	if err := c.err(); err != nil {
		return nil, err
	}
	o.Path, o.lines = name, loc
	return &o, nil
}

func (o *Overrides) validate(c *checker) {
	seen := map[string][]int{}
	for i, ov := range o.Overrides {
		p := path("overrides").index(i)
		if c.require(p.key("name"), ov.Name, "name the environment variable") && !envNameRE.MatchString(ov.Name) {
			c.add(p.key("name"), fmt.Sprintf("%s is not an environment variable name", quote(ov.Name)), "use letters, digits and underscores, not starting with a digit", nil)
		}
		// One decision per variable and installer: two unscoped entries, or
		// two whose scopes share an installer, would contradict each other.
		for _, first := range seen[ov.Name] {
			if ov.Name != "" && overlap(o.Overrides[first].Installers, ov.Installers) {
				c.add(p.key("name"), fmt.Sprintf("%s already has an override for the same installers (entry %d)", ov.Name, first),
					"keep one entry per variable, or scope each to different installers (installers: [TAG, ...])", nil)
			}
		}
		seen[ov.Name] = append(seen[ov.Name], i)
		for j, inst := range ov.Installers {
			c.tag(p.key("installers").index(j), inst, "the installer version the decision is for")
		}
		rule, ok := actionRules[ov.Action]
		switch {
		case !ok:
			c.add(p.key("action"), fmt.Sprintf("%s is not an action", quote(ov.Action)), "use one of "+strings.Join(actionNames(), ", "), nil)
		case rule.needsValue && ov.Value == "":
			c.absent(p.key("value"), fmt.Sprintf("action %s ships a value: set it", ov.Action))
		case !rule.needsValue && ov.Value != "":
			c.add(p.key("value"), fmt.Sprintf("action %s ships no value", ov.Action), "remove the value, or use replace", nil)
		}
		c.require(p.key("reason"), ov.Reason, "say why this difference is right: the entry is a reviewed decision")
	}
}

// overlap says whether two scopes share an installer; an empty scope is every installer.
func overlap(a, b []string) bool {
	return len(a) == 0 || len(b) == 0 || slices.ContainsFunc(a, func(v string) bool { return slices.Contains(b, v) })
}

func actionNames() []string {
	names := make([]string, 0, len(actionRules))
	for n := range actionRules {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Apply returns the env to ship for installer: profile with every override
// in force for it applied, in profile order, additions appended in file
// order. contextual names the
// profile variables whose value depends on the environment the profile is
// sourced into (the evaluator's normalized variables); only those may be
// pinned to their own value. published is the release notes' list for the
// installer (nil when there is none). Every stale override is an error.
func (o *Overrides) Apply(installer string, profile []facts.EnvVar, contextual []string, published []facts.EnvVar) ([]facts.EnvVar, error) {
	c := &checker{file: o.Path, lines: o.lines}
	index := map[string]int{}
	for i, v := range profile {
		index[v.Name] = i
	}
	out := slices.Clone(profile)
	var removed []string
	for i, ov := range o.Overrides {
		if !ov.AppliesTo(installer) {
			continue
		}
		p := path("overrides").index(i)
		pos, inProfile := index[ov.Name]
		if problem, fix := staleness(ov, inProfile, profileValue(profile, pos, inProfile), slices.Contains(contextual, ov.Name), published); problem != "" {
			c.add(p, problem, fix, nil)
			continue
		}
		switch ov.Action {
		case ActionAdd:
			out = append(out, facts.EnvVar{Name: ov.Name, Value: ov.Value})
		case ActionReplace, ActionPin:
			out[pos].Value = ov.Value
		case ActionRemove:
			removed = append(removed, ov.Name)
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(v facts.EnvVar) bool { return slices.Contains(removed, v.Name) }), nil
}

func profileValue(profile []facts.EnvVar, pos int, ok bool) string {
	if !ok {
		return ""
	}
	return profile[pos].Value
}

// staleness says what is wrong with an override given the current profile,
// or "" when it still describes a real, reviewed difference.
func staleness(ov Override, inProfile bool, current string, contextual bool, published []facts.EnvVar) (problem, fix string) {
	rule := actionRules[ov.Action]
	switch {
	case ov.Action == ActionFollowProfile:
		return followProfileStaleness(ov, inProfile, current, published)
	case rule.inProfile && !inProfile:
		return fmt.Sprintf("%s %s, but the profile no longer exports %s (renamed or dropped?)", ov.Action, ov.Name, ov.Name),
			"update the entry to the profile's new variable, or delete it"
	case !rule.inProfile && inProfile:
		return fmt.Sprintf("adds %s, but the profile now exports it (as %s)", ov.Name, quote(current)),
			"delete the entry if the profile's value is right, or change the action to replace"
	case ov.Action == ActionReplace && current == ov.Value:
		return fmt.Sprintf("replaces %s with %s, which is already the profile's value", ov.Name, quote(ov.Value)), "delete the redundant entry"
	case ov.Action == ActionPin && !contextual && current == ov.Value:
		return fmt.Sprintf("pins %s to %s, but the profile's value no longer depends on the environment and already is that", ov.Name, quote(ov.Value)),
			"delete the redundant entry"
	}
	return "", ""
}

func followProfileStaleness(ov Override, inProfile bool, current string, published []facts.EnvVar) (string, string) {
	var pub *facts.EnvVar
	for i := range published {
		if published[i].Name == ov.Name {
			pub = &published[i]
		}
	}
	switch {
	case published == nil:
		return fmt.Sprintf("follows the profile for %s, but there is no published NCCL config list to differ from", ov.Name),
			"delete the entry, or add the published list to releases.yaml"
	case pub == nil && !inProfile:
		return fmt.Sprintf("follows the profile for %s, but neither the published list nor the profile has it", ov.Name), "delete the stale entry"
	case pub != nil && inProfile && pub.Value == current:
		return fmt.Sprintf("follows the profile for %s, but the published list and the profile now agree (%s)", ov.Name, quote(current)), "delete the stale entry"
	}
	return "", ""
}
