package torture

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/routing"
)

// KafkaCluster is a Cluster whose nodes serve the Kafka protocol: the
// workload's Kafka producers (WorkloadConfig.KafkaProducers) need it.
type KafkaCluster interface {
	// KafkaAddr is where Kafka clients reach node (its advertised
	// address), "" when it has no Kafka listener.
	KafkaAddr(node int) string
}

// kafkaAddrs are the cluster's Kafka addresses, node first (the others
// follow as more seeds); nil when the cluster serves no Kafka.
func (w *Workload) kafkaAddrs(node int) []string {
	kc, ok := w.cluster.(KafkaCluster)
	if !ok {
		return nil
	}
	var addrs []string
	for i := range w.cluster.Size() {
		if a := kc.KafkaAddr((node + i) % w.cluster.Size()); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// kafkaDefinite reports whether a Kafka produce error proves the record
// was not written. franz-go retries a batch after a timeout or a lost
// connection, so a refusal may follow an attempt that was appended: only
// refusals every attempt of the batch would have met (the batch itself is
// refused, or the client may not write the topic at all) are definite.
// Everything else (timeouts, retries exhausted, connections lost, not
// leader, the client closed with records buffered) is unknown.
func kafkaDefinite(err error) bool {
	for _, e := range []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
		kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.InvalidTopicException} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// newKafkaProducer is producer id's franz-go client: idempotent (franz-go's
// default), acks from all in-sync replicas, no linger, keyed records
// partitioned by murmur2 as logd's routing.ForKey does, and the gRPC
// producers' timeouts. Its metadata may refresh every 250 ms (franz-go's
// default floor is 5 s): after NOT_LEADER_OR_FOLLOWER a partition's
// records would otherwise wait out a 4 s delivery timeout before the
// client looked for the new leader, and the soaks acknowledged a third as
// many Kafka records as gRPC ones at the same offered rate.
func (w *Workload) newKafkaProducer(seeds []string) (*kgo.Client, error) {
	p := w.cfg.Producer
	return kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(w.cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProduceRequestTimeout(p.RequestTimeout),
		kgo.RecordDeliveryTimeout(p.DeliveryTimeout),
		kgo.RetryBackoffFn(func(int) time.Duration { return p.RetryBackoff }),
		kgo.DialTimeout(2*time.Second),
		kgo.MaxBufferedRecords(w.cfg.MaxOutstanding),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
}

// kafkaProduce runs Kafka producer i, whose records carry producer id
// Producers+1+i (Producers is CheckAvailable's): the keys and values of
// produce, sent over the Kafka protocol, paced at ProduceRate, at most
// MaxOutstanding unacknowledged.
func (w *Workload) kafkaProduce(ctx context.Context, i int) {
	id := w.cfg.Producers + 1 + i
	rng := w.rng(3000 + i)
	proc := w.process()
	seeds := w.kafkaAddrs(rng.IntN(w.cluster.Size()))
	if len(seeds) == 0 {
		w.cfg.Logf("kafka producer %d: the cluster serves no Kafka", id)
		return
	}
	cl, err := w.newKafkaProducer(seeds)
	if err != nil {
		w.cfg.Logf("kafka producer %d: %v", id, err)
		return
	}
	var pending sync.WaitGroup
	w.paced(ctx, rng, id, proc, func(op Op, release func()) {
		pending.Add(1)
		op.Invoke = w.h.Now()
		// Not ctx: a record is never withdrawn once handed over, it is
		// delivered or times out (RecordDeliveryTimeout).
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(op.Key), Value: []byte(op.Value)}, func(r *kgo.Record, err error) {
			defer pending.Done()
			w.kafkaDone(op, r, err)
			release()
		})
	})
	// Deliver what is buffered; Close fails what is left, and every
	// promise has run when pending is done.
	fctx, cancel := context.WithTimeout(context.Background(), w.cfg.Producer.DeliveryTimeout+5*time.Second)
	if err := cl.Flush(fctx); err != nil {
		w.cfg.Logf("kafka producer %d: flush: %v", id, err)
	}
	cancel()
	cl.Close()
	pending.Wait()
}

// kafkaDone records a Kafka produce once its promise ran.
func (w *Workload) kafkaDone(op Op, r *kgo.Record, err error) {
	op.Complete = w.h.Now()
	switch {
	case err == nil:
		op.Outcome, op.Partition, op.Offset = OutcomeOK, r.Partition, r.Offset
		if want := routing.ForKey(r.Key, int(w.cfg.Partitions)); r.Partition != want {
			w.cfg.Logf("kafka producer %d: key %s went to partition %d, logd routes it to %d", op.Producer, r.Key, r.Partition, want)
		}
	case kafkaDefinite(err):
		op.Outcome, op.Err = OutcomeFail, fmt.Sprintf("kafka: %v", err)
	default:
		op.Outcome, op.Err = OutcomeUnknown, fmt.Sprintf("kafka: %v", err)
	}
	w.h.Add(op)
}
