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
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// feedTable makes a table of the test's own to follow, and returns it with a session.
func feedTable(t *testing.T) (*r.Session, r.Term) {
	t.Helper()
	s := testserver.Session(t)
	db := testserver.DB(t)
	require.NoError(t, r.DBCreate(db).Exec(s))
	require.NoError(t, r.DB(db).TableCreate("q").Exec(s))
	return s, r.DB(db).Table("q")
}

// A queue's feed brings the changes of other queues and every deletion, without the
// bulk of the documents, and classifies them as the whole documents would be; a
// document written by hand, whatever its log holds, does not end it.
func TestFollowQueueBringsOthersChangesWithoutTheirBulk(t *testing.T) {
	s, tbl := feedTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const self, other = "host:db:q:1:self", "host:db:q:2:other"
	id, id2 := "5127d082-fe7e-4e88-b1de-7093029695c3", "6127d082-fe7e-4e88-b1de-7093029695c4"
	created := time.Now().UTC().Truncate(time.Millisecond)
	doc := map[string]any{"id": id, "queueId": other, "dateCreated": created, "priority": 40,
		"status": "waiting", "progress": 0, "data": "a big payload", "result": "a big result",
		"log": []any{map[string]any{"message": "added"}}}
	writes := []r.Term{
		tbl.Insert(doc),
		tbl.Insert(map[string]any{"id": "mine", "queueId": self, "status": "waiting"}),
		tbl.Get("mine").Update(map[string]any{"status": "active"}),
		tbl.Insert(map[string]any{"id": "junk", "queueId": other, "log": "not a list", "data": 1}),
		tbl.Get(id).Update(func(d r.Term) any {
			return map[string]any{"log": d.Field("log").Append(map[string]any{"message": "two"})}
		}),
		tbl.Get(id).Update(func(d r.Term) any {
			return map[string]any{"status": "failed", "log": d.Field("log").Append(map[string]any{"message": "Job processing failed", "errorMessage": "disk full"})}
		}),
		tbl.Insert(map[string]any{"id": id2, "queueId": other, "status": "active", "dateCreated": created, "priority": 40, "log": []any{}}),
		tbl.Get(id2).Update(map[string]any{"status": "terminated", "log": []any{map[string]any{"message": "gone", "errorMessage": 7}}}),
		tbl.Get("mine").Delete(),
		tbl.Get(id).Delete(),
	}
	var got []changefeed.Change
	// The writer is waited for before the test ends: its last write's answer may come
	// after the feed has seen the change, and the test's cleanup drops the database.
	var writer sync.WaitGroup
	var once sync.Once
	defer writer.Wait()
	err := changefeed.FollowQueue(ctx, s, tbl, self, r.RunOpts{}, func() {
		once.Do(func() {
			writer.Go(func() {
				for _, w := range writes {
					if err := w.Exec(s); err != nil {
						t.Error(err)
					}
				}
			})
		})
	}, func(c changefeed.Change) {
		got = append(got, c)
		if c.New == nil && c.Old["id"] == id {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)

	require.Len(t, got, 8, "every change but self's two: %v", got)
	for _, c := range got {
		for _, d := range []map[string]any{c.Old, c.New} {
			for _, bulk := range []string{"data", "result", "log"} {
				assert.NotContains(t, d, bulk)
			}
		}
	}
	assert.Equal(t, changefeed.Added, changefeed.Classify(got[0], self).Kind)
	assert.Equal(t, id, got[0].New["id"])
	assert.Equal(t, "junk", got[1].New["id"])
	assert.Equal(t, changefeed.Log, changefeed.Classify(got[2], self).Kind, "a longer log is a log event")
	failed := changefeed.Classify(got[3], self)
	assert.Equal(t, changefeed.Failed, failed.Kind)
	assert.Equal(t, "disk full", failed.Reason, "a failure's error comes without the log")
	terminated := changefeed.Classify(got[5], self)
	assert.Equal(t, changefeed.Terminated, terminated.Kind)
	assert.Equal(t, "gone", terminated.Reason, "an error that is not text: the entry's message")
	assert.Equal(t, "mine", got[6].Old["id"], "a deletion of self's job comes: it does not say who deleted it")
	assert.Equal(t, changefeed.Removed, changefeed.Classify(got[7], self).Kind)
}
