// Command driver_franz runs millpond's client scenarios (compat_tests/SCENARIOS.md) with
// franz-go (kgo): it produces with kgo's defaults (idempotent, acks=all, the sticky
// key-hashing partitioner, snappy unless --compression says otherwise), consumes by
// partition with kgo.ConsumePartitions (no group), and looks offsets up by timestamp with
// kadm. MILLPOND_DRIVER_DEBUG=1 logs kgo's debug output on stderr.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"millpond/compat_tests/go/internal/scenario"
)

func main() {
	a := scenario.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), scenario.Timeout)
	defer cancel()
	if err := run(ctx, a); err != nil {
		scenario.Fail(err)
	}
}

func baseOpts(a scenario.Args) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(a.Bootstrap), kgo.ClientID("millpond-compat-franz")}
	if os.Getenv("MILLPOND_DRIVER_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	return opts
}

func run(ctx context.Context, a scenario.Args) error {
	if err := produce(ctx, a); err != nil {
		return err
	}
	starts := map[int32]int64{}
	for p := 0; p < a.Partitions; p++ {
		starts[int32(p)] = -2 // the log start
	}
	if err := consume(ctx, a, "beginning", starts, nil, a.Count); err != nil {
		return err
	}
	return fromTimestamp(ctx, a)
}

func produce(ctx context.Context, a scenario.Args) error {
	opts := baseOpts(a)
	switch a.Compression {
	case "": // kgo's default: snappy, falling back to none
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		return fmt.Errorf("unknown compression %q", a.Compression)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	records := make([]*kgo.Record, a.Count)
	for i := range records {
		w := a.Want(i)
		r := &kgo.Record{
			Topic:     a.Topic,
			Key:       []byte(w.Key),
			Value:     []byte(w.Value),
			Timestamp: time.UnixMilli(w.Timestamp),
		}
		for _, h := range w.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		records[i] = r
	}
	index := make(map[*kgo.Record]int, len(records))
	for i, r := range records {
		index[r] = i
	}
	// ProduceSync's results come in the order the promises fired, not the records' order.
	for _, res := range cl.ProduceSync(ctx, records...) {
		i, ok := index[res.Record]
		if !ok {
			return fmt.Errorf("a delivery report for a record never produced: %v", res.Record)
		}
		if res.Err != nil {
			return fmt.Errorf("record %d: %w", i, res.Err)
		}
		scenario.Produced(i, res.Record.Partition, res.Record.Offset)
	}
	return nil
}

// consume reads the partitions of starts from those offsets (-2: the log start) and prints
// every record until it has read want records or, when ends is given, until every
// partition reached its end offset.
func consume(ctx context.Context, a scenario.Args, phase string, starts, ends map[int32]int64, want int) error {
	offsets := map[int32]kgo.Offset{}
	for p, o := range starts {
		if o == -2 {
			offsets[p] = kgo.NewOffset().AtStart()
		} else {
			offsets[p] = kgo.NewOffset().At(o)
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	opts := append(baseOpts(a), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{a.Topic: offsets}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	read := 0
	reached := map[int32]bool{}
	done := func() bool {
		if ends == nil {
			return read >= want
		}
		return len(reached) == len(ends)
	}
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: read %d of %d records before the timeout", phase, read, want)
		}
		fetches.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "driver: fetch %s[%d]: %v\n", t, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			hs := make([]scenario.Header, 0, len(r.Headers))
			for _, h := range r.Headers {
				hs = append(hs, scenario.Header{Key: h.Key, Value: h.Value})
			}
			scenario.Consumed(phase, r.Partition, r.Offset, r.Key, r.Value, hs, r.Timestamp.UnixMilli())
			read++
			if ends != nil && r.Offset+1 >= ends[r.Partition] {
				reached[r.Partition] = true
			}
		})
	}
	return nil
}

func fromTimestamp(ctx context.Context, a scenario.Args) error {
	cl, err := kgo.NewClient(baseOpts(a)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListOffsetsAfterMilli(ctx, a.ThresholdTS(), a.Topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return fmt.Errorf("offsets for timestamp %d: %w", a.ThresholdTS(), err)
	}
	endsListed, err := adm.ListEndOffsets(ctx, a.Topic)
	if err == nil {
		err = endsListed.Error()
	}
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	starts, ends := map[int32]int64{}, map[int32]int64{}
	want := 0
	for p := int32(0); p < int32(a.Partitions); p++ {
		at, ok := listed.Lookup(a.Topic, p)
		end, ok2 := endsListed.Lookup(a.Topic, p)
		if !ok || !ok2 {
			return fmt.Errorf("partition %d missing from the offset listings", p)
		}
		fmt.Fprintf(os.Stderr, "driver: partition %d: offset for timestamp %d is %d, end %d\n",
			p, a.ThresholdTS(), at.Offset, end.Offset)
		if at.Offset >= 0 && at.Offset < end.Offset {
			starts[p], ends[p] = at.Offset, end.Offset
			want += int(end.Offset - at.Offset)
		}
	}
	return consume(ctx, a, "from_timestamp", starts, ends, want)
}
