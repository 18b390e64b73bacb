package rdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// LimitsSuffix names the side table of a queue's limits: one document per job name, with
// its rate limit as a token bucket and its daily window. The Node.js library never reads
// it.
const LimitsSuffix = "_limits"

// StoredLimit is a limit document: Starts tokens that refill over Per (milliseconds).
// The document also holds the bucket's level ("tokens") and when it was last taken from
// ("at", epoch seconds), which only TakeTokens and ReturnTokens read and write.
type StoredLimit struct {
	Name   string  `rethinkdb:"id"`
	Starts int     `rethinkdb:"starts"`
	Per    float64 `rethinkdb:"per"`
	// From, To and Location are the daily window ("15:04" clock times and an IANA zone);
	// empty From and To: none.
	From     string `rethinkdb:"from"`
	To       string `rethinkdb:"to"`
	Location string `rethinkdb:"location"`
	// Running caps the jobs of the name active at once (0: no cap).
	Running int `rethinkdb:"running"`
}

// GroupLimitPrefix starts the id of a group's running limit in the limits table, followed
// by the group ("" for the default of every group without one): no job name may start
// with it.
const GroupLimitPrefix = "rjq:group:"

// PutGroupLimit writes the running limit of group ("": the default), keeping its rate;
// running 0 removes it, so that the group goes by the default (and the default is none).
func (t *Table) PutGroupLimit(ctx context.Context, group string, running int) error {
	if running == 0 {
		return t.unsetGroupFields(ctx, group, "running")
	}
	return t.putGroupDoc(ctx, group, map[string]any{"running": running})
}

// PutGroupRate writes the rate limit of group ("": the default), keeping its running
// limit: starts in any span of per (milliseconds); starts 0 removes it, so that the group
// goes by the default (and the default is none).
func (t *Table) PutGroupRate(ctx context.Context, group string, starts int, per float64) error {
	if starts == 0 {
		return t.unsetGroupFields(ctx, group, "starts", "per")
	}
	return t.putGroupDoc(ctx, group, map[string]any{"starts": starts, "per": per})
}

// putGroupDoc merges fields into the limits document of group.
func (t *Table) putGroupDoc(ctx context.Context, group string, fields map[string]any) error {
	doc := map[string]any{"id": GroupLimitPrefix + group, "group": group, "queueId": t.QueueID}
	for k, v := range fields {
		doc[k] = v
	}
	_, err := t.Write(ctx, t.Side(LimitsSuffix).Insert(doc, r.InsertOpts{Conflict: "update"}))
	return err
}

// unsetGroupFields removes fields from the limits document of group, and the document
// when it is left with neither a running limit nor a rate.
func (t *Table) unsetGroupFields(ctx context.Context, group string, fields ...any) error {
	_, err := t.Write(ctx, t.Side(LimitsSuffix).Get(GroupLimitPrefix+group).Replace(func(doc r.Term) any {
		rest := doc.Without(fields...)
		return r.Branch(doc.Eq(nil), nil, rest.HasFields("running").Or(rest.HasFields("starts")), rest, nil)
	}))
	return err
}

// PutLimit writes the limit l, replacing one of the same name with a full bucket.
func (t *Table) PutLimit(ctx context.Context, l StoredLimit) error {
	doc := map[string]any{
		"id": l.Name, "starts": l.Starts, "per": l.Per, "tokens": l.Starts, "at": r.Now().ToEpochTime(),
		"from": l.From, "to": l.To, "location": l.Location, "running": l.Running, "queueId": t.QueueID,
	}
	_, err := t.Write(ctx, t.Side(LimitsSuffix).Insert(doc, r.InsertOpts{Conflict: "replace"}))
	return err
}

// DeleteLimit removes the limit of name and reports whether there was one.
func (t *Table) DeleteLimit(ctx context.Context, name string) (bool, error) {
	return t.deleteSide(ctx, LimitsSuffix, name)
}

// LimitSet is the limits table as Limits reads it.
type LimitSet struct {
	// Names are the limits by job name, by name.
	Names []StoredLimit
	// Groups are the running limits of groups ("": the default), and GroupRates their rate
	// limits, each positive: a group that is not in one goes by the default's.
	Groups     map[string]int
	GroupRates map[string]GroupRate
	// Bad are the documents that are not limits (written by hand, say), left out so that
	// they cannot switch off the others.
	Bad []error
}

// Limits reads every limit: by name, and the running limits of groups. A queue without a
// limits table has none.
func (t *Table) Limits(ctx context.Context) (LimitSet, error) {
	var docs []map[string]any
	tbl := t.Side(LimitsSuffix)
	if err := t.readSide(ctx, tbl, limitDocs(tbl), &docs); err != nil {
		return LimitSet{}, err
	}
	return limitSet(docs), nil
}

// limitDocs reads the documents of the limits table tbl, by id.
func limitDocs(tbl r.Term) r.Term { return tbl.OrderBy("id") }

// limitSet reads the documents of a limits table.
func limitSet(docs []map[string]any) LimitSet {
	set := LimitSet{Groups: make(map[string]int), GroupRates: make(map[string]GroupRate)}
	for _, doc := range docs {
		if id, _ := doc["id"].(string); strings.HasPrefix(id, GroupLimitPrefix) {
			group := strings.TrimPrefix(id, GroupLimitPrefix)
			running, rate, err := groupLimitFrom(doc)
			if err != nil {
				set.Bad = append(set.Bad, fmt.Errorf("group limit document %q: %w", id, err))
				continue
			}
			// A 0, written before a 0 removed the field, is no limit of the group's own.
			if running != nil && *running > 0 {
				set.Groups[group] = *running
			}
			if rate != nil && rate.Starts > 0 {
				set.GroupRates[group] = *rate
			}
			continue
		}
		l, err := limitFrom(doc)
		if err != nil {
			set.Bad = append(set.Bad, err)
			continue
		}
		set.Names = append(set.Names, l)
	}
	return set
}

// GroupRate is a group's rate limit: at most Starts starts in any span of Per
// (milliseconds); zero Starts: none.
type GroupRate struct {
	Starts int
	Per    float64
}

// groupLimitFrom reads the running limit and the rate of a group's limits document, each
// nil when the document has none.
func groupLimitFrom(doc map[string]any) (running *int, rate *GroupRate, err error) {
	whole := func(k string) (int, bool, bool) {
		if doc[k] == nil {
			return 0, false, true
		}
		n, ok := docfmt.Number(doc[k])
		return int(n), true, ok && n == math.Trunc(n) && n >= 0
	}
	n, has, ok := whole("running")
	if !ok {
		return nil, nil, errors.New("want running as a whole number, not negative")
	}
	if has {
		running = &n
	}
	starts, hasStarts, okStarts := whole("starts")
	per, okPer := docfmt.Number(doc["per"])
	switch {
	case !hasStarts && doc["per"] == nil:
	case !okStarts || !okPer || per < 0 || (starts > 0) != (per > 0):
		return nil, nil, errors.New("want starts as a whole number and per as milliseconds, both 0 or both above 0")
	default:
		rate = &GroupRate{Starts: starts, Per: per}
	}
	if running == nil && rate == nil {
		return nil, nil, errors.New("want running, or starts and per")
	}
	return running, rate, nil
}

// limitFrom reads a limit document; the bucket's level and time are the server's business.
func limitFrom(doc map[string]any) (StoredLimit, error) {
	var l StoredLimit
	var ok bool
	str := func(k string) string {
		v, isStr := doc[k].(string)
		if doc[k] != nil && !isStr {
			ok = false
		}
		return v
	}
	ok = true
	l.Name = str("id")
	l.From, l.To, l.Location = str("from"), str("to"), str("location")
	running, okRunning := docfmt.Number(doc["running"])
	if doc["running"] == nil {
		running, okRunning = 0, true
	}
	starts, okStarts := docfmt.Number(doc["starts"])
	per, okPer := docfmt.Number(doc["per"])
	if doc["starts"] == nil {
		starts, okStarts = 0, true
	}
	if doc["per"] == nil {
		per, okPer = 0, true
	}
	if !ok || l.Name == "" || !okStarts || !okPer || !okRunning || starts != math.Trunc(starts) || starts < 0 || per < 0 ||
		running != math.Trunc(running) || running < 0 {
		return StoredLimit{}, fmt.Errorf("limit document %v: want id, from, to, location as strings and starts, per, running as numbers", doc["id"])
	}
	l.Starts, l.Per, l.Running = int(starts), per, int(running)
	return l, nil
}

// TakeTokens takes up to want tokens from the bucket of name, atomically (one update of
// its document, so workers taking at once never get more than the bucket holds), and
// returns how many it took and how long until the next token. The bucket first refills
// by Starts per Per since it was last taken from, up to Starts (a bucket missing its
// level or time counts as full). A name without a bucket (its limit was removed, or has
// no rate) gives what was wanted.
//
// The bucket's time is stored as epoch seconds, a number, so that the arithmetic is the
// same on the server and here: the tokens taken are worked out from the old and new
// document, and nothing but the bucket is stored.
func (t *Table) TakeTokens(ctx context.Context, name string, want int) (int, time.Duration, error) {
	now := r.Now().ToEpochTime()
	term := t.Side(LimitsSuffix).Get(name).Update(func(b r.Term) any {
		starts := b.Field("starts").Default(0)
		per := b.Field("per").Default(0)
		rate := r.Branch(per.Gt(0), starts.Div(per.Div(1000)), 0)
		filled := b.Field("tokens").Default(starts).Add(now.Sub(b.Field("at").Default(0)).Mul(rate))
		return r.Branch(filled.Gt(starts), starts, filled).Do(func(level r.Term) any {
			take := r.Branch(level.Floor().Lt(want), level.Floor(), want)
			return r.Branch(starts.Le(0), map[string]any{}, map[string]any{"tokens": level.Sub(take), "at": now})
		})
	}, r.UpdateOpts{ReturnChanges: "always"})
	res, err := t.Write(ctx, term)
	if err != nil {
		return 0, 0, err
	}
	if len(res.Changes) == 0 {
		return want, 0, nil
	}
	old, okOld := res.Changes[0].OldValue.(map[string]any)
	cur, okNew := res.Changes[0].NewValue.(map[string]any)
	if !okOld || !okNew {
		return want, 0, nil
	}
	starts, per := bucketNumber(cur, "starts", 0), bucketNumber(cur, "per", 0)
	if starts <= 0 || per <= 0 {
		return want, 0, nil
	}
	rate := starts / (per / 1000)
	level := min(starts, bucketNumber(old, "tokens", starts)+(bucketNumber(cur, "at", 0)-bucketNumber(old, "at", 0))*rate)
	tokens := bucketNumber(cur, "tokens", 0)
	taken := int(math.Round(level - tokens))
	if tokens >= 1 {
		return taken, 0, nil
	}
	return taken, time.Duration((1 - tokens) / rate * float64(time.Second)), nil
}

// bucketNumber is the number k of a bucket document, def when it is missing.
func bucketNumber(doc map[string]any, k string, def float64) float64 {
	if f, ok := docfmt.Number(doc[k]); ok {
		return f
	}
	return def
}

// ReturnTokens puts n tokens back in the bucket of name (up to its size), for starts that
// were taken but not used: the claim found the job taken by another queue.
func (t *Table) ReturnTokens(ctx context.Context, name string, n int) error {
	_, err := t.Write(ctx, t.Side(LimitsSuffix).Get(name).Update(func(b r.Term) any {
		starts := b.Field("starts").Default(0)
		back := b.Field("tokens").Default(starts).Add(n)
		return map[string]any{"tokens": r.Branch(back.Gt(starts), starts, back)}
	}))
	return err
}
