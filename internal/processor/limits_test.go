package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
)

// With heartbeats on, the beats bring the limits: the producer reads them itself only when
// no beat has for limitsRefresh, or when a limit was set here (a beat's read may have
// begun before it), and a failed combined beat still writes the worker entry.
func TestTheBeatsReadTheLimits(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 2, true)
	h.p.cfg.Heartbeat = 10 * time.Second
	h.p.cfg.Limits = func(set rdb.LimitSet) Limitings {
		out := Limitings{Names: map[string]Limiting{}, Groups: set.Groups}
		for _, l := range set.Names {
			out.Names[l.Name] = Limiting{Starts: l.Starts}
		}
		return out
	}
	setLimits := func(name string) {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		h.store.limits = rdb.LimitSet{Names: []rdb.StoredLimit{{Name: name, Starts: 1}}}
	}
	reads := func() (alone, withBeat int) {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		return h.store.limitReads, h.store.beatLimitReads
	}
	known := func() []string {
		var names []string
		for name := range h.p.prod.lim.limits {
			names = append(names, name)
		}
		return names
	}
	prod := h.p.prod

	setLimits("mail")
	require.NoError(t, h.p.beat(time.Now()))
	prod.refreshLimits(ctx, time.Now())
	alone, withBeat := reads()
	assert.Equal(t, 0, alone, "the beat read them")
	assert.Equal(t, 1, withBeat)
	assert.Equal(t, []string{"mail"}, known())

	// Beats keep coming: no read of its own, and what the last beat read applies.
	setLimits("sms")
	require.NoError(t, h.p.beat(time.Now()))
	prod.refreshLimits(ctx, time.Now().Add(limitsRefresh/2))
	alone, _ = reads()
	assert.Equal(t, 0, alone)
	assert.Equal(t, []string{"sms"}, known())

	// No beat for limitsRefresh (beats failing, or a long heartbeat): a read of its own.
	setLimits("push")
	prod.refreshLimits(ctx, time.Now().Add(limitsRefresh+time.Second))
	alone, _ = reads()
	assert.Equal(t, 1, alone)
	assert.Equal(t, []string{"push"}, known())

	// A beat older than the producer's own read does not bring back what it read then.
	setLimits("old")
	require.NoError(t, h.p.beat(time.Now().Add(-time.Hour)))
	h.p.prod.lim.mu.Lock()
	h.p.prod.lim.beatAt = time.Now().Add(-time.Hour)
	h.p.prod.lim.mu.Unlock()
	prod.refreshLimits(ctx, time.Now().Add(limitsRefresh+2*time.Second))
	assert.Equal(t, []string{"push"}, known())

	// A limit set here: read again, whatever a beat brought meanwhile.
	setLimits("local")
	prod.limitsChanged()
	require.NoError(t, h.p.beat(time.Now()))
	before, _ := reads()
	prod.refreshLimits(ctx, time.Now().Add(limitsRefresh+2*time.Second))
	alone, _ = reads()
	assert.Equal(t, before+1, alone)
	assert.Equal(t, []string{"local"}, known())

	// A beat whose limits fail still writes the entry, in a second query.
	h.store.mu.Lock()
	h.store.failBeatLimits, h.store.entries = 1, 0
	h.store.mu.Unlock()
	require.NoError(t, h.p.beat(time.Now()))
	h.store.mu.Lock()
	assert.Equal(t, 1, h.store.entries)
	h.store.mu.Unlock()

	// A queue that applies no limits asks for none.
	h.p.cfg.Limits = nil
	_, withBeat = reads()
	require.NoError(t, h.p.beat(time.Now()))
	_, after := reads()
	assert.Equal(t, withBeat, after)
}
