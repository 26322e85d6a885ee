package bom

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// FieldError is one rejected value in a data file. Loaders return every
// problem they find at once (joined with errors.Join), so a reviewer fixes a
// file in one pass instead of one error per run; use errors.As to reach the
// individual problems.
type FieldError struct {
	// File is the path or name the data was loaded from, as given by the caller.
	File string
	// Line is 1-based; 0 when the problem is not tied to a line (an empty file).
	Line int
	// Field is the YAML path of the value, e.g. "images.daemon.reference" or
	// "ncclConfigs[0].env[3].name"; empty for problems with the whole document.
	Field string
	// Problem says what is wrong, in words that make sense after Field.
	Problem string
	// Fix says what to do about it.
	Fix string
	// Err is the underlying cause, if there is one.
	Err error
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteByte(' ')
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString(": ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

func (e *FieldError) Unwrap() error { return e.Err }

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
	lines *locator
	errs  []*FieldError
}

func (c *checker) add(p path, what, fix string, cause error) {
	line, _ := c.lines.line(p)
	c.errs = append(c.errs, &FieldError{File: c.file, Line: line, Field: p.String(), Problem: what, Fix: fix, Err: cause})
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
	if c.lines.exists(p) {
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
	if c.lines.present(p) {
		return true
	}
	c.absent(p, fix)
	return false
}

// err returns the collected rejections in file order, or nil.
func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(c.errs, func(a, b *FieldError) int { return cmp.Compare(a.Line, b.Line) })
	errs := make([]error, len(c.errs))
	for i, e := range c.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}
