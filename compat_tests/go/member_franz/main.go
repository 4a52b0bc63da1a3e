// Command member_franz is one franz-go (kgo) member of SCENARIOS.md's `group` scenario:
// `member_franz group-member --bootstrap B --topic T --group G [--assignor A] ...`.
//
// Autocommit is off and every poll's records are committed (CommitRecords, synchronous)
// before the next poll. BlockRebalanceOnPoll keeps a rebalance from running between a
// poll and its commit, so the member never commits for partitions it no longer owns and
// a clean member leaves nothing processed uncommitted. The rebalance callbacks add
// (assigned) and remove (revoked, lost) partitions, which covers both the eager balancers,
// whose revoke takes everything, and the cooperative one, whose callbacks are incremental.
// franz-go's default balancer is cooperative-sticky. MILLPOND_DRIVER_DEBUG=1 raises kgo's
// log on stderr from info to debug.
package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"millpond/compat_tests/go/internal/member"
)

// commitTimeout bounds one synchronous commit (kgo retries retryable errors within it).
const commitTimeout = 30 * time.Second

var balancers = map[string]func() kgo.GroupBalancer{
	"range":              kgo.RangeBalancer,
	"roundrobin":         kgo.RoundRobinBalancer,
	"sticky":             kgo.StickyBalancer,
	"cooperative-sticky": kgo.CooperativeStickyBalancer,
}

func main() {
	a := member.Parse("range", "roundrobin", "sticky", "cooperative-sticky")
	var owned member.Assignment
	level := kgo.LogLevelInfo
	if os.Getenv("MILLPOND_DRIVER_DEBUG") != "" {
		level = kgo.LogLevelDebug
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(a.Bootstrap),
		kgo.ClientID("millpond-compat-franz-member"),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil)),
		kgo.ConsumerGroup(a.Group),
		kgo.ConsumeTopics(a.Topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(a.SessionTimeout),
		kgo.HeartbeatInterval(a.HeartbeatInterval()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			owned.Add(m[a.Topic])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			owned.Remove(m[a.Topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			owned.Remove(m[a.Topic])
		}),
	}
	if a.Assignor != "" {
		opts = append(opts, kgo.Balancers(balancers[a.Assignor]()))
	}
	if a.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(a.InstanceID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		member.Fail(err)
	}

	// A poll blocks until records arrive; `close` cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-member.CloseRequested()
		cancel()
	}()
	for {
		fetches := cl.PollRecords(ctx, 500)
		if ctx.Err() != nil {
			break // whatever this poll returned stays unprocessed and uncommitted
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			// kgo reports here what it does not retry itself; the member goes on (only a
			// failed commit ends it), the log tells what happened.
			member.Logf("fetch %s[%d]: %v", topic, partition, err)
		})
		process(ctx, cl, fetches.Records())
		cl.AllowRebalance()
	}
	cl.AllowRebalance()
	cl.Close() // a dynamic member leaves the group; kgo's static members do not
	member.Closed()
}

// process prints each record, commits the next offset of each partition synchronously and
// prints what was committed.
func process(ctx context.Context, cl *kgo.Client, records []*kgo.Record) {
	if len(records) == 0 {
		return
	}
	next := map[int32]int64{}
	for _, r := range records {
		member.Record(r.Partition, r.Offset, r.Value)
		next[r.Partition] = max(next[r.Partition], r.Offset+1)
	}
	commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := cl.CommitRecords(commitCtx, records...); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			member.Fail(errors.New("commit: no answer within " + commitTimeout.String()))
		}
		member.Fail(err)
	}
	partitions := make([]int32, 0, len(next))
	for p := range next {
		partitions = append(partitions, p)
	}
	slices.Sort(partitions)
	for _, p := range partitions {
		member.Committed(p, next[p])
	}
}
