package bom

import (
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// FieldError is one rejected value in a data file, the located error every
// YAML reader shares; its Path is the YAML path of the value, e.g.
// "images.daemon.reference" or "ncclConfigs[0].env[3].name". Loaders return
// every problem they find at once, so a reviewer fixes a file in one pass
// instead of one error per run; use errors.As to reach the individual
// problems.
type FieldError = yamlstrict.Error

// problem is a rejection found before its location is known (for example by
// NewImage, which has no file); field is relative to the value being checked.
type problem struct {
	field  string
	absent bool // the value is missing or empty; which of the two is read from the file
	what   string
	fix    string
	err    error
	// tagless marks the "no tag" problem, which a digest-only pin with a
	// source is exempt from.
	tagless bool
}

// checker collects located rejections for one file.
type checker struct {
	file  string
	lines *yamlstrict.Locator
	errs  []*FieldError
}

func (c *checker) add(p path, what, fix string, cause error) {
	line, _ := c.lines.Line(string(p))
	c.errs = append(c.errs, &FieldError{File: c.file, Line: line, Path: string(p), Problem: what, Fix: fix, Err: cause})
}

// addProblems locates problems reported relative to base.
func (c *checker) addProblems(base path, probs []problem) {
	for _, pr := range probs {
		p := base
		if pr.field != "" {
			p = base.key(pr.field)
		}
		if pr.absent {
			c.absent(p, pr.fix)
			continue
		}
		c.add(p, pr.what, pr.fix, pr.err)
	}
}

// absent reports a required value that is not there, telling a missing key
// from one that is present but empty, because the two are fixed differently.
func (c *checker) absent(p path, fix string) {
	what := "is missing"
	if c.lines.Exists(string(p)) {
		what = "is empty"
	}
	c.add(p, what, fix, nil)
}

// require reports v if it is blank and says whether it was set.
func (c *checker) require(p path, v, fix string) bool {
	if strings.TrimSpace(v) != "" {
		return true
	}
	c.absent(p, fix)
	return false
}

// section reports a whole mapping or list that is missing or null, once,
// instead of one error per field inside it.
func (c *checker) section(p path, fix string) bool {
	if c.lines.Present(string(p)) {
		return true
	}
	c.absent(p, fix)
	return false
}

// err returns the collected rejections in file order, or nil.
func (c *checker) err() error { return yamlstrict.Errors(c.file, c.errs) }
