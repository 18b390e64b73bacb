package rdb

import (
	"context"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// LimitsSuffix names the side table of a queue's limits: one document per job name, with
// its rate limit as a token bucket and its daily window. The Node.js library never reads
// it.
const LimitsSuffix = "_limits"

// StoredLimit is a limit document. Starts tokens refill over Per (milliseconds); Tokens
// and At are the bucket's level and when it was last taken from.
type StoredLimit struct {
	Name   string    `rethinkdb:"id"`
	Starts int       `rethinkdb:"starts"`
	Per    float64   `rethinkdb:"per"`
	Tokens float64   `rethinkdb:"tokens"`
	At     time.Time `rethinkdb:"at"`
	// From, To and Location are the daily window ("15:04" clock times and an IANA zone);
	// empty From and To: none.
	From     string `rethinkdb:"from"`
	To       string `rethinkdb:"to"`
	Location string `rethinkdb:"location"`
}

// PutLimit writes the limit l, replacing one of the same name with a full bucket.
func (t *Table) PutLimit(ctx context.Context, l StoredLimit) error {
	doc := map[string]any{
		"id": l.Name, "starts": l.Starts, "per": l.Per, "tokens": l.Starts, "at": r.Now(),
		"from": l.From, "to": l.To, "location": l.Location, "queueId": t.QueueID,
	}
	_, err := t.Write(ctx, t.Side(LimitsSuffix).Insert(doc, r.InsertOpts{Conflict: "replace"}))
	return err
}

// DeleteLimit removes the limit of name and reports whether there was one.
func (t *Table) DeleteLimit(ctx context.Context, name string) (bool, error) {
	res, err := t.Write(ctx, t.Side(LimitsSuffix).Get(name).Delete())
	if NoTable(err) {
		return false, nil
	}
	return res.Deleted > 0, err
}

// Limits reads every limit, by name.
func (t *Table) Limits(ctx context.Context) ([]StoredLimit, error) {
	var out []StoredLimit
	tbl := t.Side(LimitsSuffix)
	err := t.readSide(ctx, tbl, tbl.OrderBy("id"), &out)
	return out, err
}

// TakeTokens takes up to want tokens from the bucket of name, atomically (one update of
// its document, so workers taking at once never get more than the bucket holds), and
// returns how many it took and how long until the next token. The bucket first refills
// by Starts per Per since it was last taken from, up to Starts. A name without a bucket
// (its limit was removed, or has no rate) gives what was wanted.
func (t *Table) TakeTokens(ctx context.Context, name string, want int) (int, time.Duration, error) {
	term := t.Side(LimitsSuffix).Get(name).Update(func(b r.Term) any {
		starts := b.Field("starts")
		rate := r.Branch(b.Field("per").Gt(0), starts.Div(b.Field("per").Div(1000)), 0)
		filled := b.Field("tokens").Add(r.Now().Sub(b.Field("at")).Mul(rate))
		return r.Expr(r.Branch(filled.Gt(starts), starts, filled)).Do(func(level r.Term) any {
			take := r.Branch(level.Floor().Lt(want), level.Floor(), want)
			return r.Branch(starts.Le(0), map[string]any{"taken": want},
				map[string]any{"tokens": level.Sub(take), "at": r.Now(), "taken": take})
		})
	}, r.UpdateOpts{ReturnChanges: "always"})
	res, err := t.Write(ctx, term)
	if err != nil {
		return 0, 0, err
	}
	if len(res.Changes) == 0 {
		return want, 0, nil
	}
	b, ok := res.Changes[0].NewValue.(map[string]any)
	if !ok {
		return want, 0, nil
	}
	num := func(k string) float64 { f, _ := b[k].(float64); return f }
	starts, per, tokens := num("starts"), num("per"), num("tokens")
	taken := int(num("taken"))
	if starts <= 0 || per <= 0 || tokens >= 1 {
		return taken, 0, nil
	}
	perToken := per / starts * float64(time.Millisecond)
	return taken, time.Duration((1 - tokens) * perToken), nil
}

// ReturnTokens puts n tokens back in the bucket of name (up to its size), for starts that
// were taken but not used: the claim found the job taken by another queue.
func (t *Table) ReturnTokens(ctx context.Context, name string, n int) error {
	_, err := t.Write(ctx, t.Side(LimitsSuffix).Get(name).Update(func(b r.Term) any {
		back := b.Field("tokens").Add(n)
		return map[string]any{"tokens": r.Branch(back.Gt(b.Field("starts")), b.Field("starts"), back)}
	}))
	return err
}
