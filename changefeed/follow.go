package changefeed

import (
	"context"
	"errors"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// ErrFeedEnded is returned by Follow when the server ends the feed without an error.
var ErrFeedEnded = errors.New("changefeed: the feed ended")

// Follow subscribes to the table's changes and calls handle with each, in order, until ctx
// ends or the feed fails; subscribed is called once the feed is open. It returns ctx's
// error, or why the feed failed (a server restart or a network cut ends it at once; the
// server keeps no resume point, so changes until the next subscription are lost).
//
// ctx must have no deadline: the driver uses it for every fetch of the feed. subscribed
// may be nil.
func Follow(ctx context.Context, s r.QueryExecutor, table r.Term, opts r.RunOpts, subscribed func(), handle func(Change)) error {
	return follow(ctx, s, table.Changes(), opts, subscribed, handle)
}

// follow is Follow on a feed term.
func follow(ctx context.Context, s r.QueryExecutor, feed r.Term, opts r.RunOpts, subscribed func(), handle func(Change)) error {
	opts.Context = ctx
	cur, err := feed.Run(s, opts)
	if err != nil {
		return err
	}
	// Ending ctx ends the wait in Next; the cursor is closed here, never from another
	// goroutine, which the driver does not allow while Next runs.
	defer cur.Close()
	if subscribed != nil {
		subscribed()
	}
	var change r.ChangeResponse
	for cur.Next(&change) {
		handle(Change{Old: asMap(change.OldValue), New: asMap(change.NewValue)})
		change = r.ChangeResponse{}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := cur.Err(); err != nil {
		return err
	}
	return ErrFeedEnded
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
