package wirecount

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// frame builds one query frame as rethinkdb-go's sendQuery writes it: token, length, JSON
// with a trailing newline (json.Encoder adds one).
func frame(token uint64, json string) []byte {
	body := json + "\n"
	b := make([]byte, frameHeaderLen, frameHeaderLen+len(body))
	binary.LittleEndian.PutUint64(b, token)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(body)))
	return append(b, body...)
}

// v1Handshake is what the driver sends before its first query with the V1_0 protocol.
func v1Handshake() []byte {
	b := binary.LittleEndian.AppendUint32(nil, magicV1_0)
	b = append(b, `{"protocol_version": 0,"authentication": "n,,n=admin,r=abc","authentication_method": "SCRAM-SHA-256"}`...)
	b = append(b, 0)
	b = append(b, `{"authentication": "c=biws,r=abcdef,p=proof"}`...)
	return append(b, 0)
}

// v0Handshake is the V0_4 handshake with an auth key.
func v0Handshake() []byte {
	b := binary.LittleEndian.AppendUint32(nil, magicV0_4)
	b = binary.LittleEndian.AppendUint32(b, 6)
	b = append(b, "secret"...)
	return binary.LittleEndian.AppendUint32(b, 0x7e6970c7) // JSON protocol
}

// queries is a stream's frames after the handshake: one of each query type, one with a
// body large enough to span reads, and one whose JSON begins with spaces.
func queries() ([]byte, []int) {
	big := strconv.Quote(string(bytes.Repeat([]byte("x"), 100_000)))
	var b []byte
	b = append(b, frame(1, `[1,[1,[`+big+`]],{"db":[14,["test"]]}]`)...)
	b = append(b, frame(1, `[2]`)...)
	b = append(b, frame(1, `[2]`)...)
	b = append(b, frame(1, `[3]`)...)
	b = append(b, frame(2, `[4]`)...)
	b = append(b, frame(3, `[5]`)...)
	b = append(b, frame(4, ` [ 1 ,[1,["candidates"]]]`)...)
	return b, []int{1, 2, 2, 3, 4, 5, 1}
}

// feedIn feeds stream to a fresh parser in pieces of the sizes split returns, and returns
// the query types it reported and how many bodies contained "candidates".
func feedIn(stream []byte, split func() int) (types []int, tallied int) {
	ps := parser{wants: func() bool { return true }}
	done := func(typ int, body []byte) {
		types = append(types, typ)
		if bytes.Contains(body, []byte(`"candidates"`)) {
			tallied++
		}
	}
	for len(stream) > 0 {
		n := min(max(split(), 1), len(stream))
		ps.feed(stream[:n], done)
		stream = stream[n:]
	}
	return types, tallied
}

// The parser must find the same frames however TCP cuts the stream: whole, one byte per
// read, or at random places, so that frames span reads and reads hold several frames.
func TestParserFindsFramesAcrossAnyReads(t *testing.T) {
	body, want := queries()
	rng := rand.New(rand.NewPCG(1, 2))
	splits := map[string]func() int{
		"whole":      func() int { return 1 << 30 },
		"bytewise":   func() int { return 1 },
		"random":     func() int { return rng.IntN(40) },
		"randomWide": func() int { return rng.IntN(70_000) },
	}
	for _, hs := range []struct {
		name  string
		bytes []byte
	}{{"V1_0", v1Handshake()}, {"V0_4", v0Handshake()}} {
		for name, split := range splits {
			t.Run(hs.name+"/"+name, func(t *testing.T) {
				types, tallied := feedIn(append(append([]byte{}, hs.bytes...), body...), split)
				assert.Equal(t, want, types)
				assert.Equal(t, 1, tallied)
			})
		}
	}
}

// A connection that does not open with a known magic number is passed through uncounted,
// rather than its bytes being taken for frames.
func TestParserIgnoresUnknownProtocols(t *testing.T) {
	body, _ := queries()
	types, _ := feedIn(append([]byte("GET / HTTP/1.1\r\n\r\n"), body...), func() int { return 7 })
	assert.Empty(t, types)
}

// connect opens a driver session through the proxy and zeroes the counts, so that the
// SERVER_INFO query the driver sends on connecting is not counted.
func connect(t *testing.T, p *Proxy) *r.Session {
	t.Helper()
	sess, err := r.Connect(r.ConnectOpts{Address: p.Addr(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.NotZero(t, p.Queries(), "the driver asks for the server's id on connecting")
	p.Reset()
	return sess
}

func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := Start(testserver.Get(t).Addr)
	require.NoError(t, err)
	return p
}

func TestCountsEachQueryOnce(t *testing.T) {
	p := start(t)
	defer p.Close()
	sess := connect(t, p)
	defer sess.Close()

	for i := range 3 {
		var n int
		require.NoError(t, r.Expr(i).ReadOne(&n, sess))
		assert.Equal(t, i, n)
	}
	assert.EqualValues(t, 3, p.Queries())
	assert.Zero(t, p.Continues())
}

// A cursor read in batches costs a CONTINUE per batch after the first, each a round trip
// the caller never wrote.
func TestCountsContinues(t *testing.T) {
	p := start(t)
	defer p.Close()
	sess := connect(t, p)
	defer sess.Close()

	t.Run("finite", func(t *testing.T) {
		testserver.SkipOnReqlite(t, "it answers every finite sequence in one batch and ignores max_batch_rows")
		p.Reset()
		cur, err := r.Range(5000).Run(sess, r.RunOpts{MaxBatchRows: 100})
		require.NoError(t, err)
		var all []int
		require.NoError(t, cur.All(&all))
		require.Len(t, all, 5000)
		assert.Positive(t, p.Continues())
		assert.Equal(t, p.Queries(), 1+p.Continues(), "one START, then CONTINUEs")
		t.Logf("%d queries, %d continues", p.Queries(), p.Continues())
	})

	// An infinite range streams in batches on every server (reqlite's are 40 rows); the
	// read stops partway, so closing the cursor sends a STOP.
	t.Run("infinite", func(t *testing.T) {
		p.Reset()
		cur, err := r.Range().Run(sess, r.RunOpts{MaxBatchRows: 40})
		require.NoError(t, err)
		var n int
		for i := range 100 {
			require.True(t, cur.Next(&n), "row %d: %v", i, cur.Err())
			require.Equal(t, i, n)
		}
		_ = cur.Close() // reqlite answers a STOP of a range with an error; it is still sent
		assert.GreaterOrEqual(t, p.Continues(), uint64(2), "100 rows in batches of 40")
		// The driver's Close can return before the proxy has read its STOP (here it does
		// not wait for the server's answer), so the count may lag a moment.
		assert.Eventually(t, func() bool { return p.Queries() == 2+p.Continues() },
			5*time.Second, 10*time.Millisecond, "one START, CONTINUEs, one STOP: got %d queries, %d continues", p.Queries(), p.Continues())
		t.Logf("%d queries, %d continues", p.Queries(), p.Continues())
	})
}

func TestResetZeroesCounts(t *testing.T) {
	p := start(t)
	defer p.Close()
	sess := connect(t, p)
	defer sess.Close()
	tally := p.Tally("tallied")
	both := p.Tally("tallied", "also")

	var s string
	require.NoError(t, r.Expr("tallied").ReadOne(&s, sess))
	require.NoError(t, r.Expr("other").ReadOne(&s, sess))
	require.NoError(t, r.Add("tallied", "also").ReadOne(&s, sess))
	assert.EqualValues(t, 3, p.Queries())
	assert.EqualValues(t, 2, tally.Count())
	assert.EqualValues(t, 1, both.Count(), "only frames with every string")
	p.Reset()
	assert.Zero(t, p.Queries())
	assert.Zero(t, p.Continues())
	assert.Zero(t, tally.Count())
	assert.Zero(t, both.Count())
	require.NoError(t, r.Expr("tallied").ReadOne(&s, sess))
	assert.EqualValues(t, 1, p.Queries())
	assert.EqualValues(t, 1, tally.Count())
}

// Close drops connections still open and waits for every goroutine it started, so a
// proxy per test or benchmark leaks nothing.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	testserver.Get(t) // before the snapshot: finding the server may start goroutines
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	p := start(t)
	sess := connect(t, p)
	var n int
	require.NoError(t, r.Expr(1).ReadOne(&n, sess))

	require.NoError(t, p.Close(), "with the session still connected")
	require.NoError(t, p.Close(), "twice")
	err := r.Expr(1).ReadOne(&n, sess)
	assert.Error(t, err, "the proxy has dropped the connection")
	_ = sess.Close()
}

// A proxy whose target refuses drops its clients, and Close still ends cleanly.
func TestDeadTargetDropsClients(t *testing.T) {
	// The driver leaves its host pool's decay goroutine behind when Connect fails.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/hailocab/go-hostpool.(*epsilonGreedyHostPool).epsilonGreedyDecay"))
	p, err := Start("127.0.0.1:1")
	require.NoError(t, err)
	_, err = r.Connect(r.ConnectOpts{Address: p.Addr(), Timeout: 2 * time.Second})
	assert.Error(t, err)
	require.NoError(t, p.Close())
}

func ExampleProxy() {
	p, err := Start("127.0.0.1:28015")
	if err != nil {
		panic(err)
	}
	defer p.Close()
	// Connect a driver session to p.Addr(), call p.Reset() after setup, run the code to
	// measure, then read p.Queries().
	fmt.Println(p.Host())
	// Output: 127.0.0.1
}

// echo is a TCP server that writes back what it reads, for the fault tests.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends a byte through c and reports whether it came back within d.
func roundTrip(c net.Conn, d time.Duration) bool {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte{'x'}); err != nil {
		return false
	}
	b := make([]byte, 1)
	_, err := io.ReadFull(c, b)
	return err == nil
}

func TestPartitionResetsAndRefusesForAWhile(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if !roundTrip(before, time.Second) {
		t.Fatal("no echo before the partition")
	}
	p.Partition(300 * time.Millisecond)
	if roundTrip(before, time.Second) {
		t.Error("an open connection still answers after the partition began")
	}
	during, err := net.Dial("tcp", p.Addr())
	if err == nil {
		if roundTrip(during, 100*time.Millisecond) {
			t.Error("a new connection answers during the partition")
		}
		during.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, err := net.Dial("tcp", p.Addr())
		if err == nil && roundTrip(after, time.Second) {
			after.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("new connections do not answer after the partition")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBlackholeSilencesForGood(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if !roundTrip(before, time.Second) {
		t.Fatal("no echo before the blackhole")
	}
	p.Blackhole(200 * time.Millisecond)
	if roundTrip(before, 300*time.Millisecond) {
		t.Error("an open connection answers in the blackhole")
	}
	time.Sleep(300 * time.Millisecond) // past the blackhole: the test is of what comes after it
	if roundTrip(before, 300*time.Millisecond) {
		t.Error("a silenced connection answers again")
	}
	after, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !roundTrip(after, time.Second) {
		t.Error("a new connection does not answer after the blackhole")
	}
}
