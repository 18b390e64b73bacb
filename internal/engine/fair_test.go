package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Which jobs take turns, by group and priority in the order first met, and where they go.
func TestTurnsAreTakenByGroupAndPriorityInOrder(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	mk := func(group string, p job.Priority, edit func(*job.Job)) *job.Job {
		j := job.New(nil, job.Options{Priority: p})
		if group != "" {
			j.SetGroup(group)
		}
		j.DateEnable = now.Add(-time.Second)
		if edit != nil {
			edit(j)
		}
		return j
	}
	jobs := []*job.Job{
		mk("a", job.Normal, nil), // 0
		mk("", job.Normal, nil),  // 1: no group
		mk("b", job.Normal, nil), // 2
		mk("a", job.High, nil),   // 3: another priority, its own turns
		mk("a", job.Normal, nil), // 4
		mk("a", job.Normal, func(j *job.Job) { j.DateEnable = now.Add(time.Minute) }), // 5: delayed
		mk("b", job.Normal, func(j *job.Job) { j.SetDebounce(time.Second) }),          // 6: debounced
		mk("b", job.Normal, func(j *job.Job) { j.Status = job.Waiting }),              // 7: not new
		mk("b", job.Normal, func(j *job.Job) { j.DateEnable = now }),                  // 8: due now
	}
	keys, members := turnsAsked(jobs, now)
	assert.Equal(t, []turnKey{{"a", int(job.Normal)}, {"b", int(job.Normal)}, {"a", int(job.High)}}, keys)
	assert.Equal(t, map[turnKey][]int{{"a", int(job.Normal)}: {0, 4}, {"b", int(job.Normal)}: {2, 8}, {"a", int(job.High)}: {3}}, members)

	// Normal has a due head a second back; High has none (from now); a head in the
	// future cannot be (it is not due), and would not move a group past now.
	head := now.Add(-time.Second)
	asks := turnAsks(keys, members, map[int]time.Time{int(job.Normal): head, int(job.Low): now.Add(time.Hour)}, now)
	assert.Equal(t, []rdb.TurnAsk{
		{Group: "a", Priority: int(job.Normal), N: 2, From: rdb.TurnOfTime(head)},
		{Group: "b", Priority: int(job.Normal), N: 2, From: rdb.TurnOfTime(head)},
		{Group: "a", Priority: int(job.High), N: 1, From: rdb.TurnOfTime(now)},
	}, asks)

	// TurnsPerMilli turns share a millisecond; the jobs of a key take its turns in order.
	first := rdb.TurnOfTime(head)
	at := placeTurns(keys, members, []int64{first + rdb.TurnsPerMilli - 1, first, first + 5*rdb.TurnsPerMilli})
	assert.Equal(t, map[int]time.Time{
		0: head.UTC(), 4: head.Add(time.Millisecond).UTC(),
		2: head.UTC(), 8: head.UTC(),
		3: head.Add(5 * time.Millisecond).UTC(),
	}, at)

	none, _ := turnsAsked([]*job.Job{mk("", job.Normal, nil)}, now)
	assert.Empty(t, none, "an add without groups takes no turn")
}
