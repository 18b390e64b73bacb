package metrics

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/exposition"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// feedRuns reports runs of 20 job names and 50 groups to c, with some jobs without a
// name or a group and some from callers that give neither, and returns how many runs it
// reported by status.
func feedRuns(c *Collector) map[string]int {
	runs := map[string]int{}
	statuses := []job.Status{job.Completed, job.Failed, job.Terminated, job.Cancelled}
	for i := range 1000 {
		name, group := fmt.Sprintf("name-%02d", i%20), fmt.Sprintf("group-%02d", i%50)
		if i%7 == 6 {
			name = "" // a job named by its id
		}
		if i%11 == 10 {
			group = "" // a job without a group
		}
		status, took := statuses[i%len(statuses)], time.Duration(i)*time.Millisecond
		switch i % 13 {
		case 12:
			c.RunEnded("tasks", status, took)
		case 11:
			c.RunEndedNamed("tasks", name, status, took)
		default:
			c.RunEndedGrouped("tasks", name, group, status, took)
		}
		runs[string(status)]++
	}
	c.JobsClaimed("tasks", 1000)
	c.JobsExpired("tasks", 3)
	return runs
}

// wantValues are the values a bounded label takes for n values fed in order (the first
// limit of them, "" and, past the limit, "other"), nil for no label.
func wantValues(prefix string, n, limit int) []string {
	if limit <= 0 {
		return nil
	}
	want := []string{""}
	for i := range min(n, limit) {
		want = append(want, fmt.Sprintf("%s-%02d", prefix, i))
	}
	if limit < n {
		want = append(want, otherLabel)
	}
	slices.Sort(want)
	return want
}

// A scrape has each series once, whatever labels are asked for, and the series add up to
// every run reported: with no name (or group) label, the runs of every name (or group)
// are one series.
func TestScrapeHasEachSeriesOnce(t *testing.T) {
	for _, opts := range []Options{
		{},
		{AllWorkers: true},
		{NameLabels: 5},
		{NameLabels: 20},
		{NameLabels: 30},
		{GroupLabels: 10},
		{GroupLabels: 50},
		{GroupLabels: 60},
		{NameLabels: 5, GroupLabels: 10},
		{NameLabels: 30, GroupLabels: 60, AllWorkers: true},
		{NameLabels: 5, GroupLabels: 60},
	} {
		t.Run(fmt.Sprintf("names=%d,groups=%d,all=%v", opts.NameLabels, opts.GroupLabels, opts.AllWorkers), func(t *testing.T) {
			c := NewWith(opts)
			runs := feedRuns(c)
			out := scrape(c)
			samples, err := exposition.Check(out)
			require.NoError(t, err)

			byStatus := map[string]int{}
			counted := 0
			names, groups := map[string]bool{}, map[string]bool{}
			for _, s := range samples {
				switch s.Name {
				case "rjq_runs_total":
					byStatus[s.Labels["status"]] += int(s.Value)
				case "rjq_run_duration_seconds_count":
					counted += int(s.Value)
				default:
					continue
				}
				if v, ok := s.Labels["name"]; ok {
					names[v] = true
				}
				if v, ok := s.Labels["group"]; ok {
					groups[v] = true
				}
			}
			assert.Equal(t, runs, byStatus, "rjq_runs_total adds up to the runs, by status")
			assert.Equal(t, 1000, counted, "rjq_run_duration_seconds_count adds up to the runs")
			assert.Equal(t, wantValues("name", 20, opts.NameLabels), sorted(names), "name label values")
			assert.Equal(t, wantValues("group", 50, opts.GroupLabels), sorted(groups), "group label values")
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "# HELP rjq_jobs_") || strings.HasPrefix(line, "# HELP rjq_run") {
					assert.Equal(t, !opts.AllWorkers, strings.Contains(line, "this process"), "the help says whose runs it counts: %s", line)
					assert.Equal(t, opts.AllWorkers, strings.Contains(line, "any worker"), "the help says whose runs it counts: %s", line)
				}
			}
		})
	}
}

// sorted is the keys of a set, sorted; nil when empty.
func sorted(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}
