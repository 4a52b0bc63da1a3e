// Package scenario holds what the Go drivers share: the driver contract's command line
// (compat_tests/SCENARIOS.md), the records the produce-consume scenario writes, and the
// JSON lines the drivers print. Pass or fail is decided by the Python harness, never here.
package scenario

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

// Timeout bounds every waiting loop of a driver (the contract's 60 s).
const Timeout = 60 * time.Second

// Args is the driver command line.
type Args struct {
	Scenario    string
	Bootstrap   string
	Topic       string
	Partitions  int
	Count       int
	StartTS     int64
	Compression string
}

// Parse reads `<driver> <scenario> --bootstrap HOST:PORT --topic TOPIC [...]`.
func Parse() Args {
	if len(os.Args) < 2 {
		Fail(fmt.Errorf("usage: %s <scenario> --bootstrap HOST:PORT --topic TOPIC", os.Args[0]))
	}
	a := Args{Scenario: os.Args[1]}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fs.StringVar(&a.Bootstrap, "bootstrap", "", "HOST:PORT of the broker")
	fs.StringVar(&a.Topic, "topic", "", "topic (created by the harness)")
	fs.IntVar(&a.Partitions, "partitions", 1, "partitions of the topic")
	fs.IntVar(&a.Count, "count", 60, "records to produce")
	fs.Int64Var(&a.StartTS, "start-ts", 1700000000000, "timestamp of record 0 (ms)")
	fs.StringVar(&a.Compression, "compression", "", "none|gzip|snappy|lz4|zstd (empty: the client's default)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		Fail(err)
	}
	if a.Bootstrap == "" || a.Topic == "" {
		Fail(fmt.Errorf("--bootstrap and --topic are required"))
	}
	if a.Scenario != "produce-consume" {
		Fail(fmt.Errorf("unknown scenario %q", a.Scenario))
	}
	return a
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

// Emit prints one event as a JSON line on stdout.
func Emit(event map[string]any) {
	line, err := json.Marshal(event)
	if err != nil {
		Fail(err)
	}
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		Fail(err)
	}
}

// Produced prints the delivery report of record i.
func Produced(i int, partition int32, offset int64) {
	Emit(map[string]any{"event": "produced", "i": i, "partition": partition, "offset": offset})
}

// Header is one record header as read back; a nil value is printed as null.
type Header struct {
	Key   string
	Value []byte
}

// Consumed prints one record read back in the given phase.
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
