package torture

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/routing"
)

// The Kafka producers' partitioner puts every workload key where logd's
// routing puts it, so a key's records from franz-go and from logd's client
// would share a partition.
func TestKafkaPartitionerIsLogds(t *testing.T) {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("torture")
	for _, n := range []int{1, 3, 7, 64} {
		for p := range 8 {
			for k := range 16 {
				key := KeyName(p, k)
				got := part.Partition(&kgo.Record{Key: []byte(key)}, n)
				if want := routing.ForKey([]byte(key), n); int32(got) != want {
					t.Errorf("key %s among %d partitions: franz-go picks %d, logd %d", key, n, got, want)
				}
			}
		}
	}
}

func TestKafkaDefinite(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{kerr.MessageTooLarge, true},
		{fmt.Errorf("wrapped: %w", kerr.TopicAuthorizationFailed), true},
		{kgo.ErrRecordTimeout, false},
		{kgo.ErrRecordRetries, false},
		{kerr.NotLeaderForPartition, false},
		{kerr.RequestTimedOut, false},
		{errors.New("connection reset by peer"), false},
	} {
		if got := kafkaDefinite(c.err); got != c.want {
			t.Errorf("kafkaDefinite(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
