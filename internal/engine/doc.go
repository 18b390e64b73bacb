// Package engine is the running queue behind queue.Queue: its configuration, the gate
// every call passes (ready, stopped), the database set-up, the changefeed and what its
// changes do, pause and stop, the job store that jobs save themselves through, AddJob's
// writes, and the wiring of the processor (internal/processor) and the Queue Master's
// services (master). Package queue is its public face: the types, the docs and the event
// channels; every method there calls the method of the same name here.
package engine
