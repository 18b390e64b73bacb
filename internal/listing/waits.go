package listing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/internal/window"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Wait is one thing a job that has not started waits for, as rjq show and the
// dashboard's job page say it (in JSON: waitsFor).
type Wait struct {
	// Kind is what holds the job: "delay" (its dateEnable), "window" (its name's daily
	// window), "rate" (its name's rate limit), "name" (its name's running limit), "group"
	// (its group's running limit), "grouprate" (its group's rate limit), "sequence" (an
	// earlier job of its sequence) or "parents" (the parents of a job of a workflow that
	// have not completed).
	Kind string `json:"kind"`
	// Text says it in a sentence.
	Text string `json:"text"`
	// Key is the name, group or sequence that holds the job, for those kinds.
	Key string `json:"key,omitempty"`
	// Held and Limit are the runs that hold the running limit of a name or group, and the
	// limit; for a group's rate, the starts within its span, and its starts.
	Held  int `json:"held,omitempty"`
	Limit int `json:"limit,omitempty"`
	// Until is when it ends, where that is known: a delay, a window's opening, the next
	// token of a rate limit.
	Until *time.Time `json:"until,omitempty"`
	// Jobs are the jobs it waits for: the job that holds the sequence, the parents.
	Jobs []Related `json:"jobs,omitempty"`
}

// WaitFacts is what tells why a job waits: the job, and what was read of its name's
// limit, its group's and name's running slots and its sequence (see WaitsFor).
type WaitFacts struct {
	Now time.Time
	Job *job.Job
	// GroupLimit is the running limit of the job's group (its own, else the default; 0:
	// none) and GroupHeld the runs that hold its slots.
	GroupLimit, GroupHeld int
	// GroupRate is the rate limit of the job's group (its own, else the default), nil for
	// none; RateStarts when the starts that hold it were taken (rdb.RateStarts).
	GroupRate  *queue.GroupRate
	RateStarts []time.Time
	// Limit is the limit of the job's name, nil for none; NameHeld the runs that hold its
	// running slots; Bucket its rate limit's bucket, nil when it has none.
	Limit    *queue.Limit
	NameHeld int
	Bucket   *rdb.Bucket
	// Head is the first unfinished job of the job's sequence, nil when unknown.
	Head *Related
	// Parents are the job's parents (see Workflow).
	Parents []Related
}

// Waits says what the job of f waits for, from f alone: nothing for a job that is not
// waiting, failed (to be retried) or blocked, nor for one that holds no reason to wait
// (it is due, and waits for a free worker).
func Waits(f WaitFacts) []Wait {
	j := f.Job
	var out []Wait
	switch j.Status {
	case job.Blocked:
		return parentWaits(f.Parents)
	case job.Waiting, job.Failed:
	default:
		return nil
	}
	if j.DateEnable.After(f.Now) {
		what := "its delay"
		if j.Status == job.Failed {
			what = "its retry delay"
		}
		until := j.DateEnable
		out = append(out, Wait{Kind: "delay", Text: what + ", until " + Time(until), Until: &until})
	}
	out = append(out, nameWaits(j.Name, f)...)
	if g := j.Group(); g != "" && f.GroupLimit > 0 && f.GroupHeld >= f.GroupLimit {
		out = append(out, Wait{Kind: "group", Key: g, Held: f.GroupHeld, Limit: f.GroupLimit,
			Text: fmt.Sprintf("group %s is at its cap %d/%d", g, f.GroupHeld, f.GroupLimit)})
	}
	out = append(out, groupRateWaits(j.Group(), f)...)
	if s := j.Sequence(); s != "" && f.Head != nil && f.Head.ID != j.ID {
		out = append(out, Wait{Kind: "sequence", Key: s, Jobs: []Related{*f.Head},
			Text: fmt.Sprintf("sequence %s is held by job %s", s, relatedText(*f.Head))})
	}
	return out
}

// nameWaits are the waits of the limit of job name name: its window, its rate, its
// running limit.
func nameWaits(name string, f WaitFacts) []Wait {
	l := f.Limit
	if l == nil {
		return nil
	}
	var out []Wait
	if w := l.Window; w != nil {
		if win, err := window.Parse(w.From, w.To, w.Location); err == nil {
			if open, opens := win.At(f.Now); !open {
				loc := w.Location
				if loc == "" {
					loc = "UTC"
				}
				out = append(out, Wait{Kind: "window", Key: name, Until: &opens,
					Text: fmt.Sprintf("job name %s starts only between %s and %s %s: it opens at %s", name, w.From, w.To, loc, Time(opens))})
			}
		}
	}
	if b := f.Bucket; b != nil && b.Tokens < 1 {
		until := f.Now.Add(b.Next())
		out = append(out, Wait{Kind: "rate", Key: name, Until: &until,
			Text: fmt.Sprintf("job name %s is at its rate limit, %d per %v: the next start in about %v", name, b.Starts, b.Per, b.Next().Round(time.Second))})
	}
	if l.Running > 0 && f.NameHeld >= l.Running {
		out = append(out, Wait{Kind: "name", Key: name, Held: f.NameHeld, Limit: l.Running,
			Text: fmt.Sprintf("job name %s is at its cap %d/%d", name, f.NameHeld, l.Running)})
	}
	return out
}

// groupRateWaits is the wait of a job of group g whose rate's starts within its span (and
// rdb.RateSlack) number its limit: until the oldest of them leaves the span.
func groupRateWaits(g string, f WaitFacts) []Wait {
	rate := f.GroupRate
	if g == "" || rate == nil || rate.Starts <= 0 {
		return nil
	}
	span := rate.Per + rdb.RateSlack
	var within []time.Time
	for _, at := range f.RateStarts {
		if at.Add(span).After(f.Now) {
			within = append(within, at)
		}
	}
	if len(within) < rate.Starts {
		return nil
	}
	until := slices.MinFunc(within, time.Time.Compare).Add(span)
	return []Wait{{Kind: "grouprate", Key: g, Held: len(within), Limit: rate.Starts, Until: &until,
		Text: fmt.Sprintf("group %s is at its rate limit, %d per %v: the next start in about %v", g, rate.Starts, rate.Per,
			until.Sub(f.Now).Round(time.Second))}}
}

// parentWaits is the wait of a blocked job: its parents that have not completed.
func parentWaits(parents []Related) []Wait {
	var open []Related
	var texts []string
	for _, p := range parents {
		if p.Status != job.Completed {
			open = append(open, p)
			texts = append(texts, relatedText(p))
		}
	}
	if len(open) == 0 {
		// Every parent completed: the release is under way.
		return []Wait{{Kind: "parents", Text: "its release: every parent has completed", Jobs: parents}}
	}
	word := "parents"
	if len(open) == 1 {
		word = "parent"
	}
	return []Wait{{Kind: "parents", Jobs: open, Text: word + " " + strings.Join(texts, ", ")}}
}

// MayWait reports whether j has yet to start: waiting, failed (to be retried) or
// blocked, the jobs WaitsFor speaks of.
func MayWait(j *job.Job) bool {
	return j.Status == job.Waiting || j.Status == job.Failed || j.Status == job.Blocked
}

// EnableNote is what a job's dateEnable needs beside it to be understood: a job of a
// group whose dateEnable comes before its creation was placed by AddJob at its group's
// turn in the order workers take jobs, which may be earlier than now (see rdb.TakeTurns).
func EnableNote(j *job.Job) string {
	if j.Group() != "" && j.DateEnable.Before(j.DateCreated) {
		return " (its group's turn in the order workers take jobs)"
	}
	return ""
}

// relatedText is a job as a reason names it: "id (status)", or "id (name, status)".
func relatedText(r Related) string {
	if r.Name == "" || r.Name == r.ID {
		return fmt.Sprintf("%s (%s)", r.ID, r.Status)
	}
	return fmt.Sprintf("%s (%s, %s)", r.ID, r.Name, r.Status)
}

// WaitLimits reads the limits that hold jobs back: queue.Queue does.
type WaitLimits interface {
	GroupLimits(ctx context.Context) (map[string]int, error)
	GroupRates(ctx context.Context) (map[string]queue.GroupRate, error)
	Limits(ctx context.Context) (map[string]queue.Limit, error)
}

// WaitSides reads the side tables and the index that hold jobs back: rdb.Table does.
type WaitSides interface {
	HeldCounts(ctx context.Context, keys []string) (map[string]int, error)
	ReadBucket(ctx context.Context, name string) (rdb.Bucket, bool, error)
	RateStarts(ctx context.Context, key string) ([]time.Time, error)
	SequenceHeads(ctx context.Context, keys []string) (map[string]rdb.Candidate, error)
}

// groupFacts reads into f the running limit of f.Job's group and its rate, with the rate's
// starts, and returns the slot keys to count: the group's, when it has a running limit.
func groupFacts(ctx context.Context, limits WaitLimits, sides WaitSides, f *WaitFacts) ([]string, error) {
	g := f.Job.Group()
	if g == "" {
		return nil, nil
	}
	gl, err := limits.GroupLimits(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	if f.GroupLimit = ownOrDefault(gl, g); f.GroupLimit > 0 {
		keys = append(keys, rdb.GroupSlot(g))
	}
	rates, err := limits.GroupRates(ctx)
	if err != nil {
		return nil, err
	}
	if rate := ownOrDefault(rates, g); rate.Starts > 0 {
		f.GroupRate = &rate
		if f.RateStarts, err = sides.RateStarts(ctx, rdb.GroupRateSlot(g)); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// ownOrDefault is group g's own value in m, else the default's (group "").
func ownOrDefault[V any](m map[string]V, g string) V {
	if v, ok := m[g]; ok {
		return v
	}
	return m[""]
}

// WaitsFor says what j waits for (see Waits), with parents as Workflow read them. It
// reads only what j's status needs, each a bounded read: the limits (a document per job
// name or group that has one), the slots document, the bucket of j's name, the document
// of its group's rate, the first job of j's sequence (one range read of its index). A job
// that does not wait reads nothing.
func WaitsFor(ctx context.Context, limits WaitLimits, sides WaitSides, j *job.Job, parents []Related, now time.Time) ([]Wait, error) {
	f := WaitFacts{Now: now, Job: j, Parents: parents}
	if j.Status != job.Waiting && j.Status != job.Failed {
		return Waits(f), nil
	}
	keys, err := groupFacts(ctx, limits, sides, &f)
	if err != nil {
		return nil, err
	}
	ls, err := limits.Limits(ctx)
	if err != nil {
		return nil, err
	}
	if l, ok := ls[j.Name]; ok {
		f.Limit = &l
		if l.Running > 0 {
			keys = append(keys, rdb.NameSlot(j.Name))
		}
		if l.Starts > 0 {
			b, ok, err := sides.ReadBucket(ctx, j.Name)
			if err != nil {
				return nil, err
			}
			if ok {
				f.Bucket = &b
			}
		}
	}
	held, err := sides.HeldCounts(ctx, keys)
	if err != nil {
		return nil, err
	}
	f.GroupHeld, f.NameHeld = held[rdb.GroupSlot(j.Group())], held[rdb.NameSlot(j.Name)]
	if s := j.Sequence(); s != "" {
		heads, err := sides.SequenceHeads(ctx, []string{s})
		if err != nil && !errors.Is(err, rdb.ErrNoSequenceIndex) {
			return nil, err
		}
		if h, ok := heads[s]; ok && h.Job != nil {
			f.Head = &Related{ID: h.Job.ID, Name: h.Job.Name, Status: h.Job.Status}
		}
	}
	return Waits(f), nil
}
