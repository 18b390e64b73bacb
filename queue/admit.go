package queue

import (
	"context"
	"sync"
	"time"
)

// limiter is a processor's view of the table's limits (see Limit). Only the processing
// loop reads and writes it, but for stale, which SetLimit and RemoveLimit set.
type limiter struct {
	mu    sync.Mutex
	stale bool

	read   time.Time
	limits map[string]limit
	// emptyUntil holds back a rate-limited name whose bucket was found empty, until its
	// next token.
	emptyUntil map[string]time.Time
}

// limitsChanged makes the loop read the limits again before its next claim.
func (p *processor) limitsChanged() {
	p.lim.mu.Lock()
	p.lim.stale = true
	p.lim.mu.Unlock()
	p.signal()
}

// refreshLimits reads the limits when limitsRefresh has passed or they changed here. A
// limit that does not parse (written by hand) is ignored and logged; a failed read keeps
// the limits known.
func (p *processor) refreshLimits(ctx context.Context, now time.Time) {
	l := &p.lim
	l.mu.Lock()
	due := l.stale || now.Sub(l.read) >= limitsRefresh
	l.stale = false
	l.mu.Unlock()
	if !due {
		return
	}
	l.read = now // after a failure too: the next try is limitsRefresh later
	stored, bad, err := p.q.db.Limits(ctx)
	if err != nil {
		p.q.log.Warn("reading the limits failed; the known ones stay", "err", err)
		return
	}
	for _, err := range bad {
		p.q.log.Warn("a stored limit cannot be read and is ignored", "err", err)
	}
	l.limits = make(map[string]limit, len(stored))
	for _, s := range stored {
		parsed, err := parseLimit(s.Name, limitOf(s))
		if err != nil {
			p.q.log.Warn("a stored limit is not valid and is ignored", "name", s.Name, "err", err)
			continue
		}
		l.limits[s.Name] = parsed
	}
}

// held returns the job names a claim at now leaves out: outside their window, or with an
// empty bucket; and the earliest time one of them may start again (zero when none).
func (p *processor) held(ctx context.Context, now time.Time) (names []string, until time.Time) {
	p.refreshLimits(ctx, now)
	l := &p.lim
	sooner := func(t time.Time) {
		if until.IsZero() || t.Before(until) {
			until = t
		}
	}
	if len(l.limits) > 0 {
		// Limits set or removed elsewhere, or a window opening on a day the clock jumps,
		// are seen within limitsRefresh even while the loop has nothing else to do.
		sooner(now.Add(limitsRefresh))
	}
	for name, lim := range l.limits {
		if lim.window != nil {
			if open, opens := lim.window.at(now); !open {
				names = append(names, name)
				sooner(opens)
				continue
			}
		}
		if t, ok := l.emptyUntil[name]; ok {
			if now.Before(t) && lim.starts > 0 {
				names = append(names, name)
				sooner(t)
				continue
			}
			delete(l.emptyUntil, name)
		}
	}
	return names, until
}

// admit takes rate tokens for the candidates of rate-limited names and keeps those it got
// one for, in order; the others stay waiting, and their name is held back until its next
// token. tokens maps the kept candidates that took a token to their name, so that a
// token a claim did not use can be put back.
func (p *processor) admit(ctx context.Context, docs []map[string]any, now time.Time) (kept []map[string]any, tokens map[string]string) {
	l := &p.lim
	want := make(map[string]int)
	for _, doc := range docs {
		if name, _ := doc["name"].(string); l.limits[name].starts > 0 {
			want[name]++
		}
	}
	if len(want) == 0 {
		return docs, nil
	}
	got := make(map[string]int, len(want))
	for name, n := range want {
		taken, wait, err := p.q.db.TakeTokens(ctx, name, n)
		if err != nil {
			p.q.log.Warn("taking rate tokens failed; the jobs of this name wait", "name", name, "err", err)
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
	for _, doc := range docs {
		name, _ := doc["name"].(string)
		if l.limits[name].starts > 0 {
			if got[name] == 0 {
				continue
			}
			got[name]--
			id, _ := doc["id"].(string)
			tokens[id] = name
		}
		kept = append(kept, doc)
	}
	return kept, tokens
}

// returnTokens puts back the tokens of the candidates that took one (tokens: id → name)
// and that unused reports: the claim left them out, or another queue took them first.
func (p *processor) returnTokens(ctx context.Context, tokens map[string]string, unused func(id string) bool) {
	back := make(map[string]int)
	for id, name := range tokens {
		if unused(id) {
			back[name]++
		}
	}
	for name, n := range back {
		if err := p.q.db.ReturnTokens(ctx, name, n); err != nil {
			p.q.log.Info("putting back unused rate tokens failed", "name", name, "err", err)
		}
	}
}

// soonest is when the first name that admit held back may start again.
func (l *limiter) soonest(now time.Time) (time.Time, bool) {
	var first time.Time
	for _, t := range l.emptyUntil {
		if t.After(now) && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first, !first.IsZero()
}
