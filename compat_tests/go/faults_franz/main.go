// Command faults_franz is the franz-go driver of the fault-injection tests
// (compat_tests/test_faults_go.py). It drives millpond's control endpoint over HTTP itself
// (net/http), to show a Go test needs nothing of Python's to make the broker misbehave:
//
//	faults_franz produce --bootstrap B --control URL --topic T --partitions P --count N [--rule JSON]...
//	    produces "record-<i>" (i < N) to partition i % P with kgo's defaults (idempotent,
//	    acks=all): the first record of each partition, then (the rules POSTed to
//	    URL/v1/faults, each printed as {"event": "rule", "rule": <the answer>}) the rest;
//	    waits for every record, prints {"event": "produced", ...} (with how many
//	    Produce requests failed on their connection) and GET /v1/faults as "faults-after".
//	faults_franz consume (the same flags)
//	    installs the rules, then reads the P partitions from their start (kgo.ConsumePartitions,
//	    no group) until N records arrived; prints {"event": "consumed", "values": {...}}.
//	faults_franz clock --control URL
//	    freezes the clock, advances it an hour, resumes it; prints each answer.
//
// Timeouts are short, so a dropped request costs seconds. Exits 1, with the error on
// stderr, when a call fails or the records do not all arrive within a minute.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const runTimeout = 60 * time.Second

type rules []string

func (r *rules) String() string     { return fmt.Sprint(*r) }
func (r *rules) Set(v string) error { *r = append(*r, v); return nil }

type args struct {
	bootstrap, control, topic string
	partitions, count         int
	rules                     rules
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// call makes one call to the control endpoint and returns its JSON answer; a status
// other than 2xx is an error.
func call(method, url, body string) (json.RawMessage, error) {
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s answered %d: %s", method, url, resp.StatusCode, data)
	}
	if len(data) == 0 {
		return json.RawMessage("null"), nil
	}
	return data, nil
}

func emit(event map[string]any) {
	line, err := json.Marshal(event)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "faults_franz:", err)
	os.Exit(1)
}

func must(answer json.RawMessage, err error) json.RawMessage {
	if err != nil {
		fail(err)
	}
	return answer
}

func client(a args, extra ...kgo.Opt) *kgo.Client {
	opts := []kgo.Opt{
		kgo.SeedBrokers(a.bootstrap),
		kgo.ClientID("millpond-faults-franz"),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		// After NOT_LEADER_OR_FOLLOWER kgo reloads metadata, by default no sooner than 5 s
		// after the last load.
		kgo.MetadataMinAge(100 * time.Millisecond),
	}
	if os.Getenv("MILLPOND_DRIVER_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		fail(err)
	}
	return cl
}

// failedProduces counts the Produce requests whose connection failed under them (closed,
// or no answer in time): what a close, drop or delay rule must cause.
type failedProduces struct{ n atomic.Int64 }

func (f *failedProduces) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == 0 && e2e.Err() != nil {
		f.n.Add(1)
	}
}

func installRules(a args) {
	for _, rule := range a.rules {
		emit(map[string]any{"event": "rule", "rule": must(call("POST", a.control+"/v1/faults", rule))})
	}
}

func produce(ctx context.Context, a args) {
	failed := &failedProduces{}
	cl := client(a, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(time.Second), kgo.WithHooks(failed))
	defer cl.Close()
	started := time.Now()
	records := make([]*kgo.Record, a.count)
	for i := range records {
		records[i] = &kgo.Record{
			Topic: a.topic, Partition: int32(i % a.partitions), Value: []byte("record-" + strconv.Itoa(i)),
		}
	}
	// The rules apply once every partition has this producer's first record: a brand-new
	// producer's first sequence is taken as it comes (as Kafka does), so a refused first
	// batch overtaken by a later one in flight would leave a gap no retry can fill.
	first := min(a.partitions, a.count)
	if err := cl.ProduceSync(ctx, records[:first]...).FirstErr(); err != nil {
		fail(fmt.Errorf("produce: %w", err))
	}
	installRules(a)
	if err := cl.ProduceSync(ctx, records[first:]...).FirstErr(); err != nil {
		fail(fmt.Errorf("produce: %w", err))
	}
	emit(map[string]any{
		"event": "produced", "count": a.count, "elapsed_ms": time.Since(started).Milliseconds(),
		"failed_requests": failed.n.Load(),
	})
	emit(map[string]any{"event": "faults-after", "rules": must(call("GET", a.control+"/v1/faults", ""))})
}

func consume(ctx context.Context, a args) {
	installRules(a)
	offsets := map[int32]kgo.Offset{}
	for p := 0; p < a.partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl := client(a, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{a.topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	values := map[string][]string{}
	got := 0
	for got < a.count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			fail(fmt.Errorf("consumed %d of %d records: %w", got, a.count, ctx.Err()))
		}
		// Fetch errors (the injected ones among them) are retried by kgo; they are shown
		// here only as events.
		fetches.EachError(func(topic string, partition int32, err error) {
			emit(map[string]any{"event": "fetch-error", "partition": partition, "error": err.Error()})
		})
		fetches.EachRecord(func(r *kgo.Record) {
			key := strconv.Itoa(int(r.Partition))
			values[key] = append(values[key], string(r.Value))
			got++
		})
	}
	emit(map[string]any{"event": "consumed", "values": values})
	emit(map[string]any{"event": "faults-after", "rules": must(call("GET", a.control+"/v1/faults", ""))})
}

func clock(a args) {
	steps := []struct{ name, method, path, body string }{
		{"before", "GET", "/v1/clock", ""},
		{"freeze", "POST", "/v1/clock/freeze", ""},
		{"advance", "POST", "/v1/clock/advance", `{"ms": 3600000}`},
		{"resume", "POST", "/v1/clock/resume", ""},
	}
	for _, s := range steps {
		emit(map[string]any{"event": "clock", s.name: must(call(s.method, a.control+s.path, s.body))})
	}
}

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: faults_franz produce|consume|clock --flags"))
	}
	var a args
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	flags.StringVar(&a.bootstrap, "bootstrap", "", "the broker")
	flags.StringVar(&a.control, "control", "", "the control endpoint's URL")
	flags.StringVar(&a.topic, "topic", "", "the topic")
	flags.IntVar(&a.partitions, "partitions", 1, "its partitions")
	flags.IntVar(&a.count, "count", 0, "records to produce or consume")
	flags.Var(&a.rules, "rule", "a fault rule (JSON) to install first; repeatable")
	if err := flags.Parse(os.Args[2:]); err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	switch os.Args[1] {
	case "produce":
		produce(ctx, a)
	case "consume":
		consume(ctx, a)
	case "clock":
		clock(a)
	default:
		fail(fmt.Errorf("unknown command %s", os.Args[1]))
	}
}
