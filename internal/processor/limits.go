package processor

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// limitsRefresh is how often the producer reads the limits again: how long a limit set
// by another process takes to apply here, for one small read. With heartbeats on, each
// beat reads them in its own query (every Heartbeat/4, 2.5 s by default), and the
// producer reads them itself only when no beat has for limitsRefresh.
const limitsRefresh = 5 * time.Second

// limiter is the producer's view of the table's limits. Only the producer's goroutine
// reads and writes it, but for stale, which LimitsChanged sets.
type limiter struct {
	mu    sync.Mutex
	stale bool

	read   time.Time
	limits map[string]Limiting
	// groups are the running limits of groups ("": the default), and rates their rate
	// limits.
	groups map[string]int
	rates  map[string]Rate
	// none is set while the limits are known and there are none (see Reserve); under mu,
	// like stale.
	none bool
	// emptyUntil holds back a rate-limited name whose bucket was found empty, until its
	// next token.
	emptyUntil map[string]time.Time
	// fullUntil holds back the jobs of a slot key (rdb.NameSlot, rdb.GroupSlot) whose
	// slots were all taken, until a slot is given back here or slotRecheck has passed
	// (under mu: slotsFreed reads it).
	fullUntil map[string]time.Time
	// freed are the keys whose slots runs of this processor gave back since the last
	// claim (under mu).
	freed []string
	// beat holds the limits the last beat read, and beatAt when it asked, until the
	// producer takes them (under mu).
	beat   *Limitings
	beatAt time.Time
}

// limitsChanged makes the producer read the limits again before its next claim.
func (p *producer) limitsChanged() {
	p.lim.mu.Lock()
	p.lim.stale = true
	p.lim.mu.Unlock()
	p.wake(true)
}

// beatLimits hands the limits a beat asked for at to the producer, which applies them
// before its next claim.
func (p *producer) beatLimits(set rdb.LimitSet, at time.Time) {
	if p.p.cfg.Limits == nil {
		return
	}
	lims := p.p.cfg.Limits(set)
	p.lim.mu.Lock()
	p.lim.beat, p.lim.beatAt = &lims, at
	p.lim.mu.Unlock()
}

// refreshLimits applies the limits a beat read since, and reads them itself when
// limitsRefresh has passed without or they changed here; a failed read keeps the limits
// known.
func (p *producer) refreshLimits(ctx context.Context, now time.Time) {
	l := &p.lim
	if p.p.cfg.Limits == nil {
		l.mu.Lock()
		l.none = true
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	beat, beatAt := l.beat, l.beatAt
	l.beat = nil
	stale := l.stale
	l.stale = false
	// A beat's read may have begun before a limit set here: a change here is read again.
	if beat != nil && !stale && beatAt.After(l.read) {
		l.read = beatAt
		l.apply(*beat)
	}
	due := stale || now.Sub(l.read) >= limitsRefresh
	l.mu.Unlock()
	if !due {
		return
	}
	l.read = now // after a failure too: the next try is limitsRefresh later
	set, err := p.p.cfg.Store.Limits(ctx)
	if err != nil {
		p.p.cfg.Log.Warn("reading the limits failed; the known ones stay", "err", err)
		return
	}
	lims := p.p.cfg.Limits(set)
	l.mu.Lock()
	l.apply(lims)
	l.mu.Unlock()
}

// apply makes lims the limits known; l.mu must be held.
func (l *limiter) apply(lims Limitings) {
	l.limits, l.groups, l.rates, l.none = lims.Names, lims.Groups, lims.GroupRates, lims.none()
}

// holdBack are the jobs a claim leaves out: of these names, groups and sequences.
type holdBack struct {
	names, groups, seqs []string
}

// holds reports whether j is held back.
func (h holdBack) holds(j *job.Job) bool {
	return contains(h.names, j.Name) || len(h.groups) > 0 && contains(h.groups, j.Group()) ||
		len(h.seqs) > 0 && contains(h.seqs, j.Sequence())
}

// held returns the jobs a claim at now leaves out: of names outside their window, with an
// empty bucket or every running slot taken, and of groups with every slot taken; and the
// earliest time one of them may start again (zero when none).
func (p *producer) held(ctx context.Context, now time.Time) (hold holdBack, until time.Time) {
	p.refreshLimits(ctx, now)
	l := &p.lim
	sooner := func(t time.Time) {
		if until.IsZero() || t.Before(until) {
			until = t
		}
	}
	l.mu.Lock()
	for _, key := range l.freed {
		delete(l.fullUntil, key)
	}
	l.freed = nil
	for key, t := range l.fullUntil {
		if !now.Before(t) {
			delete(l.fullUntil, key)
			continue
		}
		sooner(t)
		if name, ok := strings.CutPrefix(key, rdb.NameSlot("")); ok {
			hold.names = append(hold.names, name)
		} else if group, ok := strings.CutPrefix(key, rdb.GroupSlot("")); ok {
			hold.groups = append(hold.groups, group)
		} else if group, ok := strings.CutPrefix(key, rdb.GroupRateSlot("")); ok {
			hold.groups = append(hold.groups, group)
		} else if seq, ok := strings.CutPrefix(key, rdb.SequenceSlot("")); ok {
			hold.seqs = append(hold.seqs, seq)
		}
	}
	l.mu.Unlock()
	if len(l.limits) > 0 || len(l.groups) > 0 || len(l.rates) > 0 {
		// Limits set or removed elsewhere, or a window opening on a day the clock jumps,
		// are seen within limitsRefresh even while the producer has nothing else to do.
		sooner(now.Add(limitsRefresh))
	}
	for name, lim := range l.limits {
		if lim.Window != nil {
			if open, opens := lim.Window(now); !open {
				hold.names = append(hold.names, name)
				sooner(opens)
				continue
			}
		}
		if t, ok := l.emptyUntil[name]; ok {
			if now.Before(t) && lim.Starts > 0 {
				hold.names = append(hold.names, name)
				sooner(t)
				continue
			}
			delete(l.emptyUntil, name)
		}
	}
	return hold, until
}

// admit takes rate tokens for the jobs of rate-limited names and keeps those it got one
// for, in order; the others stay waiting, and their name is held back until its next
// token. tokens maps the kept jobs that took a token to their name, so that a token a
// claim did not use can be put back.
func (p *producer) admit(ctx context.Context, jobs []*job.Job, now time.Time) (kept []*job.Job, tokens map[string]string) {
	l := &p.lim
	want := make(map[string]int)
	for _, j := range jobs {
		if l.limits[j.Name].Starts > 0 {
			want[j.Name]++
		}
	}
	if len(want) == 0 {
		return jobs, nil
	}
	got := make(map[string]int, len(want))
	for name, n := range want {
		taken, wait, err := p.p.cfg.Store.TakeTokens(ctx, name, n)
		if err != nil {
			p.p.cfg.Log.Warn("taking rate tokens failed; the jobs of this name wait", "name", name, "err", err)
			taken, wait = 0, time.Second
		}
		got[name] = taken
		if taken < n {
			if l.emptyUntil == nil {
				l.emptyUntil = make(map[string]time.Time)
			}
			l.emptyUntil[name] = now.Add(max(wait, 10*time.Millisecond))
		}
	}
	tokens = make(map[string]string)
	for _, j := range jobs {
		if l.limits[j.Name].Starts > 0 {
			if got[j.Name] == 0 {
				continue
			}
			got[j.Name]--
			tokens[j.ID] = j.Name
		}
		kept = append(kept, j)
	}
	return kept, tokens
}

// returnTokens puts back the tokens of the jobs that took one (tokens: id → name) and
// that unused reports: the claim left them out, or another queue took them first.
func (p *producer) returnTokens(ctx context.Context, tokens map[string]string, unused func(id string) bool) {
	back := make(map[string]int)
	for id, name := range tokens {
		if unused(id) {
			back[name]++
		}
	}
	for name, n := range back {
		if err := p.p.cfg.Store.ReturnTokens(ctx, name, n); err != nil {
			p.p.cfg.Log.Info("putting back unused rate tokens failed", "name", name, "err", err)
		}
	}
}

// soonest is when the first name that admit held back may start again.
func (l *limiter) soonest(now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, until := range []map[string]time.Time{l.emptyUntil, l.fullUntil} {
		for _, t := range until {
			if t.After(now) && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
	}
	return first, !first.IsZero()
}
