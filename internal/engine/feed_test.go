package engine

import (
	"slices"
	"testing"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestSlotsMayBeFree(t *testing.T) {
	seq := func(status string) map[string]any {
		return map[string]any{"status": status, "rjqSequence": "ledger"}
	}
	plain := func(status string) map[string]any { return map[string]any{"status": status} }
	cases := []struct {
		name     string
		old, new map[string]any
		want     bool
	}{
		{"a run ends", plain("active"), plain("completed"), true},
		{"a run fails", plain("active"), plain("failed"), true},
		{"a claim", plain("waiting"), plain("active"), false},
		{"progress", plain("active"), plain("active"), false},
		{"an add", nil, seq("waiting"), false},
		{"a waiting job of a sequence is cancelled", seq("waiting"), seq("cancelled"), true},
		{"a failed job of a sequence is removed", seq("failed"), nil, true},
		{"a waiting job without one is cancelled", plain("waiting"), plain("cancelled"), false},
		{"a finished job of a sequence is removed", seq("completed"), nil, true},
		{"a finished job of a sequence is rewritten", seq("completed"), seq("completed"), false},
		{"a job of a sequence is delayed", seq("waiting"), seq("waiting"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := slotsMayBeFree(changefeed.Change{Old: c.old, New: c.new}); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestFindCycle(t *testing.T) {
	// Jobs named by letters, their ids made from them (SetDependsOn takes job ids only).
	name := map[string]string{}
	id := func(n string) string {
		u := job.UniqueID(n)
		name[u] = n
		return u
	}
	mk := func(n string, parents ...string) *job.Job {
		j := job.New(nil, job.Options{})
		j.ID = id(n)
		if len(parents) > 0 {
			ids := make([]string, len(parents))
			for i, p := range parents {
				ids[i] = id(p)
			}
			j.SetDependsOn(ids...)
		}
		return j
	}
	cases := []struct {
		name string
		jobs []*job.Job
		want []string
	}{
		{"none", []*job.Job{mk("a"), mk("b", "a"), mk("c", "a", "b")}, nil},
		{"a diamond", []*job.Job{mk("d", "b", "c"), mk("b", "a"), mk("c", "a"), mk("a")}, nil},
		{"two", []*job.Job{mk("a", "b"), mk("b", "a")}, []string{"a", "b", "a"}},
		{"three, behind a root", []*job.Job{mk("r"), mk("x", "r", "z"), mk("y", "x"), mk("z", "y")}, []string{"x", "z", "y", "x"}},
		{"parents outside the call", []*job.Job{mk("a", "elsewhere")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := make(map[string]*job.Job)
			for _, j := range c.jobs {
				in[j.ID] = j
			}
			var got []string
			for _, u := range findCycle(c.jobs, in) {
				got = append(got, name[u])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
