package bom

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// RetiredDaemonFlag is a tcpxo-daemon flag a daemon release retired (the
// daemon accepts it, or logs an error, and it has no effect) or rejects (the
// daemon exits at start): release data, kept in releases.yaml with where it
// is published. bom-check refuses a shipped daemon argument that passes one
// the pinned daemon retired.
type RetiredDaemonFlag struct {
	// Flag is the flag as the daemon reads it, without a value: --num_nics.
	Flag string `yaml:"flag"`
	// From is the first daemon release the rule holds for; empty for every
	// pinned daemon.
	From string `yaml:"from,omitempty"`
	// Fatal: the daemon exits at start on it, not merely ignores it.
	Fatal bool `yaml:"fatal"`
	// Note is what the daemon does with the flag, as bom-check reports it
	// ("--uid=1000" is <Note>).
	Note string `yaml:"note"`
	// Source is where the fact is published.
	Source string `yaml:"source"`
}

// AppliesTo reports whether the rule holds for the pinned daemon tag: From
// is empty, or daemon is a release at least From. An unreadable tag applies
// the rule: a flag is refused rather than let by.
func (f RetiredDaemonFlag) AppliesTo(daemon string) bool {
	if f.From == "" {
		return true
	}
	pinned, ok := daemonRelease(daemon)
	from, fromOK := daemonRelease(f.From)
	if !ok || !fromOK {
		return true
	}
	return pinned.AtLeast(from)
}

// In reports whether the container argument arg passes the flag: alone,
// with =value, or inside a shell command line.
func (f RetiredDaemonFlag) In(arg string) bool {
	return arg == f.Flag || strings.HasPrefix(arg, f.Flag+"=") || strings.Contains(arg, " "+f.Flag)
}

// RetiredDaemonFlagsFor lists, in file order, the retired flags whose rule
// holds for the pinned daemon tag (see AppliesTo).
func (r *Releases) RetiredDaemonFlagsFor(daemon string) []RetiredDaemonFlag {
	return slices.DeleteFunc(slices.Clone(r.RetiredDaemonFlags), func(f RetiredDaemonFlag) bool { return !f.AppliesTo(daemon) })
}

// daemonRelease reads a daemon tag as vMAJOR.MINOR.PATCH, with whatever
// follows the patch uninterpreted (v1.0.13_1, v1.0.6-sctp) and zero-padded
// parts read as numbers (v1.0.09 is v1.0.9); ok is false for any other tag
// (latest, v1.0).
func daemonRelease(tag string) (*version.Version, bool) {
	if !strings.HasPrefix(tag, "v") {
		return nil, false
	}
	v, err := version.ParseGeneric(tag)
	if err != nil || len(v.Components()) < 3 {
		return nil, false
	}
	return v, true
}

// daemonFlagRE is a flag name as the daemon reads it, without a value.
var daemonFlagRE = regexp.MustCompile(`^--[A-Za-z0-9][A-Za-z0-9_-]*$`)

// validateRetiredDaemonFlags checks each retired flag: its name, the
// published daemon it applies from, whether it is fatal, and what the
// daemon does with it and where that is published, all written out.
func (r *Releases) validateRetiredDaemonFlags(c *checker) {
	daemons := map[string]bool{}
	for _, p := range r.Pairs {
		daemons[p.Daemon] = true
	}
	flags := map[string]int{} // flag → index of its entry
	for i, f := range r.RetiredDaemonFlags {
		fp := path("retiredDaemonFlags").index(i)
		if c.require(fp.key("flag"), f.Flag, "set it to the flag as the daemon reads it, without a value, e.g. --num_nics") {
			switch first, dup := flags[f.Flag]; {
			case !daemonFlagRE.MatchString(f.Flag):
				c.add(fp.key("flag"), fmt.Sprintf("%s is not a daemon flag", quote(f.Flag)),
					"write the flag's name with its leading --, without a value, e.g. --num_nics", nil)
			case dup:
				line, _ := c.lines.Line(string(path("retiredDaemonFlags").index(first)))
				c.add(fp.key("flag"), fmt.Sprintf("%s is already listed at line %d", quote(f.Flag), line),
					"keep one entry per flag, from the first daemon release that retired or rejects it", nil)
			default:
				flags[f.Flag] = i
			}
		}
		if f.From != "" && c.tag(fp.key("from"), f.From, "the first daemon (tcpgpudmarxd-dev) release the rule holds for") {
			switch _, ok := daemonRelease(f.From); {
			case !ok:
				c.add(fp.key("from"), fmt.Sprintf("%s is not a daemon release vMAJOR.MINOR.PATCH", quote(f.From)),
					"write the first daemon release the rule holds for, e.g. v1.0.21, or leave from out for every pinned daemon", nil)
			case !daemons[f.From]:
				c.add(fp.key("from"), fmt.Sprintf("%s is not a daemon listed under pairs", quote(f.From)),
					"use the tag of the published daemon that retired the flag, exactly as listed under pairs", nil)
			}
		}
		if !c.lines.Present(string(fp.key("fatal"))) {
			c.absent(fp.key("fatal"), "say whether the daemon exits at start on the flag: fatal: true, or fatal: false when it merely ignores it")
		}
		c.require(fp.key("note"), f.Note, `say what the daemon does with the flag, as bom-check reports it, e.g. "retired from daemon v1.0.21 (the daemon logs an error; the flag has no effect)"`)
		c.require(fp.key("source"), f.Source, `say where the fact is published, e.g. "Google's release notes"`)
	}
}
