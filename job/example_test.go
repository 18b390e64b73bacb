package job_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func ExampleNew() {
	opts := job.DefaultOptions()
	opts.Name = "send-mail"
	j := job.New(map[string]any{"to": "someone@example.com"}, opts)

	fmt.Println(j.Name, j.Status, j.Priority)
	fmt.Println(job.ValidID(j.ID), j.DateEnable.After(time.Now()))
	fmt.Println(j.Err())
	// Output:
	// send-mail created normal
	// true false
	// <nil>
}

func ExampleJob_SetPriority() {
	j := job.New("payload", job.DefaultOptions()).
		SetPriority(job.High).
		SetTimeout(30 * time.Second).
		SetRepeat(job.RepeatForever)
	fmt.Println(j.Priority, j.Timeout, j.Repeat, j.Err())

	// An invalid value is not applied; Err reports it (and Queue.AddJob refuses the job).
	j.SetPriority(7).SetRetryMax(-1)
	fmt.Println(j.Priority, j.RetryMax)
	err := j.Err()
	fmt.Println(errors.Is(err, job.ErrInvalidPriority), errors.Is(err, job.ErrInvalidRetryMax), errors.Is(err, job.ErrInvalid))
	// Output:
	// high 30s -1 <nil>
	// high 3
	// true true true
}

func ExampleParsePriority() {
	p, err := job.ParsePriority("Highest")
	fmt.Println(p, int(p), err)

	_, err = job.ParsePriority("urgent")
	fmt.Println(errors.Is(err, job.ErrInvalidPriority))
	// Output:
	// highest 10 <nil>
	// true
}

func ExampleJob_DataAs() {
	type mail struct {
		To    string `json:"to"`
		Tries int    `json:"tries"`
	}
	// A payload as read from the database: numbers are float64s.
	j := job.New(map[string]any{"to": "someone@example.com", "tries": float64(2)}, job.DefaultOptions())
	var m mail
	if err := j.DataAs(&m); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("%+v\n", m)
	// Output:
	// {To:someone@example.com Tries:2}
}

// A report that is worthless after the morning meeting: if no worker has started it by
// then, it is cancelled with the reason "deadline passed" instead of running late. A
// deadline already past is refused when the job is made.
func ExampleJob_SetDeadline() {
	meeting := time.Now().Add(2 * time.Hour)
	j := job.New("daily report", job.Options{Name: "report"}).SetDeadline(meeting)
	fmt.Println(j.Err(), j.Deadline().Equal(meeting.UTC().Truncate(time.Millisecond)))

	late := job.New("daily report", job.Options{Name: "report"}).SetDeadline(time.Now().Add(-time.Minute))
	fmt.Println(errors.Is(late.Err(), job.ErrInvalidDeadline))
	// Output:
	// <nil> true
	// true
}

// A report is split, its parts rendered side by side, and joined once every part is
// rendered: the join depends on the renders, which depend on the split. Queue.AddJob
// takes them all in one call, in any order, and adds the renders and the join blocked.
func ExampleJob_SetDependsOn() {
	split := job.New("report", job.Options{Name: "split"})
	a := job.New("part 1", job.Options{Name: "render"}).SetDependsOn(split.ID)
	b := job.New("part 2", job.Options{Name: "render"}).SetDependsOn(split.ID)
	join := job.New("report", job.Options{Name: "join"}).SetDependsOn(a.ID, b.ID)
	fmt.Println(len(join.DependsOn()), join.DependsOn()[0] == a.ID, join.Validate())

	self := job.New(nil, job.Options{})
	fmt.Println(errors.Is(self.SetDependsOn(self.ID).Err(), job.ErrInvalidDependsOn))
	// Output:
	// 2 true <nil>
	// true
}

// The edits of one document are applied one at a time, in the order they were added,
// whichever workers run them; the edits of other documents run beside them.
func ExampleJob_SetSequence() {
	edits := []*job.Job{
		job.New("insert title", job.Options{Name: "edit"}).SetSequence("doc-42"),
		job.New("fix typo", job.Options{Name: "edit"}).SetSequence("doc-42"),
		job.New("insert table", job.Options{Name: "edit"}).SetSequence("doc-7"),
	}
	for _, e := range edits {
		fmt.Println(e.Sequence(), e.Validate())
	}
	fmt.Println(errors.Is(job.New(nil, job.Options{}).SetSequence("").Err(), job.ErrInvalidSequence))
	// Output:
	// doc-42 <nil>
	// doc-42 <nil>
	// doc-7 <nil>
	// true
}

// A signup posted twice makes one welcome email, even when the first has already been
// sent: the key's finished job stands in place of new ones for a day (Queue.AddJob
// returns it, with Duplicate true). A search index rebuilt on every edit runs once per
// burst of edits, a second after the last, with the last edit's data.
func ExampleJob_SetUniqueFor() {
	welcome := job.New("ann@example.com", job.Options{Name: "welcome"}).
		SetUniqueKey("welcome:ann@example.com").SetUniqueFor(24 * time.Hour)
	reindex := job.New("doc 42", job.Options{Name: "reindex"}).
		SetUniqueKey("reindex:42").SetDebounce(time.Second)
	fmt.Println(welcome.UniqueFor(), reindex.Debounce(), welcome.Validate() == nil && reindex.Validate() == nil)

	noKey := job.New(nil, job.Options{}).SetDebounce(time.Second)
	fmt.Println(errors.Is(noKey.Validate(), job.ErrInvalidDebounce))
	// Output:
	// 24h0m0s 1s true
	// true
}
