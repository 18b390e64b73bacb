package rjqweb_test

import (
	"context"
	"log"
	"net/http"
	"os"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqweb"
)

// The dashboard of an application's queue, mounted at /jobs/ of the application's own
// server behind basic authentication, with its buttons on. The page, its API and the
// Prometheus metrics (/jobs/metrics) all sit under the prefix.
func ExampleNew() {
	ctx := context.Background()
	session, err := r.Connect(r.ConnectOpts{Address: "localhost:28015"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := queue.New(ctx, &queue.ConnectOptions{Session: session}, &queue.Options{Name: "mail"})
	if err != nil {
		log.Fatal(err)
	}
	// Stop the queue, which ends the dashboard's feeds, before closing the session.
	defer session.Close()
	defer q.Stop(context.Background())

	dashboard, err := rjqweb.New(rjqweb.Options{
		Queue:   q,
		Session: session,
		Prefix:  "/jobs/",
		Actions: true,
		Auth:    rjqweb.BasicAuth("ops", os.Getenv("DASHBOARD_PASSWORD")),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/jobs/", dashboard)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("the application")) })
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
