package rjqtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqtest"
)

// Image is the payload of the resize jobs in the example.
type Image struct {
	URL   string
	Width int
}

// resize is the handler under test: it reads its payload, reports progress, logs, and
// cancels a job it can never do.
var resize = queue.HandlerFor(func(ctx context.Context, j *job.Job, img Image) (any, error) {
	if img.Width <= 0 {
		return nil, job.Cancel("no width")
	}
	if err := j.UpdateProgress(ctx, 50); err != nil {
		return nil, err
	}
	if err := j.AddLog(ctx, img.URL, "fetched", job.Information, ""); err != nil {
		return nil, err
	}
	return fmt.Sprintf("%s at %dpx", img.URL, img.Width), nil
})

// A handler test needs no server: Run claims the job in memory, runs the handler and
// records what it did.
func Example() {
	ctx := context.Background()
	res, err := rjqtest.Run(ctx, resize, job.New(Image{URL: "cat.png", Width: 300}, job.Options{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	var out string
	if err := res.Job.Result(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, res.Job.Status, res.Job.Progress, out)
	fmt.Println(res.Progress, res.Logs[0].Message, res.Logs[0].Data)

	res, _ = rjqtest.Run(ctx, resize, job.New(Image{URL: "dog.png"}, job.Options{}))
	fmt.Println(res.Outcome, res.Job.GetLastLog().Message)
	// Output:
	// completed completed 100 cat.png at 300px
	// [50] fetched cat.png
	// cancelled no width
}

// A failed run is retried after the job's retry delay, times its retry count.
func ExampleRun_retry() {
	send := func(ctx context.Context, j *job.Job) (any, error) {
		return nil, errors.New("mail server down")
	}
	j := job.New("ann@example.com", job.Options{RetryMax: 2, RetryDelay: time.Minute})
	res, err := rjqtest.Run(context.Background(), send, j)
	if err != nil {
		fmt.Println(err)
		return
	}
	last := res.Job.GetLastLog()
	fmt.Println(res.Outcome, res.Job.RetryCount, last.Type, last.ErrorMessage)
	fmt.Println("retried after", res.Job.DateEnable.Sub(res.Job.DateFinished))
	// Output:
	// failed 1 warning mail server down
	// retried after 1m0s
}

// The job's timeout cancels the handler's context, with the cause job.ErrTimeout, and
// fails the job at once.
func ExampleRun_timeout() {
	wait := func(ctx context.Context, j *job.Job) (any, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	j := job.New(nil, job.Options{Timeout: 20 * time.Millisecond, RetryMax: job.NoRetries})
	res, err := rjqtest.Run(context.Background(), wait, j)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, errors.Is(res.Err, job.ErrTimeout), res.Err)
	// Output:
	// terminated true Job timed out (run time > 20 ms)
}

// Invoice is what the billing step of a workflow returns, and its child reads.
type Invoice struct {
	Number int     `json:"number"`
	Total  float64 `json:"total"`
}

// A workflow's child, unit-tested: Run runs it as released after its parent completed
// with the result given, which ParentResult decodes as in a queue.
func ExampleWithParentResult() {
	billID := "5127d082-fe7e-4e88-b1de-7093029695c3" // the parent's id, as AddJob gave it
	receipt := func(ctx context.Context, j *job.Job) (any, error) {
		var inv Invoice
		if err := j.ParentResult(billID, &inv); err != nil {
			return nil, err
		}
		return fmt.Sprintf("receipt for invoice %d: %.2f", inv.Number, inv.Total), nil
	}
	child := job.New(nil, job.Options{Name: "receipt"}).SetDependsOn(billID)
	res, err := rjqtest.Run(context.Background(), receipt, child,
		rjqtest.WithParentResult(billID, Invoice{Number: 42, Total: 99.5}))
	if err != nil {
		fmt.Println(err)
		return
	}
	var out string
	if err := res.Job.Result(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, out)
	for _, e := range res.Job.Log {
		fmt.Println(e.Message)
	}

	_, err = rjqtest.Run(context.Background(), receipt, child, rjqtest.WithParentResult("8a6e0804-2bd0-4672-b79d-d97027f9071b", nil))
	fmt.Println(errors.Is(err, job.ErrNotParent))
	// Output:
	// completed receipt for invoice 42: 99.50
	// Job added to the queue: it waits for its parents to complete
	// Job released: every parent completed
	// Job retrieved and active
	// completed
	// true
}

// signupHandler is a web handler that adds a job: it takes a queue.Adder, which a
// *queue.Queue is in production and an rjqtest.Adder in its unit test.
func signupHandler(q queue.Adder) http.HandlerFunc {
	type welcome struct {
		Email string `json:"email"`
	}
	return func(w http.ResponseWriter, req *http.Request) {
		j := q.CreateJob(welcome{Email: req.FormValue("email")}).SetName("welcome")
		if _, err := q.AddJob(req.Context(), j); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}

// An HTTP handler that adds jobs, tested without a server.
func ExampleAdder() {
	adder := rjqtest.NewAdder(nil)
	rec := httptest.NewRecorder()
	signupHandler(adder).ServeHTTP(rec, httptest.NewRequest("POST", "/signup?email=ann@example.com", nil))

	jobs := adder.Named("welcome")
	fmt.Println(rec.Code, len(jobs), jobs[0].Status, jobs[0].Data)
	// Output:
	// 202 1 waiting map[email:ann@example.com]
}

// A signup posted twice makes one welcome job: the second add returns the first job,
// marked Duplicate. With SetUniqueFor the same holds for an hour after the job finished;
// on a real queue the job runs once.
func ExampleAdder_duplicate() {
	a := rjqtest.NewAdder(nil)
	welcome := func(email string) *job.Job {
		j := a.CreateJob(email).SetName("welcome").SetUniqueKey("welcome:" + email).SetUniqueFor(time.Hour)
		got, err := a.AddJob(context.Background(), j)
		if err != nil {
			panic(err)
		}
		return got[0]
	}
	first, second := welcome("ann@example.com"), welcome("ann@example.com")
	fmt.Println(first.Duplicate(), second.Duplicate(), first.ID == second.ID, len(a.Jobs()))
	// Output: false true true 1
}
