// Command driver_sarama runs millpond's client scenarios (compat_tests/SCENARIOS.md) with
// IBM/sarama: SyncProducers (sarama's default FNV-1a hash partitioner, or the manual one
// where a scenario names the partition), partition consumers (ConsumePartition, no group),
// Client.GetOffset for offset lookups and ClusterAdmin for the admin work.
// Config.Version is 4.0 (zstd and headers need 2.1 or later, idempotence 0.11).
// MILLPOND_DRIVER_DEBUG=1 sends sarama's log to stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	"github.com/IBM/sarama"

	"millpond/compat_tests/go/internal/scenario"
)

func main() {
	if scenario.Debug() {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
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

// config is the drivers' base configuration, changed by each of tweaks.
func config(tweaks ...func(*sarama.Config)) (*sarama.Config, error) {
	c := sarama.NewConfig()
	c.ClientID = "millpond-compat-sarama"
	c.Version = sarama.V4_0_0_0
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Consumer.Return.Errors = true
	for _, tweak := range tweaks {
		tweak(c)
	}
	return c, c.Validate()
}

func newClient(a scenario.Args, tweaks ...func(*sarama.Config)) (sarama.Client, error) {
	conf, err := config(tweaks...)
	if err != nil {
		return nil, err
	}
	return sarama.NewClient([]string{a.Bootstrap}, conf)
}

func manualPartitions(c *sarama.Config) { c.Producer.Partitioner = sarama.NewManualPartitioner }

// code is the Kafka error code a sarama error carries (a KError, possibly wrapped), or nil.
func code(err error) *int16 {
	var ke sarama.KError
	if errors.As(err, &ke) {
		c := int16(ke)
		return &c
	}
	return nil
}

// --- produce-consume ---------------------------------------------------------------------

func codec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "", "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return sarama.CompressionNone, fmt.Errorf("unknown compression %q", name)
}

func produceConsume(ctx context.Context, a scenario.Args) error {
	compression, err := codec(a.Compression)
	if err != nil {
		return err
	}
	client, err := newClient(a, func(c *sarama.Config) { c.Producer.Compression = compression })
	if err != nil {
		return err
	}
	defer client.Close()
	if err := produce(client, a); err != nil {
		return err
	}
	starts := map[int32]int64{}
	for p := int32(0); p < int32(a.Partitions); p++ {
		starts[p] = sarama.OffsetOldest
	}
	if err := consume(ctx, client, a.Topic, starts, nil, a.Count, consumed("beginning")); err != nil {
		return err
	}
	ends := map[int32]int64{}
	for p := int32(0); p < int32(a.Partitions); p++ {
		if ends[p], err = client.GetOffset(a.Topic, p, sarama.OffsetNewest); err != nil {
			return fmt.Errorf("partition %d: end offset: %w", p, err)
		}
	}
	// from_offset: every partition holding more than one record, from offset 1 to its end.
	starts, stops, want := map[int32]int64{}, map[int32]int64{}, 0
	for p, end := range ends {
		if end > 1 {
			starts[p], stops[p] = 1, end
			want += int(end - 1)
		}
	}
	if err := consume(ctx, client, a.Topic, starts, stops, want, consumed("from_offset")); err != nil {
		return err
	}
	// from_timestamp: every partition from its offset for the threshold to its end.
	starts, stops, want = map[int32]int64{}, map[int32]int64{}, 0
	for p, end := range ends {
		at, err := client.GetOffset(a.Topic, p, a.ThresholdTS())
		if err != nil {
			return fmt.Errorf("partition %d: offset for timestamp %d: %w", p, a.ThresholdTS(), err)
		}
		scenario.Logf("partition %d: offset for timestamp %d is %d, end %d", p, a.ThresholdTS(), at, end)
		if at >= 0 && at < end {
			starts[p], stops[p] = at, end
			want += int(end - at)
		}
	}
	return consume(ctx, client, a.Topic, starts, stops, want, consumed("from_timestamp"))
}

func produce(client sarama.Client, a scenario.Args) error {
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	msgs := make([]*sarama.ProducerMessage, a.Count)
	for i := range msgs {
		w := a.Want(i)
		m := &sarama.ProducerMessage{
			Topic:     a.Topic,
			Key:       sarama.StringEncoder(w.Key),
			Value:     sarama.StringEncoder(w.Value),
			Timestamp: time.UnixMilli(w.Timestamp),
		}
		for _, h := range w.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
		}
		msgs[i] = m
	}
	sendErr := producer.SendMessages(msgs)
	closeErr := producer.Close()
	if sendErr != nil {
		return fmt.Errorf("send: %w", sendErr)
	}
	if closeErr != nil {
		return fmt.Errorf("closing the producer: %w", closeErr)
	}
	// SendMessages fills in each message's partition and offset.
	for i, m := range msgs {
		scenario.Produced(i, m.Partition, m.Offset)
	}
	return nil
}

func consumed(phase string) func(*sarama.ConsumerMessage) {
	return func(m *sarama.ConsumerMessage) {
		hs := make([]scenario.Header, 0, len(m.Headers))
		for _, h := range m.Headers {
			hs = append(hs, scenario.Header{Key: string(h.Key), Value: h.Value})
		}
		scenario.Consumed(phase, m.Partition, m.Offset, m.Key, m.Value, hs, m.Timestamp.UnixMilli())
	}
}

// consume reads the partitions of starts from those offsets, passing every record to each,
// until it has read want records and, when ends is given, every partition reached its end.
func consume(ctx context.Context, client sarama.Client, topic string, starts, ends map[int32]int64, want int, each func(*sarama.ConsumerMessage)) error {
	if len(starts) == 0 {
		return nil
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return err
	}
	done := make(chan struct{}) // closed first on return: the forwarding goroutines stop
	var pcs []sarama.PartitionConsumer
	defer func() {
		close(done)
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		if err := consumer.Close(); err != nil {
			scenario.Logf("closing the consumer: %v", err)
		}
	}()
	messages := make(chan *sarama.ConsumerMessage)
	partitions := make([]int32, 0, len(starts))
	for p := range starts {
		partitions = append(partitions, p)
	}
	sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
	for _, p := range partitions {
		pc, err := consumer.ConsumePartition(topic, p, starts[p])
		if err != nil {
			return fmt.Errorf("consume partition %d: %w", p, err)
		}
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				select {
				case messages <- m:
				case <-done:
					return
				}
			}
		}()
		go func() {
			for e := range pc.Errors() {
				scenario.Logf("partition %d: %v", p, e)
			}
		}()
	}
	read := 0
	reached := map[int32]bool{}
	for read < want || (ends != nil && len(reached) < len(ends)) {
		select {
		case m := <-messages:
			each(m)
			read++
			if ends != nil && m.Offset+1 >= ends[m.Partition] {
				reached[m.Partition] = true
			}
		case <-ctx.Done():
			return fmt.Errorf("read %d of %d records before the timeout", read, want)
		}
	}
	return nil
}

// --- acks ----------------------------------------------------------------------------------

func acks(ctx context.Context, a scenario.Args) error {
	settings := map[string]func(*sarama.Config){
		"acks0":   func(c *sarama.Config) { c.Producer.RequiredAcks = sarama.NoResponse },
		"acks1":   func(c *sarama.Config) { c.Producer.RequiredAcks = sarama.WaitForLocal },
		"acksall": func(c *sarama.Config) { c.Producer.RequiredAcks = sarama.WaitForAll },
		// sarama's idempotent producer wants acks=all and one request in flight per broker.
		"idempotent": func(c *sarama.Config) {
			c.Producer.RequiredAcks = sarama.WaitForAll
			c.Producer.Idempotent = true
			c.Net.MaxOpenRequests = 1
		},
	}
	for partition, name := range scenario.AcksProducers {
		if err := acksProducer(a, name, int32(partition), settings[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	client, err := newClient(a)
	if err != nil {
		return err
	}
	defer client.Close()
	starts := map[int32]int64{}
	for p := range scenario.AcksProducers {
		starts[int32(p)] = sarama.OffsetOldest
	}
	want := len(scenario.AcksProducers) * scenario.AcksCount
	return consume(ctx, client, a.Topic, starts, nil, want, func(m *sarama.ConsumerMessage) {
		scenario.Emit(map[string]any{"event": "record", "partition": m.Partition, "offset": m.Offset, "value": string(m.Value)})
	})
}

func acksProducer(a scenario.Args, name string, partition int32, setting func(*sarama.Config)) error {
	client, err := newClient(a, manualPartitions, setting)
	if err != nil {
		return err
	}
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	msgs := make([]*sarama.ProducerMessage, scenario.AcksCount)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:     a.Topic,
			Partition: partition,
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("%s-%d", name, i)),
		}
	}
	sendErr := producer.SendMessages(msgs)
	closeErr := producer.Close()
	if err := errors.Join(sendErr, closeErr); err != nil {
		return err
	}
	for i, m := range msgs {
		offset := m.Offset
		if client.Config().Producer.RequiredAcks == sarama.NoResponse {
			offset = -1 // sarama leaves the offset unset without an answer from the broker
		}
		scenario.Emit(map[string]any{
			"event": "produced", "producer": name, "i": i, "partition": m.Partition, "offset": offset,
		})
	}
	return nil
}

// --- large ---------------------------------------------------------------------------------

func large(ctx context.Context, a scenario.Args) error {
	client, err := newClient(a, func(c *sarama.Config) {
		c.Producer.MaxMessageBytes = scenario.MaxBytes
		c.Producer.Compression = sarama.CompressionNone
		c.Consumer.Fetch.Default = scenario.MaxBytes
	})
	if err != nil {
		return err
	}
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	message := func(size int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{
			Topic: a.Topic, Key: sarama.StringEncoder("big"), Value: sarama.ByteEncoder(scenario.LargeValue(size)),
		}
	}
	p, o, err := producer.SendMessage(message(scenario.LargeNear))
	if err != nil {
		_ = producer.Close()
		return fmt.Errorf("near-limit: %w", err)
	}
	scenario.Emit(map[string]any{"event": "produced", "step": "near-limit", "partition": p, "offset": o})
	if p, o, err := producer.SendMessage(message(scenario.LargeOver)); err != nil {
		scenario.Error("over-limit", code(err), err)
	} else {
		scenario.Emit(map[string]any{"event": "produced", "step": "over-limit", "partition": p, "offset": o})
	}
	if err := producer.Close(); err != nil {
		return fmt.Errorf("closing the producer: %w", err)
	}
	end, err := client.GetOffset(a.Topic, 0, sarama.OffsetNewest)
	if err != nil {
		return fmt.Errorf("end offset: %w", err)
	}
	if end <= 0 {
		return nil
	}
	return consume(ctx, client, a.Topic, map[int32]int64{0: sarama.OffsetOldest}, map[int32]int64{0: end}, 0, func(m *sarama.ConsumerMessage) {
		scenario.LargeRecord(m.Offset, m.Value)
	})
}

// --- admin ---------------------------------------------------------------------------------

func admin(ctx context.Context, a scenario.Args) error {
	client, err := newClient(a, manualPartitions)
	if err != nil {
		return err
	}
	defer client.Close()
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return err
	}
	t := a.Topic
	listed := func() (bool, error) {
		topics, err := adm.ListTopics()
		_, found := topics[t]
		return found, err
	}
	describe := func() (map[string]any, error) {
		resource := &sarama.ConfigResource{Type: sarama.TopicResource, Name: t}
		results, err := adm.DescribeConfigs([]*sarama.ConfigResource{resource}, sarama.DescribeConfigsOptions{})
		if err != nil {
			return nil, err
		}
		if len(results) != 1 {
			return nil, fmt.Errorf("%d results for one topic", len(results))
		}
		if results[0].ErrorCode != sarama.ErrNoError {
			return nil, fmt.Errorf("%w: %s", results[0].ErrorCode, results[0].ErrorMsg)
		}
		entries := map[string]scenario.ConfigEntry{}
		for _, c := range results[0].Configs {
			entries[c.Name] = scenario.ConfigEntry{Value: c.Value, Source: int8(c.Source)}
		}
		return map[string]any{"configs": scenario.Configs(entries)}, nil
	}
	step := func(name string, fn func() (map[string]any, error)) {
		fields, err := fn()
		scenario.Admin(name, fields, err)
	}
	str := func(s string) *string { return &s }

	step("createTopics", func() (map[string]any, error) {
		detail := &sarama.TopicDetail{
			NumPartitions: 3, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"retention.ms": str("86400000"), "max.message.bytes": str("500000")},
		}
		if err := adm.CreateTopic(t, detail, false); err != nil {
			return nil, err
		}
		found, err := scenario.Settle(ctx, listed, scenario.Is(true))
		return map[string]any{"listed": found}, err
	})
	step("describeConfigs", describe)
	step("alterConfigs", func() (map[string]any, error) {
		entries := map[string]sarama.IncrementalAlterConfigsEntry{
			"retention.ms":      {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: str("3600000")},
			"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationDelete},
		}
		if err := adm.IncrementalAlterConfig(sarama.TopicResource, t, entries, false); err != nil {
			return nil, err
		}
		return scenario.Settle(ctx, describe, scenario.Altered)
	})
	step("createPartitions", func() (map[string]any, error) {
		if err := adm.CreatePartitions(t, 4, nil, false); err != nil {
			return nil, err
		}
		count, err := scenario.Settle(ctx, func() (int, error) {
			topics, err := adm.DescribeTopics([]string{t})
			if err != nil {
				return 0, err
			}
			if len(topics) != 1 || topics[0].Err != sarama.ErrNoError {
				return 0, fmt.Errorf("describing %s: %v", t, topics)
			}
			return len(topics[0].Partitions), nil
		}, scenario.Is(4))
		return map[string]any{"partitions": count}, err
	})
	step("produce", func() (map[string]any, error) {
		producer, err := sarama.NewSyncProducerFromClient(client)
		if err != nil {
			return nil, err
		}
		msgs := make([]*sarama.ProducerMessage, 10)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{
				Topic: t, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("admin-%d", i)),
				Timestamp: time.UnixMilli(scenario.AdminStartTS + int64(i)*1000),
			}
		}
		if err := errors.Join(producer.SendMessages(msgs), producer.Close()); err != nil {
			return nil, err
		}
		offsets := make([]int64, len(msgs))
		for i, m := range msgs {
			offsets[i] = m.Offset
		}
		return map[string]any{"offsets": offsets}, nil
	})
	step("deleteRecords", func() (map[string]any, error) {
		// ClusterAdmin.DeleteRecords drops the low watermark: the same request, sent to the
		// partition's leader through the client, keeps it.
		leader, err := client.Leader(t, 0)
		if err != nil {
			return nil, err
		}
		request := &sarama.DeleteRecordsRequest{
			Version: 2,
			Topics:  map[string]*sarama.DeleteRecordsRequestTopic{t: {PartitionOffsets: map[int32]int64{0: 5}}},
			Timeout: client.Config().Admin.Timeout,
		}
		response, err := leader.DeleteRecords(request)
		if err != nil {
			return nil, err
		}
		topic, ok := response.Topics[t]
		if !ok || topic.Partitions[0] == nil {
			return nil, fmt.Errorf("no answer for partition 0")
		}
		if topic.Partitions[0].Err != sarama.ErrNoError {
			return nil, topic.Partitions[0].Err
		}
		earliest, err := client.GetOffset(t, 0, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		return map[string]any{"low_watermark": topic.Partitions[0].LowWatermark, "earliest_after": earliest}, nil
	})
	step("listOffsets", func() (map[string]any, error) {
		// ClusterAdmin has no ListOffsets: the client's (the consumer's) lookup.
		at, err := client.GetOffset(t, 0, scenario.AdminStartTS+7000)
		return map[string]any{"for_timestamp": at}, err
	})
	step("deleteTopics", func() (map[string]any, error) {
		if err := adm.DeleteTopic(t); err != nil {
			return nil, err
		}
		found, err := scenario.Settle(ctx, listed, scenario.Is(false))
		return map[string]any{"listed": found}, err
	})
	return nil
}

// --- errors --------------------------------------------------------------------------------

func errorSteps(ctx context.Context, a scenario.Args) error {
	client, err := newClient(a, func(c *sarama.Config) { c.Metadata.Timeout = 5 * time.Second })
	if err != nil {
		return err
	}
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	missing := &sarama.ProducerMessage{Topic: a.Topic + "-missing", Value: sarama.StringEncoder("x")}
	if p, o, err := producer.SendMessage(missing); err != nil {
		scenario.Error("unknown-topic", code(err), err)
	} else {
		scenario.Emit(map[string]any{"event": "produced", "step": "unknown-topic", "partition": p, "offset": o})
	}
	if err := producer.Close(); err != nil {
		scenario.Logf("closing the producer: %v", err)
	}
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return err
	}
	bad := &sarama.TopicDetail{
		NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": func() *string { s := "not-a-number"; return &s }()},
	}
	if err := adm.CreateTopic(a.Topic+"-bad", bad, false); err != nil {
		scenario.Error("invalid-config", code(err), err)
	} else {
		scenario.Emit(map[string]any{"event": "admin", "step": "invalid-config", "created": true})
	}
	_ = ctx // every sarama call is bounded by its own timeouts
	return nil
}
