// Command driver_franz runs millpond's client scenarios (compat_tests/SCENARIOS.md) with
// franz-go: kgo produces (with its defaults unless a scenario says otherwise: idempotent,
// acks=all, the sticky key-hashing partitioner, snappy), consumes by partition with
// kgo.ConsumePartitions (no group), and kadm does the admin work and the offset lookups.
// MILLPOND_DRIVER_DEBUG=1 logs kgo's debug output on stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"millpond/compat_tests/go/internal/scenario"
)

func main() {
	for _, a := range scenario.Parse() {
		switch a.Scenario {
		case "produce-consume":
			scenario.Run(a, produceConsume)
		case "acks":
			scenario.Run(a, acks)
		case "large":
			scenario.Run(a, large)
		case "admin":
			scenario.Run(a, admin)
		case "errors":
			scenario.Run(a, errorSteps)
		}
	}
	scenario.Exit()
}

func baseOpts(a scenario.Args) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(a.Bootstrap), kgo.ClientID("millpond-compat-franz")}
	if scenario.Debug() {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	return opts
}

// code is the Kafka error code an error of kgo/kadm carries, or nil.
func code(err error) *int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &ke.Code
	}
	return nil
}

// --- produce-consume ---------------------------------------------------------------------

func produceConsume(ctx context.Context, a scenario.Args) error {
	if err := produce(ctx, a); err != nil {
		return err
	}
	starts := map[int32]int64{}
	for p := 0; p < a.Partitions; p++ {
		starts[int32(p)] = -2 // the log start
	}
	if err := consume(ctx, a, nil, starts, nil, a.Count, consumed(a, "beginning")); err != nil {
		return err
	}
	adm, closeAdm, err := newAdmin(a)
	if err != nil {
		return err
	}
	defer closeAdm()
	ends, err := listed(adm.ListEndOffsets(ctx, a.Topic))
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	// from_offset: every partition holding more than one record, from offset 1 to its end.
	starts, stops, want := map[int32]int64{}, map[int32]int64{}, 0
	for p := int32(0); p < int32(a.Partitions); p++ {
		end, ok := ends.Lookup(a.Topic, p)
		if !ok {
			return fmt.Errorf("partition %d missing from the end offsets", p)
		}
		if end.Offset > 1 {
			starts[p], stops[p] = 1, end.Offset
			want += int(end.Offset - 1)
		}
	}
	if err := consume(ctx, a, nil, starts, stops, want, consumed(a, "from_offset")); err != nil {
		return err
	}
	// from_timestamp: every partition from its offset for the threshold to its end.
	at, err := listed(adm.ListOffsetsAfterMilli(ctx, a.ThresholdTS(), a.Topic))
	if err != nil {
		return fmt.Errorf("offsets for timestamp %d: %w", a.ThresholdTS(), err)
	}
	starts, stops, want = map[int32]int64{}, map[int32]int64{}, 0
	for p := int32(0); p < int32(a.Partitions); p++ {
		o, ok := at.Lookup(a.Topic, p)
		end, _ := ends.Lookup(a.Topic, p)
		if !ok {
			return fmt.Errorf("partition %d missing from the offsets for timestamp", p)
		}
		scenario.Logf("partition %d: offset for timestamp %d is %d, end %d", p, a.ThresholdTS(), o.Offset, end.Offset)
		if o.Offset >= 0 && o.Offset < end.Offset {
			starts[p], stops[p] = o.Offset, end.Offset
			want += int(end.Offset - o.Offset)
		}
	}
	return consume(ctx, a, nil, starts, stops, want, consumed(a, "from_timestamp"))
}

func compression(name string) (kgo.Opt, error) {
	switch name {
	case "": // kgo's default: snappy, falling back to none
		return nil, nil
	case "none":
		return kgo.ProducerBatchCompression(kgo.NoCompression()), nil
	case "gzip":
		return kgo.ProducerBatchCompression(kgo.GzipCompression()), nil
	case "snappy":
		return kgo.ProducerBatchCompression(kgo.SnappyCompression()), nil
	case "lz4":
		return kgo.ProducerBatchCompression(kgo.Lz4Compression()), nil
	case "zstd":
		return kgo.ProducerBatchCompression(kgo.ZstdCompression()), nil
	}
	return nil, fmt.Errorf("unknown compression %q", name)
}

func produce(ctx context.Context, a scenario.Args) error {
	opts := baseOpts(a)
	codec, err := compression(a.Compression)
	if err != nil {
		return err
	}
	if codec != nil {
		opts = append(opts, codec)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	records := make([]*kgo.Record, a.Count)
	index := make(map[*kgo.Record]int, a.Count)
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
		records[i], index[r] = r, i
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

func consumed(a scenario.Args, phase string) func(*kgo.Record) {
	return func(r *kgo.Record) {
		hs := make([]scenario.Header, 0, len(r.Headers))
		for _, h := range r.Headers {
			hs = append(hs, scenario.Header{Key: h.Key, Value: h.Value})
		}
		scenario.Consumed(phase, r.Partition, r.Offset, r.Key, r.Value, hs, r.Timestamp.UnixMilli())
	}
}

// consume reads the partitions of starts from those offsets (-2: the log start), passing
// every record to each, until it has read want records and, when ends is given, every
// partition reached its end offset.
func consume(ctx context.Context, a scenario.Args, extra []kgo.Opt, starts, ends map[int32]int64, want int, each func(*kgo.Record)) error {
	if len(starts) == 0 {
		return nil
	}
	offsets := map[int32]kgo.Offset{}
	for p, o := range starts {
		if o == -2 {
			offsets[p] = kgo.NewOffset().AtStart()
		} else {
			offsets[p] = kgo.NewOffset().At(o)
		}
	}
	opts := append(baseOpts(a), extra...)
	opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{a.Topic: offsets}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	read := 0
	reached := map[int32]bool{}
	for read < want || (ends != nil && len(reached) < len(ends)) {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read %d of %d records before the timeout", read, want)
		}
		fetches.EachError(func(t string, p int32, err error) {
			scenario.Logf("fetch %s[%d]: %v", t, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			each(r)
			read++
			if ends != nil && r.Offset+1 >= ends[r.Partition] {
				reached[r.Partition] = true
			}
		})
	}
	return nil
}

func newAdmin(a scenario.Args, extra ...kgo.Opt) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(append(baseOpts(a), extra...)...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// listed folds a listing's per-partition errors into its error.
func listed(l kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
	if err == nil {
		err = l.Error()
	}
	return l, err
}

// --- acks ----------------------------------------------------------------------------------

func acks(ctx context.Context, a scenario.Args) error {
	// kgo refuses acks other than all with idempotent writes (its default): switched off.
	settings := map[string][]kgo.Opt{
		"acks0":      {kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()},
		"acks1":      {kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()},
		"acksall":    {kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()},
		"idempotent": {kgo.RequiredAcks(kgo.AllISRAcks())},
	}
	for partition, name := range scenario.AcksProducers {
		opts := append(baseOpts(a), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		cl, err := kgo.NewClient(append(opts, settings[name]...)...)
		if err != nil {
			return err
		}
		records := make([]*kgo.Record, scenario.AcksCount)
		index := map[*kgo.Record]int{}
		for i := range records {
			records[i] = &kgo.Record{
				Topic:     a.Topic,
				Partition: int32(partition),
				Key:       fmt.Appendf(nil, "k%d", i),
				Value:     fmt.Appendf(nil, "%s-%d", name, i),
			}
			index[records[i]] = i
		}
		results := cl.ProduceSync(ctx, records...)
		cl.Close()
		for _, res := range results {
			if res.Err != nil {
				return fmt.Errorf("%s: record %d: %w", name, index[res.Record], res.Err)
			}
			offset := res.Record.Offset
			if name == "acks0" {
				offset = -1 // kgo numbers acks=0 records itself: no offset the broker reported
			}
			scenario.Emit(map[string]any{
				"event": "produced", "producer": name, "i": index[res.Record],
				"partition": res.Record.Partition, "offset": offset,
			})
		}
	}
	starts := map[int32]int64{0: -2, 1: -2, 2: -2, 3: -2}
	want := len(scenario.AcksProducers) * scenario.AcksCount
	return consume(ctx, a, nil, starts, nil, want, func(r *kgo.Record) {
		scenario.Emit(map[string]any{"event": "record", "partition": r.Partition, "offset": r.Offset, "value": string(r.Value)})
	})
}

// --- large ---------------------------------------------------------------------------------

func large(ctx context.Context, a scenario.Args) error {
	opts := append(baseOpts(a),
		kgo.ProducerBatchMaxBytes(scenario.MaxBytes),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	near := &kgo.Record{Topic: a.Topic, Key: []byte("big"), Value: scenario.LargeValue(scenario.LargeNear)}
	res := cl.ProduceSync(ctx, near)
	if err := res.FirstErr(); err != nil {
		cl.Close()
		return fmt.Errorf("near-limit: %w", err)
	}
	scenario.Emit(map[string]any{"event": "produced", "step": "near-limit", "partition": near.Partition, "offset": near.Offset})
	over := &kgo.Record{Topic: a.Topic, Key: []byte("big"), Value: scenario.LargeValue(scenario.LargeOver)}
	if err := cl.ProduceSync(ctx, over).FirstErr(); err != nil {
		scenario.Error("over-limit", code(err), err)
	} else {
		scenario.Emit(map[string]any{"event": "produced", "step": "over-limit", "partition": over.Partition, "offset": over.Offset})
	}
	cl.Close()
	adm, closeAdm, err := newAdmin(a)
	if err != nil {
		return err
	}
	defer closeAdm()
	ends, err := listed(adm.ListEndOffsets(ctx, a.Topic))
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	end, _ := ends.Lookup(a.Topic, 0)
	if end.Offset <= 0 {
		return nil
	}
	fetchOpts := []kgo.Opt{kgo.FetchMaxBytes(scenario.MaxBytes), kgo.FetchMaxPartitionBytes(scenario.MaxBytes)}
	return consume(ctx, a, fetchOpts, map[int32]int64{0: -2}, map[int32]int64{0: end.Offset}, 0, func(r *kgo.Record) {
		scenario.LargeRecord(r.Offset, r.Value)
	})
}

// --- admin ---------------------------------------------------------------------------------

func admin(ctx context.Context, a scenario.Args) error {
	cl, err := kgo.NewClient(append(baseOpts(a), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t := a.Topic
	listedTopic := func() (bool, error) {
		// kadm answers ListTopics from kgo's metadata cache (up to 5 s old) unless asked for
		// authorized operations: that context makes it list what the broker has now.
		topics, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx))
		return topics.Has(t), err
	}
	describe := func() (map[string]any, error) {
		described, err := adm.DescribeTopicConfigs(ctx, t)
		if err != nil {
			return nil, err
		}
		rc, err := described.On(t, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return nil, err
		}
		entries := map[string]scenario.ConfigEntry{}
		for _, c := range rc.Configs {
			var v any
			if c.Value != nil {
				v = *c.Value
			}
			entries[c.Key] = scenario.ConfigEntry{Value: v, Source: int8(c.Source)}
		}
		return map[string]any{"configs": scenario.Configs(entries)}, nil
	}
	step := func(name string, fn func() (map[string]any, error)) {
		fields, err := fn()
		scenario.Admin(name, fields, err)
	}

	step("createTopics", func() (map[string]any, error) {
		configs := map[string]*string{
			"retention.ms":      kadm.StringPtr("86400000"),
			"max.message.bytes": kadm.StringPtr("500000"),
		}
		if _, err := adm.CreateTopic(ctx, 3, 1, configs, t); err != nil {
			return nil, err
		}
		found, err := scenario.Settle(ctx, listedTopic, scenario.Is(true))
		return map[string]any{"listed": found}, err
	})
	step("describeConfigs", describe)
	step("alterConfigs", func() (map[string]any, error) {
		alters := []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")},
			{Op: kadm.DeleteConfig, Name: "max.message.bytes"},
		}
		altered, err := adm.AlterTopicConfigs(ctx, alters, t)
		if err == nil {
			var r kadm.AlterConfigsResponse
			r, err = altered.On(t, nil)
			if err == nil {
				err = r.Err
			}
		}
		if err != nil {
			return nil, err
		}
		return scenario.Settle(ctx, describe, scenario.Altered)
	})
	step("createPartitions", func() (map[string]any, error) {
		grown, err := adm.UpdatePartitions(ctx, 4, t)
		if err == nil {
			err = grown.Error()
		}
		if err != nil {
			return nil, err
		}
		count, err := scenario.Settle(ctx, func() (int, error) {
			topics, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), t)
			if err == nil {
				err = topics.Error()
			}
			return len(topics[t].Partitions), err
		}, scenario.Is(4))
		return map[string]any{"partitions": count}, err
	})
	step("produce", func() (map[string]any, error) {
		records := make([]*kgo.Record, 10)
		for i := range records {
			records[i] = &kgo.Record{
				Topic: t, Partition: 0, Value: fmt.Appendf(nil, "admin-%d", i),
				Timestamp: time.UnixMilli(scenario.AdminStartTS + int64(i)*1000),
			}
		}
		if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
			return nil, err
		}
		offsets := make([]int64, len(records))
		for i, r := range records {
			offsets[i] = r.Offset
		}
		return map[string]any{"offsets": offsets}, nil
	})
	step("deleteRecords", func() (map[string]any, error) {
		deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{t: {0: {Topic: t, Partition: 0, At: 5, LeaderEpoch: -1}}})
		if err != nil {
			return nil, err
		}
		r, ok := deleted.Lookup(t, 0)
		if !ok {
			return nil, fmt.Errorf("no answer for partition 0")
		}
		if r.Err != nil {
			return nil, r.Err
		}
		starts, err := listed(adm.ListStartOffsets(ctx, t))
		if err != nil {
			return nil, err
		}
		start, _ := starts.Lookup(t, 0)
		return map[string]any{"low_watermark": r.LowWatermark, "earliest_after": start.Offset}, nil
	})
	step("listOffsets", func() (map[string]any, error) {
		at, err := listed(adm.ListOffsetsAfterMilli(ctx, scenario.AdminStartTS+7000, t))
		if err != nil {
			return nil, err
		}
		o, _ := at.Lookup(t, 0)
		return map[string]any{"for_timestamp": o.Offset}, nil
	})
	step("deleteTopics", func() (map[string]any, error) {
		if _, err := adm.DeleteTopic(ctx, t); err != nil {
			return nil, err
		}
		found, err := scenario.Settle(ctx, listedTopic, scenario.Is(false))
		return map[string]any{"listed": found}, err
	})
	return nil
}

// --- errors --------------------------------------------------------------------------------

func errorSteps(ctx context.Context, a scenario.Args) error {
	cl, err := kgo.NewClient(append(baseOpts(a), kgo.RecordDeliveryTimeout(5*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	missing := &kgo.Record{Topic: a.Topic + "-missing", Value: []byte("x")}
	if err := cl.ProduceSync(ctx, missing).FirstErr(); err != nil {
		scenario.Error("unknown-topic", code(err), err)
	} else {
		scenario.Emit(map[string]any{"event": "produced", "step": "unknown-topic", "partition": missing.Partition, "offset": missing.Offset})
	}
	adm := kadm.NewClient(cl)
	bad := map[string]*string{"retention.ms": kadm.StringPtr("not-a-number")}
	if _, err := adm.CreateTopic(ctx, 1, 1, bad, a.Topic+"-bad"); err != nil {
		scenario.Error("invalid-config", code(err), err)
	} else {
		scenario.Emit(map[string]any{"event": "admin", "step": "invalid-config", "created": true})
	}
	return nil
}
