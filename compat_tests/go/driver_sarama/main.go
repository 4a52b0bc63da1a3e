// Command driver_sarama runs millpond's client scenarios (compat_tests/SCENARIOS.md) with
// IBM/sarama: a SyncProducer with sarama's default (FNV-1a hash) partitioner, partition
// consumers (sarama.NewConsumer(...).ConsumePartition, no group) and Client.GetOffset for
// offsets by timestamp. Config.Version is 4.0 (zstd and headers need 2.1 or later).
// MILLPOND_DRIVER_DEBUG=1 sends sarama's log to stderr.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	"github.com/IBM/sarama"

	"millpond/compat_tests/go/internal/scenario"
)

func main() {
	a := scenario.Parse()
	if os.Getenv("MILLPOND_DRIVER_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenario.Timeout)
	defer cancel()
	if err := run(ctx, a); err != nil {
		scenario.Fail(err)
	}
}

func config(a scenario.Args) (*sarama.Config, error) {
	c := sarama.NewConfig()
	c.ClientID = "millpond-compat-sarama"
	c.Version = sarama.V4_0_0_0
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Consumer.Return.Errors = true
	switch a.Compression {
	case "", "none":
		c.Producer.Compression = sarama.CompressionNone
	case "gzip":
		c.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		c.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		c.Producer.Compression = sarama.CompressionLZ4
	case "zstd":
		c.Producer.Compression = sarama.CompressionZSTD
	default:
		return nil, fmt.Errorf("unknown compression %q", a.Compression)
	}
	return c, c.Validate()
}

func run(ctx context.Context, a scenario.Args) error {
	conf, err := config(a)
	if err != nil {
		return err
	}
	client, err := sarama.NewClient([]string{a.Bootstrap}, conf)
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
	if err := consume(ctx, client, a.Topic, "beginning", starts, nil, a.Count); err != nil {
		return err
	}
	return fromTimestamp(ctx, client, a)
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

// consume reads the partitions of starts from those offsets and prints every record until
// it has read want records and, when ends is given, every partition reached its end offset.
func consume(ctx context.Context, client sarama.Client, topic, phase string, starts, ends map[int32]int64, want int) error {
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
			fmt.Fprintf(os.Stderr, "driver: %s: closing the consumer: %v\n", phase, err)
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
			return fmt.Errorf("%s: consume partition %d: %w", phase, p, err)
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
				fmt.Fprintf(os.Stderr, "driver: %s: partition %d: %v\n", phase, p, e)
			}
		}()
	}
	read := 0
	reached := map[int32]bool{}
	for read < want || (ends != nil && len(reached) < len(ends)) {
		select {
		case m := <-messages:
			hs := make([]scenario.Header, 0, len(m.Headers))
			for _, h := range m.Headers {
				hs = append(hs, scenario.Header{Key: string(h.Key), Value: h.Value})
			}
			scenario.Consumed(phase, m.Partition, m.Offset, m.Key, m.Value, hs, m.Timestamp.UnixMilli())
			read++
			if ends != nil && m.Offset+1 >= ends[m.Partition] {
				reached[m.Partition] = true
			}
		case <-ctx.Done():
			return fmt.Errorf("%s: read %d of %d records before the timeout", phase, read, want)
		}
	}
	return nil
}

func fromTimestamp(ctx context.Context, client sarama.Client, a scenario.Args) error {
	starts, ends := map[int32]int64{}, map[int32]int64{}
	want := 0
	for p := int32(0); p < int32(a.Partitions); p++ {
		at, err := client.GetOffset(a.Topic, p, a.ThresholdTS())
		if err != nil {
			return fmt.Errorf("partition %d: offset for timestamp %d: %w", p, a.ThresholdTS(), err)
		}
		end, err := client.GetOffset(a.Topic, p, sarama.OffsetNewest)
		if err != nil {
			return fmt.Errorf("partition %d: end offset: %w", p, err)
		}
		fmt.Fprintf(os.Stderr, "driver: partition %d: offset for timestamp %d is %d, end %d\n",
			p, a.ThresholdTS(), at, end)
		if at >= 0 && at < end {
			starts[p], ends[p] = at, end
			want += int(end - at)
		}
	}
	return consume(ctx, client, a.Topic, "from_timestamp", starts, ends, want)
}
