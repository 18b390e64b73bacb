package engine

import (
	"context"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// turnKey is a group's jobs of one priority: the jobs that take turns together.
type turnKey struct {
	group    string
	priority int
}

// turnsAsked lists the jobs of jobs that take turns of their group (rdb.TurnsPerMilli):
// the new jobs of a group, due by now and not debounced (a debounced job starts later by
// design), by group and priority in the order first met, each with the indexes of its
// jobs in jobs, in order. A job that turns out blocked (a workflow's child) keeps its
// dateEnable; the turn it was given stays unused.
func turnsAsked(jobs []*job.Job, now time.Time) (keys []turnKey, members map[turnKey][]int) {
	for i, j := range jobs {
		if j.Group() == "" || j.Status != job.Created || j.DateEnable.After(now) || j.Debounce() > 0 {
			continue
		}
		k := turnKey{j.Group(), int(j.Priority)}
		if members == nil {
			members = make(map[turnKey][]int)
		}
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], i)
	}
	return keys, members
}

// turnAsks are the asks of keys: each key's count of jobs, from the due head of its
// priority (heads: where a group without a backlog joins the others), or from now when
// the priority has no due job.
func turnAsks(keys []turnKey, members map[turnKey][]int, heads map[int]time.Time, now time.Time) []rdb.TurnAsk {
	asks := make([]rdb.TurnAsk, len(keys))
	for i, k := range keys {
		from := rdb.HeadOr(heads, k.priority, now)
		asks[i] = rdb.TurnAsk{Group: k.group, Priority: k.priority, N: len(members[k]), From: rdb.TurnOfTime(from)}
	}
	return asks
}

// placeTurns is the dateEnable of each job that took a turn, by its index in jobs: the
// jobs of a key take its turns from first, in order.
func placeTurns(keys []turnKey, members map[turnKey][]int, firsts []int64) map[int]time.Time {
	out := make(map[int]time.Time)
	for i, k := range keys {
		for n, idx := range members[k] {
			out[idx] = rdb.TimeOfTurn(firsts[i] + int64(n))
		}
	}
	return out
}

// groupTurns places the jobs of groups that AddJob adds (see rdb.TurnsPerMilli): it
// returns the dateEnable each takes, by index in jobs; nil for an add without such jobs.
// It costs the add a range read a priority and a write a group and priority. When the
// turns cannot be taken (no permission to create the side table, say), the jobs are
// added by time, as jobs without a group are, a warning says why, and this queue's adds
// take no turns for turnsPause; an error is returned only when ctx ended.
func (q *Queue) groupTurns(ctx context.Context, jobs []*job.Job) (map[int]time.Time, error) {
	now := time.Now()
	keys, members := turnsAsked(jobs, now)
	if len(keys) == 0 || now.UnixNano() < q.turnsAgain.Load() {
		return nil, nil
	}
	at, err := q.takeTurns(ctx, keys, members, now)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		q.turnsAgain.Store(time.Now().Add(turnsPause).UnixNano())
		q.log.Warn("taking the turns of groups failed; the jobs of groups are added by time, without turns, for a minute", "err", err)
		return nil, nil
	}
	return at, nil
}

// turnsPause is how long a queue's adds take no turns after taking them failed.
const turnsPause = time.Minute

// takeTurns reads the due heads of the priorities of keys and takes their turns.
func (q *Queue) takeTurns(ctx context.Context, keys []turnKey, members map[turnKey][]int, now time.Time) (map[int]time.Time, error) {
	if !q.turnsSide.Load() {
		if err := q.assertSide(ctx, rdb.SlotsSuffix); err != nil {
			return nil, err
		}
		q.turnsSide.Store(true)
	}
	var prios []int
	seen := make(map[int]bool)
	for _, k := range keys {
		if !seen[k.priority] {
			seen[k.priority] = true
			prios = append(prios, k.priority)
		}
	}
	heads, err := q.db.DueHeads(ctx, prios)
	if err != nil {
		return nil, err
	}
	firsts, err := q.db.TakeTurns(ctx, turnAsks(keys, members, heads, now), now)
	if err != nil {
		return nil, err
	}
	return placeTurns(keys, members, firsts), nil
}

// pruneBatch and pruneBatches bound what one review removes of the turns of groups.
const (
	pruneBatch   = 1000
	pruneBatches = 10
)

// pruneTurns removes the turn documents of groups that the claims have passed
// (rdb.PruneTurns), as a Queue Master's review: without it, the side table would keep one
// document for every group and priority ever added (a group a user, say). A failure is
// logged; the next review tries again.
func (q *Queue) pruneTurns(ctx context.Context) {
	now := time.Now()
	heads, err := q.db.DueHeads(ctx, rdb.PriorityValues())
	for range pruneBatches {
		if err != nil {
			q.log.Warn("review: removing the turns of groups the claims have passed failed", "err", err)
			return
		}
		var n int
		if n, err = q.db.PruneTurns(ctx, heads, now, pruneBatch); err == nil && n < pruneBatch {
			return
		}
	}
}
