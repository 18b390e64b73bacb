package listing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestWaitsSaysWhatHoldsAJob(t *testing.T) {
	now := time.Date(2026, 11, 2, 20, 0, 0, 0, time.UTC) // 20:00 UTC
	later := now.Add(10 * time.Minute)
	mk := func(status job.Status, set func(*job.Job)) *job.Job {
		j := job.New(nil, job.Options{Name: "render"})
		j.ID = "job-1"
		j.Status, j.DateEnable = status, now.Add(-time.Second)
		if set != nil {
			set(j)
		}
		return j
	}
	a := Related{ID: "parent-a", Status: job.Active}
	b := Related{ID: "parent-b", Name: "fetch", Status: job.Waiting}
	done := Related{ID: "parent-c", Status: job.Completed}
	for _, tc := range []struct {
		name  string
		facts WaitFacts
		kinds []string
		texts []string
	}{
		{"due, nothing holds it", WaitFacts{Job: mk(job.Waiting, nil)}, nil, nil},
		{"a delay", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.DateEnable = later })},
			[]string{"delay"}, []string{"its delay, until " + Time(later)}},
		{"a retry delay", WaitFacts{Job: mk(job.Failed, func(j *job.Job) { j.DateEnable = later })},
			[]string{"delay"}, []string{"its retry delay, until " + Time(later)}},
		{"a group at its cap", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetGroup("tenant-q") }), GroupLimit: 1, GroupHeld: 1},
			[]string{"group"}, []string{"group tenant-q is at its cap 1/1"}},
		{"a group below its cap", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetGroup("tenant-q") }), GroupLimit: 2, GroupHeld: 1}, nil, nil},
		{"a group without a cap", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetGroup("tenant-q") }), GroupHeld: 3}, nil, nil},
		{"a group at its rate limit", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetGroup("tenant-q") }),
			GroupRate: &queue.GroupRate{Starts: 2, Per: time.Minute}, RateStarts: []time.Time{now.Add(-10 * time.Second), now.Add(-30 * time.Second)}},
			[]string{"grouprate"}, []string{"group tenant-q is at its rate limit, 2 per 1m0s: the next start in about 31s"}},
		{"a start older than the rate's span does not count", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetGroup("tenant-q") }),
			GroupRate: &queue.GroupRate{Starts: 2, Per: time.Minute}, RateStarts: []time.Time{now.Add(-10 * time.Second), now.Add(-62 * time.Second)}}, nil, nil},
		{"a name at its cap", WaitFacts{Job: mk(job.Waiting, nil), Limit: &queue.Limit{Running: 2}, NameHeld: 2},
			[]string{"name"}, []string{"job name render is at its cap 2/2"}},
		{"a name at its rate limit", WaitFacts{Job: mk(job.Waiting, nil), Limit: &queue.Limit{Starts: 10, Per: time.Minute},
			Bucket: &rdb.Bucket{Starts: 10, Per: time.Minute, Tokens: 0.5}},
			[]string{"rate"}, []string{"job name render is at its rate limit, 10 per 1m0s: the next start in about 3s"}},
		{"a name with tokens left", WaitFacts{Job: mk(job.Waiting, nil), Limit: &queue.Limit{Starts: 10, Per: time.Minute},
			Bucket: &rdb.Bucket{Starts: 10, Per: time.Minute, Tokens: 1}}, nil, nil},
		{"outside its name's window", WaitFacts{Job: mk(job.Waiting, nil), Limit: &queue.Limit{Window: &queue.Window{From: "09:00", To: "17:00"}}},
			[]string{"window"}, []string{"job name render starts only between 09:00 and 17:00 UTC: it opens at " +
				Time(time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC))}},
		{"inside its name's window", WaitFacts{Job: mk(job.Waiting, nil), Limit: &queue.Limit{Window: &queue.Window{From: "18:00", To: "06:00"}}}, nil, nil},
		{"a sequence held by another job", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetSequence("acct-7") }),
			Head: &Related{ID: "job-0", Name: "post", Status: job.Active}},
			[]string{"sequence"}, []string{"sequence acct-7 is held by job job-0 (post, active)"}},
		{"the head of its sequence", WaitFacts{Job: mk(job.Waiting, func(j *job.Job) { j.SetSequence("acct-7") }),
			Head: &Related{ID: "job-1", Status: job.Waiting}}, nil, nil},
		{"parents", WaitFacts{Job: mk(job.Blocked, nil), Parents: []Related{a, done, b}},
			[]string{"parents"}, []string{"parents parent-a (active), parent-b (fetch, waiting)"}},
		{"one parent", WaitFacts{Job: mk(job.Blocked, nil), Parents: []Related{done, a}},
			[]string{"parents"}, []string{"parent parent-a (active)"}},
		{"every parent completed", WaitFacts{Job: mk(job.Blocked, nil), Parents: []Related{done}},
			[]string{"parents"}, []string{"its release: every parent has completed"}},
		{"several at once, in order", WaitFacts{Job: mk(job.Failed, func(j *job.Job) {
			j.DateEnable = later
			j.SetGroup("tenant-q").SetSequence("acct-7")
		}), GroupLimit: 1, GroupHeld: 1, Limit: &queue.Limit{Running: 1}, NameHeld: 1, Head: &Related{ID: "job-0", Status: job.Failed}},
			[]string{"delay", "name", "group", "sequence"}, nil},
		{"a running job waits for nothing", WaitFacts{Job: mk(job.Active, func(j *job.Job) { j.SetGroup("tenant-q") }), GroupLimit: 1, GroupHeld: 1}, nil, nil},
		{"a completed one neither", WaitFacts{Job: mk(job.Completed, nil), Parents: []Related{a}}, nil, nil},
	} {
		tc.facts.Now = now
		got := Waits(tc.facts)
		var kinds, texts []string
		for _, w := range got {
			kinds, texts = append(kinds, w.Kind), append(texts, w.Text)
		}
		assert.Equal(t, tc.kinds, kinds, tc.name)
		if tc.texts != nil {
			assert.Equal(t, tc.texts, texts, tc.name)
		}
	}
}
