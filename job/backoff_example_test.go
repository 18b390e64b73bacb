package job_test

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func ExampleJob_SetBackoff() {
	j := job.New(nil, nil, job.DefaultOptions()).
		SetBackoff(job.Backoff{Exponential: true, Min: time.Second, Max: 10 * time.Second})
	for n := 1; n <= 5; n++ {
		fmt.Println(n, j.RetryDelayFor(n))
	}
	// Output:
	// 1 1s
	// 2 2s
	// 3 4s
	// 4 8s
	// 5 10s
}

func ExampleJob_SetUniqueKey() {
	j := job.New(nil, nil, job.DefaultOptions()).SetUniqueKey("invoice-2026-11")
	fmt.Println(j.ID == job.UniqueID("invoice-2026-11"), j.UniqueKey())
	// Output: true invoice-2026-11
}
