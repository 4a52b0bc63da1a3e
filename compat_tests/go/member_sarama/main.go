// Command member_sarama is one IBM/sarama member of SCENARIOS.md's `group` scenario:
// `member_sarama group-member --bootstrap B --topic T --group G [--assignor A] ...`.
//
// A ConsumerGroup with a handler: the strategies here are eager, so Setup receives the
// member's whole assignment and Cleanup ends it. ConsumeClaim takes what its claim has
// buffered as one batch, prints it, marks the last record and commits synchronously
// (autocommit off, session.Commit) before it reads on; a session ends only after every
// ConsumeClaim returned, so nothing processed is left uncommitted by a clean member.
// session.Commit reports no error itself: sarama sends commit failures, like any other
// consumer error, to ConsumerGroup.Errors, and the member ends on the first of them.
// sarama's default strategy is range. MILLPOND_DRIVER_DEBUG=1 sends sarama's log to stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/IBM/sarama"

	"millpond/compat_tests/go/internal/member"
)

// batchMax bounds one batch, so a commit follows a burst of records soon.
const batchMax = 500

var strategies = map[string]func() sarama.BalanceStrategy{
	"range":      sarama.NewBalanceStrategyRange,
	"roundrobin": sarama.NewBalanceStrategyRoundRobin,
	"sticky":     sarama.NewBalanceStrategySticky,
}

func main() {
	a := member.Parse("range", "roundrobin", "sticky")
	if os.Getenv("MILLPOND_DRIVER_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
	c := sarama.NewConfig()
	c.ClientID = "millpond-compat-sarama-member"
	c.Version = sarama.V4_0_0_0
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Group.Session.Timeout = a.SessionTimeout
	c.Consumer.Group.Heartbeat.Interval = a.HeartbeatInterval()
	if a.Assignor != "" {
		c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategies[a.Assignor]()}
	}
	if a.InstanceID != "" {
		c.Consumer.Group.InstanceId = a.InstanceID
	}
	group, err := sarama.NewConsumerGroup([]string{a.Bootstrap}, a.Group, c)
	if err != nil {
		member.Fail(err)
	}
	go func() {
		for err := range group.Errors() {
			member.Fail(fmt.Errorf("consumer group error: %w", err))
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-member.CloseRequested()
		cancel()
	}()
	h := &handler{topic: a.Topic}
	// Consume returns at the end of each session (a rebalance), to be called again.
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{a.Topic}, h); err != nil && ctx.Err() == nil {
			member.Fail(fmt.Errorf("consume: %w", err))
		}
	}
	if err := group.Close(); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
		member.Fail(fmt.Errorf("close: %w", err))
	}
	member.Closed()
}

type handler struct {
	topic string
	owned member.Assignment
	// commit serializes the claims' batches: session.Commit sends every marked offset
	// of the session, so a batch's "committed" line is printed only after its own commit.
	commit sync.Mutex
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	// sarama's own log is verbose: one line per session says what a failure needs.
	member.Logf("session: member %s, generation %d, claims %v", s.MemberID(), s.GenerationID(), s.Claims())
	h.owned.Replace(s.Claims()[h.topic])
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error {
	h.owned.Replace(nil)
	return nil
}

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case <-s.Context().Done():
			return nil
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.process(s, buffered(claim, msg))
		}
	}
}

// buffered is first and what the claim already holds after it, up to batchMax, without
// waiting.
func buffered(claim sarama.ConsumerGroupClaim, first *sarama.ConsumerMessage) []*sarama.ConsumerMessage {
	batch := []*sarama.ConsumerMessage{first}
	for len(batch) < batchMax {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return batch
			}
			batch = append(batch, msg)
		default:
			return batch
		}
	}
	return batch
}

func (h *handler) process(s sarama.ConsumerGroupSession, batch []*sarama.ConsumerMessage) {
	h.commit.Lock()
	defer h.commit.Unlock()
	last := batch[0]
	for _, msg := range batch {
		member.Record(msg.Partition, msg.Offset, msg.Value)
		if msg.Offset > last.Offset {
			last = msg
		}
	}
	s.MarkMessage(last, "")
	s.Commit()
	member.Committed(last.Partition, last.Offset+1)
}
