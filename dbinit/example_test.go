package dbinit_test

import (
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
)

// A worker waits the fixed part and its random part; a Queue Master only the random part,
// so that it is the first to create the table.
func ExampleDelay() {
	random := 250 * time.Millisecond // dbinit.RandomDelay() in a queue
	fmt.Println(dbinit.Delay(time.Second, false, random))
	fmt.Println(dbinit.Delay(time.Second, true, random))
	// Output:
	// 1.25s
	// 250ms
}
