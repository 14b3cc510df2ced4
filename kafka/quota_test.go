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

func userEntity(name *string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "user", Name: name}}
}

func alterQuota(t *testing.T, adm *kadm.Client, e kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) error {
	t.Helper()
	res, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
	if err != nil {
		return err
	}
	return res[0].Err
}

// Client quotas are altered and described with kadm as Kafka's (alter
// and describe on the cluster), kept across a restart, and refused to a
// principal without those rights; a key logd does not serve is
// INVALID_REQUEST.
func TestClientQuotasWithKadm(t *testing.T) {
	dir := t.TempDir()
	ac := broker.AuthConfig{Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")}}
	b, addr, stop := startNodeIn(t, dir, ac)
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw"} {
		if err := b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	login := func(addr, user string) *kadm.Client {
		return kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, user, user+"-pw"))))
	}
	adm, evil := login(addr, "admin"), login(addr, "eve")
	if err := alterQuota(t, evil, userEntity(nil), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1}); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve alters a quota: %v", err)
	}
	if _, err := evil.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("eve describes the quotas: %v", err)
	}
	if err := alterQuota(t, adm, userEntity(nil), kadm.AlterClientQuotaOp{Key: "request_percentage", Value: 5}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("an unserved key: %v", err)
	}
	if err := alterQuota(t, adm, userEntity(kmsg.StringPtr("eve")), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1024},
		kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 2048}); err != nil {
		t.Fatal(err)
	}
	if err := alterQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id"}}, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 4096}); err != nil {
		t.Fatal(err)
	}
	if err := alterQuota(t, adm, userEntity(kmsg.StringPtr("eve")), kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Remove: true}); err != nil {
		t.Fatal(err)
	}

	stop()
	_, addr, _ = startNodeIn(t, dir, ac)
	adm = login(addr, "admin")
	all, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("after a restart: %+v %v", all, err)
	}
	eve, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: kmsg.StringPtr("eve"), MatchType: 0}})
	if err != nil || len(eve) != 1 || len(eve[0].Values) != 1 || eve[0].Values[0].Key != "producer_byte_rate" || eve[0].Values[0].Value != 1024 {
		t.Fatalf("eve's quota: %+v %v", eve, err)
	}
	def, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 1}})
	if err != nil || len(def) != 1 || def[0].Entity[0].Name != nil || def[0].Values[0].Value != 4096 {
		t.Fatalf("the default client id's quota: %+v %v", def, err)
	}
}

// A produce or a fetch past the principal's byte rate is answered with a
// throttle time (the client backs off); within it, or without a quota,
// with none.
func TestClientQuotaThrottles(t *testing.T) {
	b, _, admin, _ := secureNode(t)
	ctx := testCtx(t)
	if _, err := b.CreateTopic(ctx, "User:admin", topicConfig("q", 1)); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 3<<10)
	produce := func() int32 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "q"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatch(t, string(value))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce: %v %+v", err, resp)
		}
		return resp.ThrottleMillis
	}
	fetch := func() int32 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.MaxWaitMillis = 1<<20, 100
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "q"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Fatalf("fetch: %v %+v", err, resp)
		}
		return resp.ThrottleMillis
	}
	if th := produce(); th != 0 {
		t.Fatalf("throttled without a quota: %d ms", th)
	}
	if th := fetch(); th != 0 {
		t.Fatalf("fetch throttled without a quota: %d ms", th)
	}
	adm := kadm.NewClient(admin)
	if err := alterQuota(t, adm, userEntity(kmsg.StringPtr("admin")), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1024},
		kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 1024}); err != nil {
		t.Fatal(err)
	}
	// 3 KiB at 1 KiB/s is three seconds' worth, past the one second of
	// burst a quota allows: throttled however fast or slow the test runs.
	if th := produce(); th <= 0 {
		t.Fatalf("a produce past the quota: throttle %d ms", th)
	}
	if th := fetch(); th <= 0 {
		t.Fatalf("a fetch past the quota: throttle %d ms", th)
	}
	if err := alterQuota(t, adm, userEntity(kmsg.StringPtr("admin")), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Remove: true},
		kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Remove: true}); err != nil {
		t.Fatal(err)
	}
	if th := produce(); th != 0 {
		t.Fatalf("throttled after the quota's removal: %d ms", th)
	}
}
