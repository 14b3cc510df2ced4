// Package torture is logd's fault-injection harness: a workload of producers,
// followers and consumer groups runs against a Cluster while nemeses crash
// and pause its nodes; every operation is recorded in a History, and checkers
// turn the History into verdicts. It is Jepsen's method, in Go, for one
// system.
//
// # The pieces
//
//   - History (history.go): every operation with its invocation and
//     completion time (nanoseconds since the run began) and its result.
//     An operation whose outcome the client could not learn (a produce that
//     timed out while the node was down) is recorded as OutcomeUnknown: it
//     may or may not have taken effect, and checkers treat it so.
//   - Workload (workload.go, reads.go, groups.go): producers append keyed
//     records whose values carry (producer, key, seq) (value.go), and
//     Kafka producers (kafka.go; 1 unless TORTURE_KAFKA says otherwise, 0
//     for none) append records of the same scheme over the Kafka protocol
//     with franz-go (idempotent, acks all, no linger, murmur2 keys as
//     logd routes them) to a KafkaCluster; their acknowledged records are
//     judged like the others, and any error but a refusal of the batch
//     itself is an unknown outcome (franz-go retries, so an earlier
//     attempt may have been appended);
//     followers read from chosen positions (earliest, latest, an offset, a
//     time) and tail the log; each consumer group reads, commits its
//     position, restarts from its committed offsets and is occasionally
//     reset; an observer reads committed offsets. GroupMembers (members.go;
//     3 unless TORTURE_GROUP_MEMBERS says otherwise, 0 for none)
//     share the topic's partitions as members of one group (MemberGroup):
//     each joins, reads what the coordinator assigns it, commits as the
//     member of its generation, leaves and joins again now and then, and
//     reports every assignment it holds; an observer reads the group's
//     committed offsets between two descriptions of its generation.
//     KafkaGroupMembers (kafkagroup.go; 2 unless TORTURE_KAFKA_GROUP says
//     otherwise) are franz-go members of two more such groups over the
//     Kafka protocol, KafkaMemberGroup (classic: JoinGroup, SyncGroup, the
//     cooperative-sticky balancer) and KafkaMemberGroup848 (KIP-848: the
//     coordinator assigns), committing what they read with auto-commit off
//     and rebalances held between polls; their coordinator is the
//     metadata leader, which the nemeses kill and pause, so they live
//     through coordinator moves and CheckGroupMembers judges them. It only
//     talks to a
//     Cluster (cluster.go): node addresses and kill / restart / pause /
//     resume, so the same workload runs on one process or on three.
//   - Nemeses (nemesis.go):
//     kill -9 then restart, SIGSTOP then SIGCONT,
//     SIGSTOP then kill -9 then restart, a full disk (a ProcessCluster
//     with DiskBytes puts each data directory on its own tmpfs and fills
//     it), a slow disk (fsyncs delayed), faults of the clients'
//     connections through a TCP proxy in front of the node (proxy.go: cut,
//     blackhole, slow; a ProcessCluster's node advertises its Kafka
//     listener's own proxy, faulted together with the API's), faults of one producer's own connection while the
//     others go on (clientnet.go: cut, mute: its requests applied, their
//     answers held), and partitions between nodes (raftmesh.go: a node
//     isolated, a 1/2 split, a bridge; half reset the links, half hold
//     their bytes), on a seeded schedule, one fault at a time or
//     (NemesisConfig.Combine) a process fault together with a network or
//     disk fault. With NemesisConfig.TargetLeader each fault (or
//     LeaderShare of them) strikes the leader of a random partition
//     (LeaderOf reads the cluster status). A node that exits on its own
//     is recorded as "crashed" and restarted; every fault is recorded with
//     its start, end and detail (a partition's components). The seed
//     fixes the schedule's choices, not the timing of a real system: two
//     runs with one seed are alike, not identical.
//   - Clusters: a ProcessCluster runs logd processes (process.go); in
//     cluster mode (ClusterArgs) with RaftMesh, every ordered pair of nodes
//     talks Raft through its own proxy, which each process learns from
//     LOGD_RAFT_ROUTES, so a partition cuts exactly the links it names. An
//     InProcessCluster (inproc.go) runs the servers inside the test
//     process on a FaultFS each (faultfs.go: ENOSPC, slow fsync, a crash
//     that loses what was not fsynced) behind the same proxies; its kill
//     and pause are approximations, documented there.
//   - Checkers (check_*.go), each a pure function of the operations:
//     CheckLost (every acknowledged record is in the final read at its
//     offset), CheckDuplicates (no value at two offsets), CheckKeyOrder
//     (each key's acknowledged records in sequence and acknowledgement
//     order), CheckOffsets (an offset never holds two values, reads have no
//     gaps), CheckCommittedOffsets (a group's committed offset never goes
//     backwards nor loses an acknowledged commit, except by an explicit
//     reset), CheckGroupMembers (check_members.go: no two members hold a
//     partition in one generation at once, a committed offset never goes
//     backwards within a generation, and no acknowledged record below a
//     committed offset was left undelivered to the members), CheckTimeIndex (a seek by time answers the first offset whose
//     timestamp is >= the time asked, across crash recovery of the time
//     index) and CheckLinearizable (porcupine, per partition, against the
//     append-only log model in model.go).
//   - Run (runner.go) drives workload and nemesis for a duration, heals the
//     cluster, requires every partition to accept an append again, reads
//     every partition to its end, checks, and writes a report
//     (report.txt, report.json, history.json.gz and, for a history that is not
//     linearizable, porcupine's HTML visualization) into a directory.
//
// # Invariants the checkers hold the server to
//
// They are logd's guarantees (README.md, docs/architecture.md): an
// acknowledged record is never lost and keeps its
// offset; a retried batch is never appended twice; records of one key are
// read back in the order they were acknowledged; an offset never changes its
// record; reads see only what a sequential append-only log would show
// (a record appended before a read began is visible to it, a read never
// sees a record before its append began); committed consumer offsets are
// durable and monotonic.
//
// # Retention
//
// With a retention policy on the topic (WorkloadConfig.TopicConfig),
// consumers that fall below the log start seek to it again, CheckLost
// counts acknowledged records the final read skipped as trimmed, and the
// linearizability check starts past the last trimmed offset whose produce
// had no known outcome (its value was never read, so its place is unknown).
//
// # Compacted topics
//
// With RunConfig.Compacted (on in TestTortureCluster, TestTortureSingleNode
// and TestTortureInProcess unless TORTURE_COMPACTED=0), a second workload
// (compacted.go, compacted_run.go) runs beside the first on a topic of its
// own (one partition) whose cleanup.policy is compact: 16 KiB segments
// (each roll kicks the cleaner), min.compaction.lag 10s (above the
// producers' delivery timeout), delete.retention 5s, dirty ratio 0.1.
// Two producers write
// values and tombstones (one write in eight) of 200 keys, each key's
// writes numbered by its producer (in the value "key/seq", or for a
// tombstone in the header seq); a scanner reads the whole topic from its
// start every 2 s; after the run two final scans read it again. Its
// operations go into a KVHistory of their own, written as
// compacted-history.json.gz, so the checkers above never see them, and
// CheckCompacted (check_compacted.go) judges them: in the final scans
// every key holds its newest acknowledged write or a newer one, never an
// older one, nothing only when that write is a tombstone that may have
// expired, and a value older than an expired tombstone (a deleted key come
// back) is a violation when both final scans show it; a scan during the
// run holds what was acknowledged before it began unless a newer write
// raced it; offsets only grow and never hold two writes, a key's records
// never go back in sequence, and no failed or unwritten write is read.
// Its counts say how much compaction the run saw: acknowledged writes the
// final scan no longer holds (removed), offsets it stepped over (gaps),
// keys whose tombstone expired (deleted); on a ProcessCluster the report
// adds the cleaners' bytes read and reclaimed (their metrics).
//
// A replica compacts only what its latest Raft snapshot covers, and a
// partition's Raft group snapshots once it is 8,192 entries past its last
// snapshot, looked at every 2 to 4 minutes of a Raft instance's life (a
// restart starts the wait again): on three processes under the nemeses a
// replica compacts only after minutes without a restart, so runs of a few
// minutes rarely compact (the verdict's removed and gaps counts are 0).
// The in-process cluster snapshots every 512 entries instead
// (compactedRaft), so its runs compact every few seconds; one node
// compacts at every roll.
//
// # The key-value view
//
// With RunConfig.KVView (in TestTortureCluster and TestTortureSingleNode
// unless TORTURE_KV=0), a third workload (kvview.go, kvview_run.go) uses
// the key-value view of a compacted topic of its own (two partitions, the
// compacted workload's topic settings): four clients, each connected to a
// random node, run one operation at a time on 16 shared keys, 20 a
// second: linearizable gets (35%), stale gets (10%), puts (20%),
// compare-and-sets expecting the offset the client last saw of the key
// (23%) and deletes, half of them conditional (12%). A write that failed
// other than by a refused condition has an unknown outcome. Its
// operations go into a ViewHistory, written as kv-history.json.gz, and
// CheckKVView (kvview_check.go) judges them with porcupine, key by key,
// against a register: a get returns the newest value and offset, a write
// lands at a higher offset than the key's last, a compare-and-set
// succeeds exactly when the key's latest offset is the one it expects
// (-1: no value) and a refusal names that offset (or, for a retried
// compare-and-set that was stored, its own); a write of unknown outcome
// may take effect at any moment after it began. A stale get may only
// return a value some put of its key wrote, at its offset.
//
// # Transactions
//
// With RunConfig.Txn (in TestTortureCluster and TestTortureSingleNode
// unless TORTURE_TXN=0), a third workload
// (txn_workload.go, txn_read.go, txn_run.go) runs over the cluster's Kafka
// listeners with franz-go on a 3-partition topic of its own. Two producers,
// each with its own transactional id (the second held to transaction
// version 1, as librdkafka, kafkajs and Sarama speak it; the first speaks
// version 2 once it knows the brokers), begin five transactions a second,
// write one record to each of one to three partitions (the value names
// the transaction and the partition), and commit three in four, abort the
// rest (or any whose write failed); one in fifteen is abandoned unended (a
// crash: the next instance's InitProducerID, or the timeout of 10 s,
// aborts it), and one in twenty is the last of its instance: a new
// instance of the transactional id fences it. A fenced instance stays open
// and now and then tries a write and a commit (a zombie). A read_committed
// reader follows every partition, each fetch of a partition one read from
// the position the previous one reached; after the run, once every
// partition's last stable offset is at its high watermark, final reads
// read everything again. The history (txn-history.json.gz) goes to
// CheckTxn (txn_check.go): no read returns a record of a transaction that
// did not commit, a committed transaction (or one a read saw) is visible
// whole in every read that went past one of its records and once in the
// final reads, and no write or commit of a fenced instance sent after the
// newer instance's first acknowledged write is acknowledged. CheckTxn also
// judges group offsets committed in transactions (TxnOffsetRead); the
// workload does not commit any yet. Each client (a producer instance, the
// reader, the final reader) logs at franz-go's Info level into a file of
// its own in the report directory's txn-clients/ (txn_log.go); the
// coordinator logs each end decision at the nodes' debug level (soak.sh
// SERVE_ARGS="--log-level debug").
//
// # Share groups
//
// With RunConfig.Share (in TestTortureCluster and TestTortureSingleNode
// unless TORTURE_SHARE=0; soak.sh SHARE=0 leaves it out), a workload
// (share_workload.go, share_member.go, share_run.go) runs a share group
// over the cluster's Kafka listeners with franz-go's share consumer: one
// producer writes 40 unique values a second to a 2-partition topic of its
// own, and five members (more than the partitions) poll it, each fetching
// only when polled, at most 8 records a poll (ShareMaxRecordsStrict), so
// that what the broker hands out is what the poll returns. The group is
// set up through one node (its configs are the cluster's):
// share.auto.offset.reset earliest, share.delivery.attempt.limit 3,
// share.record.lock.duration.ms 3000. TORTURE_SHARE=ordered also sets
// share.key.ordering=true and gives the records 8 keys (k<seq mod 8>,
// placed by their hash). A member accepts three records in
// four, releases one in eight, rejects the rest, and after a poll now and
// then stalls past its locks before answering (4%), closes (releasing
// what it holds, 2%) or crashes (3%: its connections cut, then closed, so
// its records stay locked until their locks expire); the next member
// takes its place. Every delivery (member, offset, value, delivery count)
// and every partition's acknowledgements of a flush, with what the
// broker answered (applied, refused, unknown), go into a ShareHistory
// (share-history.json.gz), with the polls' errors counted. After the run
// the group's configs are set again and three members
// accept everything until nothing has come for twice the lock duration
// and 6 s and no acknowledged record is unsettled (or nothing has come for
// 36 s, past the default lock duration); then each
// partition's end and, from the nodes that answer it (in a cluster the
// group's coordinator, for the partitions it leads), its share start
// offset. CheckShare (check_share.go) judges the history: no delivery
// count past the limit and no count handed out twice, a delivery returns
// its offset's acknowledged value, at most one applied accept or reject
// per record and no delivery after it (by delivery count: a stalled
// member's poll may still return an earlier delivery), no share start
// below the end after the drain, and every acknowledged record accepted
// or rejected (whatever the answer: franz-go resends an acknowledgement
// whose request failed, and the broker refuses the copy of one it
// applied) or delivered at the limit;
// a record seen at most at limit-1 deliveries and never answered is
// counted archived_unseen (one delivery whose response was lost with its
// node), one seen fewer times is lost. After the drain the group's
// dead-letter topic is read to its end, and then the accounting is
// exact: every acknowledged record is accepted or in the dead-letter
// topic, once, never both (a record whose deliveries went unseen, a poll
// that gave up while its fetch was under way, is found there). With ordering, it also checks that
// no record was handed out while an earlier record of its key (and
// partition) was in flight: that record delivered again by a poll begun
// after the later record's poll returned.
//
// # The harness tests itself
//
// TestTortureDetectsLostWrites cuts the tail of every partition's newest
// segment while the node is down after a kill (NemesisConfig.WhileDown), as
// a disk that lied about fsync would lose it, and requires the checkers to
// report the acknowledged records lost; check_test.go feeds each checker
// hand-made histories with one violation each.
//
// # Running
//
// `go test ./torture` runs a seeded 30-second single-node torture on the
// real binary (kill, pause, pause-kill), then 10-second runs with network
// faults, one client cut off or muted around kills, a full disk (root
// only) and retention, and the self-test.
// `make torture DURATION=10m` runs the first one longer; TORTURE_SEED picks
// the seed, TORTURE_NEMESES (make: NEMESES) the faults, and
// TORTURE_REPORT_DIR keeps the report; TORTURE_KAFKA (default 1) is how
// many Kafka producers the process runs add (TestTortureCluster,
// TestTortureSingleNode, TestTortureNetwork; the in-process cluster has
// no Kafka listener), and the report counts their produces.
// TORTURE_SERVE_ARGS (make: SERVE_ARGS) adds flags, split on spaces, to
// every `logd serve` the tests start (ProcessConfig.ServeArgs), and
// TORTURE_QUIET=FOR/EVERY (make: QUIET, e.g. 12s/30s) gives the workload
// quiet windows (QuietWindows): no client starts anything new in the last
// FOR of every EVERY while the nemeses go on, so partitions sit idle under
// faults. The report's header names both when set. TestRaftMesh and
// TestFaultFS test the partitions and the disk faults themselves.
//
// # Partitions that sleep
//
// Over a run on a ProcessCluster, a CounterScraper (metrics.go) reads
// every node's /metrics (the --http-addr the cluster gives each node)
// every 2 s and once at the end: logd_raft_sleeps_total and
// logd_raft_wakes_total, summed over the nodes and over each node's
// processes (a restarted node counts from 0 again). A node down or paused
// misses those samples (each scrape gives up after 1 s), and what a node
// counted after its last sample before a kill is lost. When a node
// exports them, the report says "replica sleeps / wakes: S / W". With
// --partition-hibernate-after > 0 in TORTURE_SERVE_ARGS the Hibernation
// check (CheckHibernation) makes a run in which no replica slept INVALID:
// it proved nothing about hibernation (quiet windows give partitions the
// idle time to fall asleep).
//
// TestTortureCluster runs three real processes in cluster mode with every
// process, partition and client fault (`make torture` runs it;
// TORTURE_TEST=SingleNode the single node), and TestTortureInProcess a
// seeded 60-second run on three in-process nodes with every nemesis,
// including ENOSPC and slow fsyncs; `make test` runs both (the process one
// for 30 s).
package torture
