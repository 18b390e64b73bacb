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
