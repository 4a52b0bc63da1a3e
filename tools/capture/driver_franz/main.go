// franz-go (kgo + kadm) driver for tools/capture: produces with every codec (idempotent, the
// kgo default), runs a consume-transform-produce transaction, a group consumer and many kadm
// admin calls. Every step is bounded; a failing step is only reported, since the bytes on the
// wire are the product, not the outcome.
//
// Usage: driver_franz 127.0.0.1:PORT
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	codecsTopic = "franz-codecs"
	txnTopic    = "franz-txn"
	adminTopic  = "franz-admin"
	group       = "franz-group"
	stepTimeout = 20 * time.Second
)

// franz-go sends a batch uncompressed when compressing would not shrink it, so values repeat a
// phrase: still small, but every codec wins on them.
var filler = strings.Repeat(" millpond golden bytes", 6)

var seed string

func step(name string, body func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	t0 := time.Now()
	if err := body(ctx); err != nil {
		fmt.Printf("fail %-28s %v\n", name, err)
		return
	}
	fmt.Printf("ok   %-28s %5d ms\n", name, time.Since(t0).Milliseconds())
}

func client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(seed), kgo.ClientID("millpond-capture-franz")}
	return kgo.NewClient(append(base, opts...)...)
}

func produce(ctx context.Context, topic string, values []string, opts ...kgo.Opt) error {
	cl, err := client(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i, v := range values {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v), Partition: 0})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func consumeGroup(ctx context.Context, want int) error {
	cl, err := client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(codecsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group
	got := 0
	for got < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // let heartbeats go out
	return nil
}

func transact(ctx context.Context) error {
	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seed), kgo.ClientID("millpond-capture-franz"),
		kgo.TransactionalID("franz-txn-1"), kgo.ConsumerGroup("franz-txn-group"),
		kgo.ConsumeTopics(codecsTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(txnTopic), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		return err
	}
	defer s.Close()
	fs := s.PollFetches(ctx)
	if err := s.Begin(); err != nil {
		return err
	}
	n := 0
	fs.EachRecord(func(r *kgo.Record) {
		if n < 3 {
			s.Produce(ctx, &kgo.Record{Value: append([]byte("copied-"), r.Value...)}, nil)
			n++
		}
	})
	committed, err := s.End(ctx, kgo.TryCommit)
	if err != nil {
		return err
	}
	if !committed {
		return fmt.Errorf("transaction aborted")
	}
	// A second, aborted transaction on the plain client: EndTxn with commit=false.
	cl := s.Client()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("aborted")}).FirstErr(); err != nil {
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryAbort)
}

func ignore[T any](_ T, err error) error { return err }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: driver_franz BOOTSTRAP")
		os.Exit(2)
	}
	seed = os.Args[1]
	cl, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	step("CreateTopics", func(ctx context.Context) error {
		if err := ignore(adm.CreateTopics(ctx, 1, 1, nil, codecsTopic, txnTopic)); err != nil {
			return err
		}
		retention := "3600000"
		return ignore(adm.CreateTopics(ctx, 2, 1, map[string]*string{"retention.ms": &retention}, adminTopic))
	})
	step("ApiVersions", func(ctx context.Context) error { return ignore(adm.ApiVersions(ctx)) })
	step("ListTopics", func(ctx context.Context) error { return ignore(adm.ListTopics(ctx)) })
	step("BrokerMetadata", func(ctx context.Context) error { return ignore(adm.BrokerMetadata(ctx)) })
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		codec := codecs[name]
		step("produce "+name, func(ctx context.Context) error {
			return produce(ctx, codecsTopic, []string{name + "-v0" + filler, name + "-v1" + filler, name + "-v2" + filler},
				kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(20*time.Millisecond))
		})
	}
	step("produce acks=1 non-idempotent", func(ctx context.Context) error {
		return produce(ctx, codecsTopic, []string{"acks1"}, kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite())
	})
	step("transaction", transact)
	step("group consumer", func(ctx context.Context) error { return consumeGroup(ctx, 16) })

	step("DescribeTopicConfigs", func(ctx context.Context) error {
		return ignore(adm.DescribeTopicConfigs(ctx, adminTopic))
	})
	step("DescribeBrokerConfigs", func(ctx context.Context) error {
		return ignore(adm.DescribeBrokerConfigs(ctx, 1))
	})
	week := "7200000"
	step("AlterTopicConfigs", func(ctx context.Context) error {
		return ignore(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &week}}, adminTopic))
	})
	step("AlterTopicConfigsState", func(ctx context.Context) error {
		return ignore(adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &week}}, adminTopic))
	})
	step("ListConfigResources", func(ctx context.Context) error { return ignore(adm.ListConfigResources(ctx)) })
	step("CreatePartitions", func(ctx context.Context) error { return ignore(adm.UpdatePartitions(ctx, 3, adminTopic)) })
	step("produce admin", func(ctx context.Context) error {
		return produce(ctx, adminTopic, []string{"v0", "v1", "v2", "v3"}, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	})
	step("ListStartOffsets", func(ctx context.Context) error { return ignore(adm.ListStartOffsets(ctx, adminTopic)) })
	step("ListEndOffsets", func(ctx context.Context) error { return ignore(adm.ListEndOffsets(ctx, adminTopic)) })
	step("ListMaxTimestampOffsets", func(ctx context.Context) error {
		return ignore(adm.ListMaxTimestampOffsets(ctx, codecsTopic))
	})
	step("ListOffsetsAfterMilli", func(ctx context.Context) error {
		return ignore(adm.ListOffsetsAfterMilli(ctx, time.Now().Add(-time.Minute).UnixMilli(), codecsTopic))
	})
	step("OffsetForLeaderEpoch", func(ctx context.Context) error {
		req := kadm.OffsetForLeaderEpochRequest{}
		req.Add(codecsTopic, 0, 0)
		return ignore(adm.OffsetForLeaderEpoch(ctx, req))
	})
	step("DeleteRecords", func(ctx context.Context) error {
		os := kadm.Offsets{}
		os.AddOffset(adminTopic, 0, 2, -1)
		return ignore(adm.DeleteRecords(ctx, os))
	})
	step("DescribeAllLogDirs", func(ctx context.Context) error { return ignore(adm.DescribeAllLogDirs(ctx, nil)) })
	step("DescribeProducers", func(ctx context.Context) error {
		return ignore(adm.DescribeProducers(ctx, kadm.TopicsSet{txnTopic: {0: {}}}))
	})
	step("ListTransactions", func(ctx context.Context) error { return ignore(adm.ListTransactions(ctx, nil, nil)) })
	step("DescribeTransactions", func(ctx context.Context) error {
		return ignore(adm.DescribeTransactions(ctx, "franz-txn-1"))
	})
	step("ElectLeaders", func(ctx context.Context) error {
		return ignore(adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{adminTopic: {0: {}}}))
	})
	step("ListPartitionReassignments", func(ctx context.Context) error {
		return ignore(adm.ListPartitionReassignments(ctx, nil))
	})
	step("ListGroups", func(ctx context.Context) error { return ignore(adm.ListGroups(ctx)) })
	step("DescribeGroups", func(ctx context.Context) error { return ignore(adm.DescribeGroups(ctx, group)) })
	step("FetchOffsets", func(ctx context.Context) error { return ignore(adm.FetchOffsets(ctx, group)) })
	step("CommitOffsets", func(ctx context.Context) error {
		os := kadm.Offsets{}
		os.AddOffset(codecsTopic, 0, 1, -1)
		return ignore(adm.CommitOffsets(ctx, group, os))
	})
	step("DeleteOffsets", func(ctx context.Context) error {
		return ignore(adm.DeleteOffsets(ctx, group, kadm.TopicsSet{codecsTopic: {0: {}}}))
	})
	step("DeleteGroups", func(ctx context.Context) error { return ignore(adm.DeleteGroups(ctx, group)) })
	step("AlterUserSCRAMs", func(ctx context.Context) error {
		return ignore(adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "erin",
			Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "erin-pw"}}))
	})
	step("DescribeUserSCRAMs", func(ctx context.Context) error { return ignore(adm.DescribeUserSCRAMs(ctx)) })
	step("AlterClientQuotas", func(ctx context.Context) error {
		name := "franz-slow"
		return ignore(adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
			Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
			Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2097152}}}}))
	})
	step("DescribeClientQuotas", func(ctx context.Context) error {
		return ignore(adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 2}}))
	})
	acl := kadm.NewACLs().Topics(adminTopic).Allow("User:erin").AllowHosts("*").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	step("CreateACLs", func(ctx context.Context) error { return ignore(adm.CreateACLs(ctx, acl)) })
	step("DescribeACLs", func(ctx context.Context) error { return ignore(adm.DescribeACLs(ctx, acl)) })
	step("DeleteACLs", func(ctx context.Context) error { return ignore(adm.DeleteACLs(ctx, acl)) })
	// Delegation tokens need a SASL listener; over PLAINTEXT the broker answers with an error,
	// which still makes a golden.
	step("DescribeDelegationTokens", func(ctx context.Context) error { return ignore(adm.DescribeDelegationTokens(ctx)) })
	step("DeleteTopics", func(ctx context.Context) error { return ignore(adm.DeleteTopics(ctx, adminTopic)) })
	fmt.Println("franz-go driver done")
}
