package changefeed_test

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
)

// Another queue completed a job: the change is raised as completed (the original raised
// it as progress, since progress went from 0 to 100 too).
func ExampleClassify() {
	job := func(status string, progress float64) map[string]any {
		return map[string]any{
			"id": "5127d082-fe7e-4e88-b1de-7093029695c3", "queueId": "host:db:q:42:other",
			"dateCreated": time.Unix(0, 0), "priority": float64(40), "status": status, "progress": progress,
		}
	}
	act := changefeed.Classify(changefeed.Change{Old: job("active", 0), New: job("completed", 100)}, "host:db:q:7:self")
	fmt.Println(act.Kind, act.QueueID)

	mine := changefeed.Change{Old: job("active", 0), New: job("completed", 100)}
	mine.New["queueId"] = "host:db:q:7:self"
	fmt.Printf("%q\n", changefeed.Classify(mine, "host:db:q:7:self").Kind)
	// Output:
	// completed host:db:q:42:other
	// ""
}
