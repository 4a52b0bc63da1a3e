// Command ride_franz is franz-go's side of the leader-failover tests
// (compat_tests/test_ride_through.py):
//
//	ride_franz produce --bootstrap B --topic T --count N --pace-ms P --mark M
//	    kgo's default producer (idempotent, acks=all) sends the values "0" .. "N-1" to
//	    partition 0, one every P ms; after the M-th send prints {"event": "mark"} (the test
//	    then kills the partition's leader); waits for every send and prints
//	    {"event": "produced", "acked": [...], "failed": [...], "errors": [...]}.
//	ride_franz consume --bootstrap B --topic T --count N --timeout-ms MS
//	    reads partition 0 from its start (kgo.ConsumePartitions, no group) until it holds N
//	    records or MS pass; prints {"event": "consumed", "records": [[offset, value], ...]}.
//
// MILLPOND_DRIVER_DEBUG=1 turns kgo's log (stderr) to debug.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type args struct {
	bootstrap, topic          string
	count, paceMs, mark, wait int
}

func emit(event map[string]any) {
	line, err := json.Marshal(event)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ride_franz:", err)
	os.Exit(1)
}

func client(a args, extra ...kgo.Opt) *kgo.Client {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(a.bootstrap, ",")...),
		kgo.ClientID("millpond-ride-franz"),
		// After NOT_LEADER_OR_FOLLOWER kgo reloads metadata, by default no sooner than 5 s
		// after the last load.
		kgo.MetadataMinAge(250 * time.Millisecond),
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

func produce(a args) {
	cl := client(a, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	defer cl.Close()
	var mu sync.Mutex
	acked, failed := []int{}, []int{}
	errors := map[string]bool{}
	var pending sync.WaitGroup
	for i := 0; i < a.count; i++ {
		value := i
		pending.Add(1)
		record := &kgo.Record{Topic: a.topic, Partition: 0, Value: []byte(strconv.Itoa(i))}
		cl.Produce(context.Background(), record, func(_ *kgo.Record, err error) {
			defer pending.Done()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				acked = append(acked, value)
			} else {
				failed = append(failed, value)
				errors[err.Error()] = true
			}
		})
		if i+1 == a.mark {
			emit(map[string]any{"event": "mark"})
		}
		time.Sleep(time.Duration(a.paceMs) * time.Millisecond)
	}
	pending.Wait()
	distinct := []string{}
	for e := range errors {
		distinct = append(distinct, e)
	}
	sort.Ints(acked)
	sort.Ints(failed)
	sort.Strings(distinct)
	emit(map[string]any{"event": "produced", "acked": acked, "failed": failed, "errors": distinct})
}

func consume(a args) {
	offsets := map[string]map[int32]kgo.Offset{a.topic: {0: kgo.NewOffset().AtStart()}}
	cl := client(a, kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(a.wait)*time.Millisecond)
	defer cancel()
	records := [][]any{}
	for len(records) < a.count && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			records = append(records, []any{r.Offset, string(r.Value)})
		})
	}
	emit(map[string]any{"event": "consumed", "records": records})
}

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: ride_franz produce|consume --flags"))
	}
	var a args
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	flags.StringVar(&a.bootstrap, "bootstrap", "", "the brokers, comma-separated")
	flags.StringVar(&a.topic, "topic", "", "the topic")
	flags.IntVar(&a.count, "count", 0, "records to produce or consume")
	flags.IntVar(&a.paceMs, "pace-ms", 0, "the pause after each send")
	flags.IntVar(&a.mark, "mark", -1, "sends before the mark")
	flags.IntVar(&a.wait, "timeout-ms", 90000, "how long a consumer reads")
	if err := flags.Parse(os.Args[2:]); err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "produce":
		produce(a)
	case "consume":
		consume(a)
	default:
		fail(fmt.Errorf("unknown command %s", os.Args[1]))
	}
}
