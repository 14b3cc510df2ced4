// Package server is logd's gRPC front-end: the services of proto/logd/v1
// over package broker (the node's core). Package node assembles a node:
// it makes the front-end (New), opens the broker, hands the front-end a
// listener (Serve) and closes it (Close) in the node's shutdown order. Nothing else imports this package.
//
// Each handler decodes its request, calls the broker and encodes the
// answer. It holds no fetch, dedup, group or cluster logic of its own:
// what it keeps is what is gRPC's — request framing, ProduceStream's
// receive and send around the broker's Lanes, Subscribe's message cost and
// send timeout around the broker's Subscriptions (whose Wait paces and
// waits for records). Paging the topic list (broker.TopicPage) and
// reading ACLs from text (auth.ACLText) are the core's too.
//
// The broker answers typed errors; they become gRPC statuses in one place,
// errors.go (every status this package makes is made there), applied to
// every call's error by one interceptor.
//
// # Files
//
//	server.go         New, Serve and Close: the gRPC server and its options
//	config.go         Config and its defaults
//	auth.go           every call identified once (the broker's Gate), as its caller's own
//	produce.go        Produce: a batch, or plain records routed and encoded into batches
//	producestream.go  ProduceStream: receive, dispatch on broker.Lanes, send
//	fetch.go          Fetch and ListOffsets
//	decode.go         a read as a FetchResponse, records decoded on request
//	subscribe.go      Subscribe: a broker.Reader paced by broker.Subscription.Wait, the send timeout
//	offsets.go        CommitOffsets, FetchOffsets, ListGroups, DeleteGroup, ResetOffsets
//	admin.go          topic create, list, describe, alter, delete
//	cluster.go        Cluster.Status, Join, RemoveNode
//	groups.go         the Groups service: JoinGroup, Heartbeat, LeaveGroup, DescribeGroup
//	security.go       the Security service: users and ACLs
//	txn.go            the Transactions service: init, add partitions, send offsets, end
//	errors.go         the error -> status mapping
//	codec.go          the request codec (bad protobuf is INVALID_ARGUMENT)
//	metrics.go        the front-end's own collectors
//
// In a cluster a write the broker refuses because another node leads what
// it needs (broker.NotLeaderError with Untouched: users, ACLs, committed
// offsets, delete records, remove node) goes through broker.Forward, which
// makes it of that node over the peer service on the Raft port with the
// request's principal as data; topic changes the broker passes on itself,
// for every front-end. A produce or fetch answers UNAVAILABLE naming the
// partition's leader, which clients follow. No call of this API is ever
// another node's, and no metadata lets a caller speak for another
// principal.
package server
