package testserver_test

import (
	"regexp"
	"testing"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

func TestServer(t *testing.T) {
	s := testserver.Get(t)
	t.Logf("server %s (%s), reqlite %v", s.Addr, s.Kind, s.IsReqlite())
	db := testserver.DB(t)
	if !regexp.MustCompile(`^[A-Za-z0-9_]+$`).MatchString(db) {
		t.Fatalf("DB() = %q, not a valid database name", db)
	}
	if other := testserver.DB(t); other == db {
		t.Fatalf("DB() returned %q twice", db)
	}
	sess := testserver.Session(t)
	if _, err := r.DBCreate(db).RunWrite(sess); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DB(db).TableCreate("jobs").RunWrite(sess); err != nil {
		t.Fatal(err)
	}
	docs := []map[string]any{{"n": 1}, {"n": 2}, {"n": 3}}
	if _, err := r.DB(db).Table("jobs").Insert(docs).RunWrite(sess); err != nil {
		t.Fatal(err)
	}
	var sum int
	if err := r.DB(db).Table("jobs").Sum("n").ReadOne(&sum, sess); err != nil {
		t.Fatal(err)
	}
	if sum != 6 {
		t.Fatalf("sum = %d, want 6", sum)
	}
}

func TestDBDropped(t *testing.T) {
	sess := testserver.Session(t)
	var db string
	t.Run("create", func(t *testing.T) {
		db = testserver.DB(t)
		if _, err := r.DBCreate(db).RunWrite(testserver.Session(t)); err != nil {
			t.Fatal(err)
		}
	})
	var found bool
	if err := r.DBList().Contains(db).ReadOne(&found, sess); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Fatalf("database %s still exists after its test ended", db)
	}
}
