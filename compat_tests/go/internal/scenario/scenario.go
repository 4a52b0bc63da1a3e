// Package scenario holds what the Go drivers share: the driver contract's command line
// (compat_tests/SCENARIOS.md), the records the scenarios write, and the JSON lines the
// drivers print. Pass or fail is decided by the Python harness, never here.
//
// One driver process runs several scenarios, one after the other, so that a test session
// pays a client's start-up once per broker: the command line is a list of scenario runs
// separated by "--", and every event a run prints carries its "scenario" and "topic". A run
// that fails prints a "failed" event and the next run still goes ahead; the exit status is
// non-zero when any run failed.
package scenario

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// Timeout bounds every scenario run (the contract's 60 s for every waiting loop).
const Timeout = 60 * time.Second

// MaxBytes is what client-side size limits are raised to, so the broker decides
// (SCENARIOS.md: at least 4 MiB).
const MaxBytes = 4 << 20

// Scenarios the drivers know.
var known = map[string]bool{
	"produce-consume": true, "acks": true, "large": true, "admin": true, "errors": true,
}

// Args is one scenario run of the driver command line.
type Args struct {
	Scenario    string
	Bootstrap   string
	Topic       string
	Partitions  int
	Count       int
	StartTS     int64
	Compression string
}

// Parse reads `<driver> <scenario> --bootstrap HOST:PORT --topic TOPIC [...] [-- <scenario> ...]`.
func Parse() []Args {
	var runs []Args
	var segment []string
	for _, arg := range append(os.Args[1:], "--") {
		if arg != "--" {
			segment = append(segment, arg)
			continue
		}
		if len(segment) > 0 {
			runs = append(runs, parseRun(segment))
		}
		segment = nil
	}
	if len(runs) == 0 {
		Fail(fmt.Errorf("usage: %s <scenario> --bootstrap HOST:PORT --topic TOPIC [-- <scenario> ...]", os.Args[0]))
	}
	return runs
}

func parseRun(argv []string) Args {
	a := Args{Scenario: argv[0]}
	fs := flag.NewFlagSet(argv[0], flag.ExitOnError)
	fs.StringVar(&a.Bootstrap, "bootstrap", "", "HOST:PORT of the broker")
	fs.StringVar(&a.Topic, "topic", "", "topic (created by the harness, or by the admin scenario)")
	fs.IntVar(&a.Partitions, "partitions", 1, "partitions of the topic")
	fs.IntVar(&a.Count, "count", 60, "records to produce")
	fs.Int64Var(&a.StartTS, "start-ts", 1700000000000, "timestamp of record 0 (ms)")
	fs.StringVar(&a.Compression, "compression", "", "none|gzip|snappy|lz4|zstd (empty: the client's default)")
	if err := fs.Parse(argv[1:]); err != nil {
		Fail(err)
	}
	if a.Bootstrap == "" || a.Topic == "" {
		Fail(fmt.Errorf("%s: --bootstrap and --topic are required", a.Scenario))
	}
	if !known[a.Scenario] {
		Fail(fmt.Errorf("unknown scenario %q", a.Scenario))
	}
	return a
}

// current tags every event of the run in progress (runs never overlap).
var current Args

// failures counts the runs that ended early.
var failures int

// Run runs fn for a, bounded by Timeout. A run that fails prints {"event": "failed",
// "message": M} (and M on stderr) and the driver goes on with the next run, so one broken
// scenario hides none of the others; Exit then ends the driver non-zero.
func Run(a Args, fn func(ctx context.Context, a Args) error) {
	current = a
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := fn(ctx, a); err != nil {
		failures++
		Logf("%s (topic %s): %v", a.Scenario, a.Topic, err)
		Emit(map[string]any{"event": "failed", "message": err.Error()})
	}
}

// Exit ends the driver: 0 when every run finished its scenario, 1 otherwise.
func Exit() {
	if failures > 0 {
		Logf("%d run(s) failed", failures)
		os.Exit(1)
	}
	os.Exit(0)
}

// Record i of the produce-consume scenario.
type Record struct {
	Key, Value string
	Headers    [][2]string
	Timestamp  int64
}

// Want returns record i as the scenario defines it.
func (a Args) Want(i int) Record {
	return Record{
		Key:       fmt.Sprintf("key-%d", i%7),
		Value:     fmt.Sprintf("value-%d", i),
		Headers:   [][2]string{{"h1", fmt.Sprintf("v%d", i)}, {"h2", ""}},
		Timestamp: a.StartTS + int64(i)*1000,
	}
}

// ThresholdTS is the timestamp the from_timestamp phase replays from.
func (a Args) ThresholdTS() int64 {
	return a.StartTS + int64(a.Count/2)*1000
}

// Emit prints one event as a JSON line on stdout, tagged with the run's scenario and topic.
func Emit(event map[string]any) {
	event["scenario"], event["topic"] = current.Scenario, current.Topic
	line, err := json.Marshal(event)
	if err != nil {
		Fail(err)
	}
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		Fail(err)
	}
}

// Produced prints the delivery report of produce-consume's record i.
func Produced(i int, partition int32, offset int64) {
	Emit(map[string]any{"event": "produced", "i": i, "partition": partition, "offset": offset})
}

// Header is one record header as read back; a nil value is printed as null.
type Header struct {
	Key   string
	Value []byte
}

// Consumed prints one record read back in the given phase of produce-consume.
func Consumed(phase string, partition int32, offset int64, key, value []byte, headers []Header, ts int64) {
	hs := make([][2]any, 0, len(headers))
	for _, h := range headers {
		hs = append(hs, [2]any{h.Key, str(h.Value)})
	}
	Emit(map[string]any{
		"event": "record", "phase": phase, "partition": partition, "offset": offset,
		"key": str(key), "value": str(value), "headers": hs, "timestamp": ts,
	})
}

// Error prints the error line of a step expected to fail; code is nil when the client's
// error carries no Kafka error code.
func Error(step string, code *int16, err error) {
	var c any
	if code != nil {
		c = int(*code)
	}
	Emit(map[string]any{"event": "error", "step": step, "code": c, "message": err.Error()})
}

// Admin prints the outcome of an admin step: its fields, or the error that ended it.
func Admin(step string, fields map[string]any, err error) {
	event := map[string]any{"event": "admin", "step": step}
	if err != nil {
		event["error"] = err.Error()
	} else {
		for k, v := range fields {
			event[k] = v
		}
	}
	Emit(event)
}

// Acks producers, in partition order (SCENARIOS.md `acks`).
var AcksProducers = []string{"acks0", "acks1", "acksall", "idempotent"}

// AcksCount is how many records each acks producer writes.
const AcksCount = 10

// Sizes of the large scenario's two records.
const (
	LargeNear = 1_000_000
	LargeOver = 1_100_000
)

// LargeValue is the large scenario's value of n bytes: byte j is 'a' + j % 26.
func LargeValue(n int) []byte {
	v := make([]byte, n)
	for j := range v {
		v[j] = byte('a' + j%26)
	}
	return v
}

// LargeRecord prints one record the large scenario read back: its size and digest.
func LargeRecord(offset int64, value []byte) {
	sum := sha256.Sum256(value)
	Emit(map[string]any{"event": "record", "offset": offset, "size": len(value), "sha256": hex.EncodeToString(sum[:])})
}

// AdminStartTS is the timestamp of the admin scenario's record 0.
const AdminStartTS = 1700000000000

// ConfigSources are Kafka's config source names by their protocol number.
var ConfigSources = map[int8]string{
	0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
	3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
	6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG",
}

// ConfigKeys are the configs the admin scenario prints.
var ConfigKeys = []string{"retention.ms", "max.message.bytes", "cleanup.policy"}

// Configs builds the admin scenario's "configs" field from a description's entries
// (name -> value, protocol source number).
func Configs(entries map[string]ConfigEntry) map[string]any {
	out := map[string]any{"_entries": len(entries)}
	for _, k := range ConfigKeys {
		if e, ok := entries[k]; ok {
			name, known := ConfigSources[e.Source]
			if !known {
				name = fmt.Sprintf("source-%d", e.Source)
			}
			out[k] = map[string]any{"value": e.Value, "source": name}
		}
	}
	return out
}

// ConfigEntry is one described config.
type ConfigEntry struct {
	Value  any // string, or nil
	Source int8
}

// Debug reports whether MILLPOND_DRIVER_DEBUG asks for the client's log on stderr.
func Debug() bool {
	return os.Getenv("MILLPOND_DRIVER_DEBUG") != ""
}

// Logf writes a diagnostic line on stderr (never read by the harness).
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "driver: "+strings.TrimSuffix(format, "\n")+"\n", args...)
}

func str(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// Fail prints err on stderr and exits 1.
func Fail(err error) {
	fmt.Fprintf(os.Stderr, "driver: %v\n", err)
	os.Exit(1)
}

// SettleTimeout bounds Settle.
const SettleTimeout = 15 * time.Second

// Settle calls fn until done accepts its result, fn fails, or SettleTimeout (or ctx) ends,
// and returns the last result. Kafka answers an admin request once the controller committed
// the change; the broker that then serves a listing or a description may apply it a few
// milliseconds later, so a read that follows a change waits for it (a broker that never
// applies it gets the stale answer reported).
func Settle[T any](ctx context.Context, fn func() (T, error), done func(T) bool) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, SettleTimeout)
	defer cancel()
	for {
		v, err := fn()
		if err != nil || done(v) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Altered tells whether a description (Configs' output under "configs") shows the admin
// scenario's alteration: retention.ms 3600000 and max.message.bytes no longer set on the topic.
func Altered(fields map[string]any) bool {
	configs, _ := fields["configs"].(map[string]any)
	retention, _ := configs["retention.ms"].(map[string]any)
	maxBytes, _ := configs["max.message.bytes"].(map[string]any)
	return retention["value"] == "3600000" && maxBytes["source"] != "DYNAMIC_TOPIC_CONFIG"
}

// Is returns a Settle condition: the result equals want.
func Is[T comparable](want T) func(T) bool {
	return func(v T) bool { return v == want }
}
