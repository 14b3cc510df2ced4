// Package server is logd's gRPC front-end: the services of proto/logd/v1
// over package broker (the node's core). Package node assembles a node:
// it makes the front-end (New), opens the broker with the front-end's
// Peers, hands it a listener (Serve) and closes it (Close) in the node's
// shutdown order. Nothing else imports this package.
//
// Each handler decodes its request, calls the broker and encodes the
// answer. It holds no fetch, dedup or cluster logic of its own: what it
// keeps is what is gRPC's — request framing, ProduceStream's ordering of
// a stream's requests, Subscribe's pace and memory, the routing and
// encoding of Produce's plain records into batches, and forwarding to
// another node over gRPC.
//
// The broker answers typed errors; they become gRPC statuses in one place,
// errors.go (every status this package makes is made there).
//
// # Files
//
//	server.go         New, Serve and Close: the gRPC server and its options
//	config.go         Config and its defaults
//	auth.go           every call identified once (the broker's Gate), forwarded principals
//	produce.go        Produce: a batch, or plain records routed and encoded into batches
//	producestream.go  ProduceStream: receive, dispatch on lanes, send
//	lanes.go          the per-(topic, partition) lane scheduler of ProduceStream
//	fetch.go          Fetch and ListOffsets
//	decode.go         a read as a FetchResponse, records decoded on request
//	subscribe.go      Subscribe: a broker.Reader paced by its client, on a budget of its own
//	offsets.go        CommitOffsets, FetchOffsets, ListGroups, ResetOffsets
//	admin.go          topic create, list, describe, alter, delete
//	cluster.go        Cluster.Status, Join, RemoveNode
//	groups.go         the Groups service: JoinGroup, Heartbeat, LeaveGroup, DescribeGroup
//	security.go       the Security service: users and ACLs
//	forward.go        the connections to other nodes: forwarding, cluster.Peers
//	forward_topics.go cluster.Peers' topic changes (the broker passes them on)
//	errors.go         the error -> status mapping
//	codec.go          the request codec (bad protobuf is INVALID_ARGUMENT)
//	metrics.go        the front-end's own collectors
//
// In a cluster a request the broker did not act on because another node
// leads the metadata (broker.NotLeaderError with Untouched) is forwarded
// to that node once, marked so it is never forwarded again; a partition
// request answers UNAVAILABLE naming the leader, which clients follow.
// Topic changes (create, alter, add partitions, delete) the broker itself
// passes on through cluster.Peers, for every front-end (the Kafka
// listener's too), carrying the request's principal.
package server
