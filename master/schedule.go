package master

import (
	"context"
	"time"
)

// Every calls review every interval, the first time one interval from now, until ctx
// ends. A review still running when the next is due delays it: reviews never overlap.
func Every(ctx context.Context, interval time.Duration, review func(context.Context)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if ctx.Err() != nil {
				return // both were ready: stopping wins
			}
			review(ctx)
		}
	}
}
