package master_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/master"
)

// Every runs a review on an interval until its context ends; a queue runs master.Review
// in it.
func ExampleEvery() {
	ctx, stop := context.WithCancel(context.Background())
	reviews := 0
	master.Every(ctx, 10*time.Millisecond, func(context.Context) {
		reviews++
		if reviews == 3 {
			stop()
		}
	})
	fmt.Println(reviews, "reviews")
	// Output: 3 reviews
}
