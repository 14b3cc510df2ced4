// Package client is the Go client of logd: a Producer that appends records,
// a Consumer that reads them back from any position, and an Admin for topics
// and consumer groups' committed offsets. It speaks the gRPC API of
// proto/logd/v1 and encodes record batches with internal/batch, the codec the
// server stores, so a batch travels and is stored as the client built it.
//
// # Connections
//
// Dial takes one or more nodes' API addresses (seeds, comma-separated). A
// request answered UNAVAILABLE with the leader's address (the node is not the
// partition's leader) is sent again to that leader, transparently; a seed
// that cannot answer is skipped for the next one. The client keeps one
// connection per address, and remembers each partition's leader until a
// request to it fails.
//
// # Producer guarantees
//
//   - Routing: an explicit Record.Partition wins; else a keyed record goes to
//     routing.ForKey(key, n), the partition a Kafka client would choose;
//     else records are spread in sticky batches, one partition per batch,
//     round-robin.
//   - Acknowledgement: a record's Future completes once the server
//     acknowledged its batch (durable per the server's fsync policy and the
//     Acks option) or once the record failed for good.
//   - No duplicates on retry: every batch carries a producer id and a
//     per-partition sequence number. A retry (after UNAVAILABLE, a timeout, a
//     broken stream or an out-of-order answer) resends the same bytes, so the
//     server recognises a batch it already appended and answers with the
//     original offsets instead of appending it again.
//   - Per-partition order: a partition's full batches are pipelined, up to
//     4 in flight, on one ProduceStream per server, where the server appends
//     a partition's requests in the order they arrive and refuses a sequence
//     gap. When an answer is not a success, the partition's window is settled
//     in order: each batch retried with its bytes unchanged, or, when a batch
//     before it failed for good without being appended, re-encoded at the
//     sequence that batch left free. So records of one partition (hence of one
//     key) are appended in the order Produce accepted them. Until the server
//     acknowledged a batch of the producer id (it accepts an unknown producer
//     at any sequence), a partition has one batch in flight. A partly filled
//     batch is sent when the partition has none in flight (or on Flush and
//     Close). Different partitions are sent concurrently.
//   - Bounded memory: records accepted but not yet acknowledged count against
//     ProducerOptions.MaxBufferedBytes. When the buffer is full Produce waits
//     for room (or its context), or fails with ErrBufferFull when
//     ProducerOptions.FailWhenFull is set. Nothing is buffered without bound.
//   - A batch that cannot be delivered within ProducerOptions.DeliveryTimeout
//     fails its records. When its outcome is unknown (it may have been
//     appended, or be appended later), the partition continues as the
//     producer's next epoch from sequence 0 (Kafka's KIP-360), so the next
//     batches are not refused as out of order, and the partition refuses
//     the failed batch should an attempt of it arrive after them: a record
//     that failed never lands after a later record of the same producer.
//   - Close sends everything buffered and waits for it; CloseContext bounds
//     that wait and fails what is left with ErrClosed. Either way every
//     goroutine and stream of the Producer has stopped when it returns.
//
// # Consumer
//
// A Consumer reads one topic's partitions (all of them, or those listed) from
// a start position: the group's committed offset when a Group is set and has
// one, else ConsumerOptions.Start (earliest by default). Each partition is
// read on a Subscribe stream from its position (the server pushes batches
// while the application handles the last ones, within HTTP/2 flow control;
// a server without Subscribe is read with Fetch long-polls and one prefetch
// per partition); Poll returns the next records of each partition in offset
// order, waiting up to MaxWait when none is there. Without Follow, Poll returns io.EOF once every partition
// reached the high watermark it had when the consumer started. A read below
// the log start (trimmed by retention) fails with an *OutOfRangeError carrying
// the partition's earliest and latest offsets. A failed Poll moves no
// position, so calling it again retries (after UNAVAILABLE, say, while a
// server restarts). Commit stores what Poll
// returned so far as the group's committed offsets (commit after processing
// for at-least-once delivery).
//
// # Group consumer
//
// A GroupConsumer (NewGroupConsumer) is a member of a consumer group: the
// group's coordinator shares the partitions of the member's topics (one or
// several: GroupConsumerOptions.Topic and Topics) among the members, and the
// member reads its share with one Consumer per topic, polled together. It
// heartbeats in the background; a rebalance the heartbeat learns of ends the
// Poll under way, and the next Poll joins again (committing what it gives
// up). docs/groups.md says how groups behave.
//
// # Errors and retries
//
// Every condition an application branches on is a sentinel matched with
// errors.Is: ErrTopicNotFound, ErrTopicExists, ErrPartitionNotFound,
// ErrOffsetOutOfRange (errors.As gives the *OutOfRangeError), ErrNotLeader,
// ErrUnavailable, ErrUnreachable, ErrInvalidArgument, ... Errors from a node
// keep their gRPC status too (status.Code works). Admin and metadata calls
// retry ErrUnavailable (an election, a node restarting or still setting up)
// with backoff for up to WithRetryTimeout (default 30s) before returning it;
// when no node has ever answered the Client, nothing is running there and
// the call fails at once with ErrUnreachable.
//
// # Example
//
//	c, err := client.Dial("127.0.0.1:7070") // or "host1:7070,host2:7070"
//	if err != nil { ... }
//	defer c.Close()
//
//	_, err = c.Admin().CreateTopic(ctx, "orders", client.TopicOptions{Partitions: 3})
//	if err != nil && !errors.Is(err, client.ErrTopicExists) { ... }
//
//	p := c.NewProducer(client.ProducerOptions{})
//	f := p.Produce(ctx, client.Record{Topic: "orders", Key: []byte("alice"), Value: []byte("42")})
//	ack, err := f.Get(ctx) // ack.Partition, ack.Offset
//	p.Close()
//
//	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: "orders", Group: "billing"})
//	recs, err := cons.Poll(ctx)
//	err = cons.Commit(ctx)
//	cons.Close()
package client
