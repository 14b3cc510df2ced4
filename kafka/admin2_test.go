package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// secureNode is a real node under --auth required with authorization on:
// admin a super user, eve a user without ACLs; it returns their clients.
func secureNode(t *testing.T) (b *broker.Broker, addr string, admin, eve *kgo.Client) {
	b, addr, _ = startNodeIn(t, t.TempDir(), broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw"} {
		if err := b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	admin = newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))
	eve = newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA512, "eve", "eve-pw")), kgo.RecordRetries(1))
	return b, addr, admin, eve
}

// Users are managed with kadm's SCRAM calls as with `logd user`: a user
// upserted with a client-salted password logs in; its mechanisms are
// described; deleting its only mechanism deletes it. A principal that may
// not describe or alter the cluster is refused and changes nothing.
func TestScramCredentialsWithKadm(t *testing.T) {
	b, addr, admin, eve := secureNode(t)
	ctx := testCtx(t)
	adm, evil := kadm.NewClient(admin), kadm.NewClient(eve)

	if _, err := evil.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve describes users: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	res, err := evil.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "mallet", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "x"}})
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(res["mallet"].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve upserts a user: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, res)
	}
	if users, _ := b.Users(ctx, "User:admin"); len(users) != 2 {
		t.Fatalf("users after eve's refused upsert: %v", users)
	}

	res, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-pw"}})
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("upsert carol: %v %+v", err, res)
	}
	carol := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA512, "carol", "carol-pw"))))
	if _, err := carol.ListBrokers(ctx); err != nil {
		t.Fatalf("carol logs in with her upserted credential: %v", err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := desc["carol"]
	if c.Err != nil || len(c.CredInfos) != 1 || c.CredInfos[0].Mechanism != kadm.ScramSha512 || c.CredInfos[0].Iterations != 8192 || len(desc) != 3 {
		t.Fatalf("described: %+v", desc)
	}
	if d, _ := adm.DescribeUserSCRAMs(ctx, "nobody"); !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("describe an unknown user: %+v", d)
	}
	res, _ = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha256, Iterations: 4096, Salt: []byte("s"), SaltedPassword: []byte("short")}})
	if !errors.Is(res["dave"].Err, kerr.UnacceptableCredential) {
		t.Fatalf("a salted password of the wrong size: %+v", res)
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("delete carol's credential: %v %+v", err, res)
	}
	if d, _ := adm.DescribeUserSCRAMs(ctx, "carol"); !errors.Is(d["carol"].Err, kerr.ResourceNotFound) {
		t.Fatalf("carol after her last credential went: %+v", d)
	}
}

// DescribeTopicPartitions answers Metadata's partitions in pages: at most
// ResponsePartitionLimit, the rest named by the cursor; a topic the
// principal may not describe is TOPIC_AUTHORIZATION_FAILED.
func TestDescribeTopicPartitions(t *testing.T) {
	b, _, admin, eve := secureNode(t)
	ctx := testCtx(t)
	for name, n := range map[string]int32{"a": 3, "b": 1} {
		if _, err := b.CreateTopic(ctx, "User:admin", topicConfig(name, n)); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(cl *kgo.Client, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = 2, cursor
		for _, tp := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = tp
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	got := func(resp *kmsg.DescribeTopicPartitionsResponse) (out []string) {
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				out = append(out, *tp.Topic+"/"+string(rune('0'+p.Partition)))
				if p.LeaderID != b.LocalNode().KafkaID || len(p.Replicas) != 1 {
					t.Errorf("%s/%d: leader %d, replicas %v", *tp.Topic, p.Partition, p.LeaderID, p.Replicas)
				}
			}
		}
		return out
	}
	first := describe(admin, nil, "b", "a")
	if g := got(first); len(g) != 2 || g[0] != "a/0" || g[1] != "a/1" || first.NextCursor == nil || first.NextCursor.Topic != "a" || first.NextCursor.Partition != 2 {
		t.Fatalf("first page: %v, cursor %+v", g, first.NextCursor)
	}
	cur := kmsg.NewDescribeTopicPartitionsRequestCursor()
	cur.Topic, cur.Partition = "a", 2
	second := describe(admin, &cur, "b", "a")
	if g := got(second); len(g) != 2 || g[0] != "a/2" || g[1] != "b/0" || second.NextCursor != nil {
		t.Fatalf("second page: %v, cursor %+v", g, second.NextCursor)
	}
	refused := describe(eve, nil, "a")
	if len(refused.Topics) != 1 || refused.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(refused.Topics[0].Partitions) != 0 {
		t.Fatalf("eve describes a: %+v", refused.Topics)
	}
	if all := describe(eve, nil); len(all.Topics) != 0 {
		t.Fatalf("eve lists %d topics", len(all.Topics))
	}
}

// ApiVersions v4 is answered in full (Sarama from Kafka version 3.9 asks
// v4 first).
func TestAPIVersionsV4(t *testing.T) {
	s := startServer(t, newFakeCore(), Config{})
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	cl := newClient(t, s.AdvertisedAddr(), kgo.MaxVersions(nil))
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.Version != 4 || len(resp.ApiKeys) != len(apis) {
		t.Fatalf("v4: error %d, version %d, %d keys", resp.ErrorCode, resp.Version, len(resp.ApiKeys))
	}
}

// DescribeLogDirs lists this node's replicas with their bytes on disk,
// to a principal that may describe the cluster; eve may not.
func TestDescribeLogDirs(t *testing.T) {
	b, _, admin, eve := secureNode(t)
	ctx := testCtx(t)
	for name, n := range map[string]int32{"a": 2, "b": 1} {
		if _, err := b.CreateTopic(ctx, "User:admin", topicConfig(name, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("0123456789")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(eve).DescribeBrokerLogDirs(ctx, b.LocalNode().KafkaID, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve describes log dirs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	dirs, err := kadm.NewClient(admin).DescribeBrokerLogDirs(ctx, b.LocalNode().KafkaID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 1 {
		t.Fatalf("%d dirs", len(dirs))
	}
	sizes := map[string]int64{}
	for _, d := range dirs {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("dir %+v", d)
		}
		for _, ps := range d.Topics {
			for _, p := range ps {
				sizes[p.Topic+"/"+string(rune('0'+p.Partition))] = p.Size
			}
		}
	}
	// b/0 is empty; the partition of a holding the record is larger.
	if len(sizes) != 3 || max(sizes["a/0"], sizes["a/1"]) <= sizes["b/0"] {
		t.Fatalf("partition sizes %v, want a/0, a/1 (one holding the record) and b/0", sizes)
	}
	only, err := kadm.NewClient(admin).DescribeBrokerLogDirs(ctx, b.LocalNode().KafkaID, kadm.TopicsSet{"b": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range only {
		if len(d.Topics) != 1 || len(d.Topics["b"]) != 1 {
			t.Fatalf("asked b/0, got %+v", d.Topics)
		}
	}
}
