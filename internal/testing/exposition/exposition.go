// Package exposition checks a scrape in the Prometheus text format as a scraper reads it,
// for the tests of the packages that write one: a series that appears twice (Prometheus
// keeps one of its samples and drops the others), a family without its HELP and TYPE
// before its samples or whose samples are not together, a histogram whose buckets do not
// add up.
package exposition

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sample is one sample line of a scrape.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Series is the sample's metric name and label set, labels sorted: the identity a scraper
// keeps one value of.
func (s Sample) Series() string { return s.Name + "{" + labelString(s.Labels, "") + "}" }

// labelString is labels sorted by name, leaving out skip.
func labelString(labels map[string]string, skip string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != skip {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(labels[k])
	}
	return strings.Join(parts, ",")
}

// family is what a scrape said of one metric family.
type family struct {
	help, typ  int // how many HELP and TYPE lines
	typeName   string
	sampled    bool // a sample was seen
	closed     bool // another family's sample came after this one's
	helpBefore bool // HELP came before the first sample
}

// checker is the state of Check's read of a scrape.
type checker struct {
	errs    []error
	fams    map[string]*family
	samples []Sample
	seen    map[string]int // series → how many times
	last    string         // the family of the last sample
}

// Check reads a scrape and returns its samples and every way it breaks the text format's
// rules that Prometheus relies on, joined; nil when it breaks none.
func Check(text string) ([]Sample, error) {
	c := &checker{fams: map[string]*family{}, seen: map[string]int{}}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			c.comment(n+1, rest)
		} else if line != "" {
			c.sample(n+1, line)
		}
	}
	for name, f := range c.fams {
		if f.help != 1 || f.typ != 1 {
			c.errs = append(c.errs, fmt.Errorf("family %s has %d HELP and %d TYPE lines, want 1 of each", name, f.help, f.typ))
		}
		if f.sampled && !f.helpBefore {
			c.errs = append(c.errs, fmt.Errorf("family %s has its HELP after its samples", name))
		}
	}
	c.errs = append(c.errs, checkHistograms(c.samples, c.fams)...)
	return c.samples, errors.Join(c.errs...)
}

func (c *checker) family(name string) *family {
	if c.fams[name] == nil {
		c.fams[name] = &family{}
	}
	return c.fams[name]
}

// comment reads a comment line, text after "# ": HELP and TYPE count, others are free.
func (c *checker) comment(n int, text string) {
	kind, rest, _ := strings.Cut(text, " ")
	name, arg, _ := strings.Cut(rest, " ")
	switch kind {
	case "HELP":
		f := c.family(name)
		f.help++
		if !f.sampled {
			f.helpBefore = true
		}
	case "TYPE":
		f := c.family(name)
		f.typ++
		f.typeName = arg
		if f.sampled {
			c.errs = append(c.errs, fmt.Errorf("line %d: TYPE of %s after its samples", n, name))
		}
	}
}

// sample reads a sample line.
func (c *checker) sample(n int, line string) {
	s, err := parseSample(line)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("line %d: %w", n, err))
		return
	}
	c.samples = append(c.samples, s)
	if c.seen[s.Series()]++; c.seen[s.Series()] == 2 {
		c.errs = append(c.errs, fmt.Errorf("line %d: series %s appears more than once", n, s.Series()))
	}
	fam := familyOf(s.Name, c.fams)
	f := c.fams[fam]
	if f == nil || f.typ == 0 {
		c.errs = append(c.errs, fmt.Errorf("line %d: sample %s has no TYPE before it", n, s.Name))
		f = c.family(fam)
	}
	if f.closed {
		c.errs = append(c.errs, fmt.Errorf("line %d: samples of %s are not together", n, fam))
	}
	if c.last != "" && c.last != fam {
		c.fams[c.last].closed = true
	}
	f.sampled, c.last = true, fam
}

// familyOf is the family a sample name belongs to: itself, or a histogram's or summary's
// whose _bucket, _sum or _count it is.
func familyOf(name string, fams map[string]*family) string {
	if fams[name] != nil {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && fams[base] != nil {
			return base
		}
	}
	return name
}

// checkHistograms checks each histogram series: buckets that do not decrease as le grows,
// a +Inf bucket equal to _count, and a _sum.
func checkHistograms(samples []Sample, fams map[string]*family) []error {
	type bucket struct{ le, n float64 }
	buckets := map[string][]bucket{}
	counts, sums := map[string]float64{}, map[string]bool{}
	for _, s := range samples {
		fam := familyOf(s.Name, fams)
		if f := fams[fam]; f == nil || f.typeName != "histogram" {
			continue
		}
		switch s.Name {
		case fam + "_bucket":
			le, err := strconv.ParseFloat(s.Labels["le"], 64)
			if err != nil {
				return []error{fmt.Errorf("%s: le %q is not a number", s.Series(), s.Labels["le"])}
			}
			key := fam + "{" + labelString(s.Labels, "le") + "}"
			buckets[key] = append(buckets[key], bucket{le, s.Value})
		case fam + "_count":
			counts[fam+"{"+labelString(s.Labels, "")+"}"] = s.Value
		case fam + "_sum":
			sums[fam+"{"+labelString(s.Labels, "")+"}"] = true
		}
	}
	var errs []error
	for key, bs := range buckets {
		slices.SortStableFunc(bs, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
		for i := 1; i < len(bs); i++ {
			if bs[i].n < bs[i-1].n {
				errs = append(errs, fmt.Errorf("%s: bucket le=%g holds %g, fewer than le=%g's %g: buckets are cumulative", key, bs[i].le, bs[i].n, bs[i-1].le, bs[i-1].n))
			}
		}
		top := bs[len(bs)-1]
		count, ok := counts[key]
		switch {
		case !math.IsInf(top.le, 1):
			errs = append(errs, fmt.Errorf("%s has no +Inf bucket", key))
		case !ok:
			errs = append(errs, fmt.Errorf("%s has no _count", key))
		case top.n != count:
			errs = append(errs, fmt.Errorf("%s: +Inf bucket %g differs from _count %g", key, top.n, count))
		}
		if !sums[key] {
			errs = append(errs, fmt.Errorf("%s has no _sum", key))
		}
	}
	return errs
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseSample reads a sample line: name, optional {labels}, value, optional timestamp.
func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("%q is not a sample", line)
	}
	s.Name, line = line[:i], line[i:]
	if strings.HasPrefix(line, "{") {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, fmt.Errorf("%s: %w", s.Name, err)
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) < 1 || len(fields) > 2 {
		return s, fmt.Errorf("%s: want a value and at most a timestamp after the labels, got %q", s.Name, line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("%s: value %q is not a number", s.Name, fields[0])
	}
	s.Value = v
	return s, nil
}

// parseLabels reads name="value" pairs up to the closing brace into labels, and returns
// what follows the brace.
func parseLabels(text string, labels map[string]string) (string, error) {
	for {
		text = strings.TrimLeft(text, " ,")
		if rest, ok := strings.CutPrefix(text, "}"); ok {
			return rest, nil
		}
		name, rest, ok := strings.Cut(text, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return "", fmt.Errorf("labels %q: want name=\"value\"", text)
		}
		var value strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					value.WriteByte('\n')
					continue
				}
			}
			value.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return "", fmt.Errorf("label %s: unterminated value", name)
		}
		if _, dup := labels[name]; dup {
			return "", fmt.Errorf("label %s given twice", name)
		}
		labels[name] = value.String()
		text = rest[i+1:]
	}
}
