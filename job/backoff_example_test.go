package job_test

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func ExampleJob_SetBackoff() {
	b := job.Backoff{Exponential: true, Min: time.Second, Max: 10 * time.Second}
	j := job.New(nil, job.DefaultOptions()).SetBackoff(b)
	if err := j.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for n := 1; n <= 5; n++ {
		fmt.Println(n, j.Backoff().Delay(j.RetryDelay, n))
	}
	// Output:
	// 1 1s
	// 2 2s
	// 3 4s
	// 4 8s
	// 5 10s
}

func ExampleJob_SetUniqueKey() {
	j := job.New(nil, job.DefaultOptions()).SetUniqueKey("invoice-2026-11")
	fmt.Println(j.ID == job.UniqueID("invoice-2026-11"), j.UniqueKey())
	// Output: true invoice-2026-11
}
