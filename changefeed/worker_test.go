package changefeed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/changefeed"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// A worker's feed brings what processing acts on and leaves out what only events are made
// of; documents written by hand, whatever they hold, do not end it.
func TestFollowWorkerPassesWhatProcessingNeeds(t *testing.T) {
	s, tbl := feedTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const self, other = "host:db:q:1:self", "host:db:q:2:other"
	now := time.Now().UTC().Truncate(time.Millisecond)
	long := now.Add(-time.Hour)
	type write struct {
		name string
		w    r.Term
		pass bool // whether its change must come
	}
	// Every insert and update stamps its name on the document (step), by which the test
	// knows whose change came; a deletion is known by its document's id.
	insert := func(name string, pass bool, doc map[string]any) write {
		doc["step"] = name
		return write{name, tbl.Insert(doc), pass}
	}
	update := func(name string, pass bool, id string, fields map[string]any) write {
		f := map[string]any{"step": name}
		for k, v := range fields {
			f[k] = v
		}
		return write{name, tbl.Get(id).Update(f), pass}
	}
	deletion := func(name string, pass bool, id string) write { return write{name, tbl.Get(id).Delete(), pass} }
	jobDoc := func(id, queueID, status string, due time.Time, extra map[string]any) map[string]any {
		d := map[string]any{"id": id, "queueId": queueID, "status": status, "dateCreated": due,
			"dateEnable": due, "priority": 40, "processCount": 0, "log": []any{}}
		for k, v := range extra {
			d[k] = v
		}
		return d
	}
	claimed := map[string]any{"status": "active", "queueId": other, "dateStarted": now, "dateEnable": now.Add(time.Minute)}
	done := map[string]any{"status": "completed", "queueId": other}
	writes := []write{
		insert("a job added elsewhere", true, jobDoc("old", other, "waiting", long, nil)),
		update("a claim of a backlog's job", false, "old", claimed),
		update("an outcome elsewhere", false, "old", done),
		update("a progress elsewhere", false, "old", map[string]any{"progress": 50}),
		deletion("the deletion of a finished job", false, "old"),
		insert("another job added elsewhere", true, jobDoc("new", other, "waiting", now, nil)),
		update("a claim as the job falls due", true, "new", claimed),
		insert("self's own add", false, jobDoc("mine", self, "waiting", now, nil)),
		update("self's own claim", false, "mine", map[string]any{"status": "active"}),
		update("a cancel elsewhere of self's job", true, "mine", map[string]any{"status": "cancelled", "queueId": other}),
		update("a retry elsewhere", true, "new", map[string]any{"status": "failed"}),
		deletion("the deletion of an unfinished job", true, "new"),
		insert("a job of a group added", true, jobDoc("grouped", other, "active", long, map[string]any{"rjqGroup": "g"})),
		update("its progress", false, "grouped", map[string]any{"progress": 10}),
		update("its outcome, which frees the group's slot", true, "grouped", done),
		insert("a document without a queue id", false, map[string]any{"id": "junk1", "status": 7}),
		insert("a document with dates that are not times", true, map[string]any{"id": "junk2", "queueId": other, "status": "waiting", "dateEnable": "soon"}),
		update("its claim", true, "junk2", map[string]any{"status": "active", "dateStarted": 12}),
		insert("a document of nothing but an id", false, map[string]any{"id": "junk3"}),
		update("its update with a null status", false, "junk3", map[string]any{"status": nil, "queueId": other}),
		insert("a global pause", true, map[string]any{"id": job.StateDocumentID, "queueId": other, "state": "paused"}),
	}
	var want []string
	deleted := map[string]string{}
	for _, w := range writes {
		if w.pass {
			want = append(want, w.name)
		}
	}
	deleted["old"], deleted["new"] = "the deletion of a finished job", "the deletion of an unfinished job"
	var writer sync.WaitGroup
	var once sync.Once
	defer writer.Wait()
	var got []string
	err := changefeed.FollowWorker(ctx, s, tbl, self, r.RunOpts{}, func() {
		once.Do(func() {
			writer.Go(func() {
				for _, w := range writes {
					if err := w.w.Exec(s); err != nil {
						t.Errorf("%s: %v", w.name, err)
					}
				}
			})
		})
	}, func(c changefeed.Change) {
		if c.New == nil {
			got = append(got, deleted[c.Old["id"].(string)])
		} else {
			got = append(got, c.New["step"].(string))
		}
		for _, d := range []map[string]any{c.Old, c.New} {
			assert.NotContains(t, d, "log", "the feed leaves the bulk out")
		}
		if c.New != nil && c.New["id"] == job.StateDocumentID {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, want, got)
}
