// Package member holds what the Go `group-member` drivers share (SCENARIOS.md, `group`):
// the command line, the JSON lines they print and the `close` command read on stdin.
//
// Unlike the scenario drivers, a member prints from several goroutines (the poll loop and
// the client's rebalance callbacks), so every line is written under one lock, whole.
package member

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Args is the `group-member` command line.
type Args struct {
	Bootstrap      string
	Topic          string
	Group          string
	Assignor       string // "" = the client's default
	InstanceID     string // "" = dynamic membership
	SessionTimeout time.Duration
}

// HeartbeatInterval is a quarter of the session timeout: the contract asks for a third or
// less, and a member learns of a rebalance at its next heartbeat.
func (a Args) HeartbeatInterval() time.Duration {
	return a.SessionTimeout / 4
}

// Parse reads `<driver> group-member --bootstrap B --topic T --group G [--assignor A]
// [--instance-id ID] [--session-timeout-ms N]`; an assignor outside `assignors` fails.
func Parse(assignors ...string) Args {
	if len(os.Args) < 2 || os.Args[1] != "group-member" {
		Fail(fmt.Errorf("usage: %s group-member --bootstrap HOST:PORT --topic T --group G "+
			"[--assignor A] [--instance-id ID] [--session-timeout-ms N]", os.Args[0]))
	}
	var a Args
	var sessionMS int
	fs := flag.NewFlagSet("group-member", flag.ExitOnError)
	fs.StringVar(&a.Bootstrap, "bootstrap", "", "HOST:PORT of the broker")
	fs.StringVar(&a.Topic, "topic", "", "topic to subscribe to")
	fs.StringVar(&a.Group, "group", "", "consumer group id")
	fs.StringVar(&a.Assignor, "assignor", "", strings.Join(assignors, "|")+" (empty: the client's default)")
	fs.StringVar(&a.InstanceID, "instance-id", "", "group.instance.id (static membership)")
	fs.IntVar(&sessionMS, "session-timeout-ms", 6000, "session timeout (ms)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		Fail(err)
	}
	if a.Bootstrap == "" || a.Topic == "" || a.Group == "" {
		Fail(fmt.Errorf("--bootstrap, --topic and --group are required"))
	}
	if a.Assignor != "" && !slices.Contains(assignors, a.Assignor) {
		Fail(fmt.Errorf("--assignor %q: this client knows %v", a.Assignor, assignors))
	}
	a.SessionTimeout = time.Duration(sessionMS) * time.Millisecond
	return a
}

var out sync.Mutex

// Emit prints one event as a JSON line on stdout.
func Emit(event map[string]any) {
	line, err := json.Marshal(event)
	if err != nil {
		Fail(err)
	}
	out.Lock()
	defer out.Unlock()
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		Fail(err)
	}
}

// Record prints a processed record.
func Record(partition int32, offset int64, value []byte) {
	var v any
	if value != nil {
		v = string(value)
	}
	Emit(map[string]any{"event": "record", "partition": partition, "offset": offset, "value": v})
}

// Committed prints a commit the broker accepted: `offset` is the next one to read.
func Committed(partition int32, offset int64) {
	Emit(map[string]any{"event": "committed", "partition": partition, "offset": offset})
}

// Closed prints that the consumer closed cleanly.
func Closed() {
	Emit(map[string]any{"event": "closed"})
}

// Assignment is the member's whole assignment, kept by the rebalance callbacks: eager
// clients replace it, cooperative ones add and remove partitions incrementally.
type Assignment struct {
	mu      sync.Mutex
	owned   map[int32]bool
	printed []int32 // nil until the first print
}

// Add adds partitions to the assignment and prints it if it changed.
func (s *Assignment) Add(partitions []int32) {
	s.update(func() {
		for _, p := range partitions {
			s.owned[p] = true
		}
	})
}

// Remove removes partitions from the assignment and prints it if it changed.
func (s *Assignment) Remove(partitions []int32) {
	s.update(func() {
		for _, p := range partitions {
			delete(s.owned, p)
		}
	})
}

// Replace sets the whole assignment and prints it if it changed.
func (s *Assignment) Replace(partitions []int32) {
	s.update(func() {
		clear(s.owned)
		for _, p := range partitions {
			s.owned[p] = true
		}
	})
}

// update applies change and prints the assignment the first time and after every real
// change: a client may call its callbacks with nothing new (franz-go's assigned callback
// runs after every join), and the harness counts changes (a static member's must not move).
func (s *Assignment) update(change func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owned == nil {
		s.owned = map[int32]bool{}
	}
	change()
	now := make([]int32, 0, len(s.owned))
	for p := range s.owned {
		now = append(now, p)
	}
	slices.Sort(now)
	if s.printed != nil && slices.Equal(now, s.printed) {
		return
	}
	s.printed = now
	Emit(map[string]any{"event": "assigned", "partitions": now})
}

// CloseRequested returns a channel closed when stdin says `close`, or ends (the harness
// is gone: closing cleanly is the best a member can do then).
func CloseRequested() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			if strings.TrimSpace(lines.Text()) == "close" {
				return
			}
		}
	}()
	return done
}

// Logf writes a diagnostic line on stderr (the harness shows it when a check fails).
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" member: "+strings.TrimSuffix(format, "\n")+"\n", args...)
}

// Fail prints err on stderr and exits 1 (the contract: a failed commit ends the member).
func Fail(err error) {
	Logf("%v", err)
	os.Exit(1)
}
