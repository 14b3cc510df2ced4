package kafka

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey = 18

// handler starts a request (in the connection's reader, in arrival order)
// and returns what finishes it (in its own goroutine). finish returns the
// response, or nil when none is sent (produce with acks=0).
type handler func(s *Server, r *request) (finish func() kmsg.Response)

// api is one implemented API: the versions advertised and its handler.
type api struct {
	min, max int16
	handle   handler
}

// apis is the table ApiVersions advertises and requests are dispatched by;
// filled by init (ApiVersions' handler reads it, so a literal would be an
// initialization cycle).
var apis map[int16]api

func init() {
	apis = map[int16]api{
		0:  {3, 12, handleProduce},
		1:  {4, 12, handleFetch},
		2:  {1, 6, handleListOffsets},
		3:  {0, 12, handleMetadata},
		8:  {0, 8, handleOffsetCommit},
		9:  {0, 9, handleOffsetFetch},
		10: {0, 4, handleFindCoordinator},
		11: {0, 7, handleJoinGroup},
		12: {0, 4, handleHeartbeat},
		13: {0, 4, handleLeaveGroup},
		14: {0, 5, handleSyncGroup},
		15: {0, 5, handleDescribeGroups},
		16: {0, 5, handleListGroups},
		17: {0, 1, handleSaslHandshake},
		18: {0, 4, handleAPIVersions},
		19: {0, 7, handleCreateTopics},
		20: {0, 5, handleDeleteTopics},
		21: {0, 2, handleDeleteRecords},
		22: {0, 4, handleInitProducerID},
		23: {0, 4, handleOffsetForLeaderEpoch},
		24: {0, 3, handleAddPartitionsToTxn},
		25: {0, 3, handleAddOffsetsToTxn},
		26: {0, 5, handleEndTxn},
		28: {0, 5, handleTxnOffsetCommit},
		29: {0, 3, handleDescribeAcls},
		30: {0, 3, handleCreateAcls},
		31: {0, 3, handleDeleteAcls},
		35: {0, 4, handleDescribeLogDirs},
		36: {0, 2, handleSaslAuthenticate},
		32: {0, 4, handleDescribeConfigs},
		33: {0, 2, handleAlterConfigs},
		37: {0, 3, handleCreatePartitions},
		42: {0, 2, handleDeleteGroups},
		43: {0, 2, handleElectLeaders},
		44: {0, 1, handleIncrementalAlterConfigs},
		45: {0, 0, handleAlterPartitionReassignments},
		46: {0, 0, handleListPartitionReassignments},
		47: {0, 0, handleOffsetDelete},
		48: {0, 1, handleDescribeClientQuotas},
		49: {0, 1, handleAlterClientQuotas},
		50: {0, 0, handleDescribeUserScramCredentials},
		51: {0, 0, handleAlterUserScramCredentials},
		60: {0, 2, handleDescribeCluster},
		61: {0, 0, handleDescribeProducers},
		65: {0, 0, handleDescribeTransactions},
		66: {0, 2, handleListTransactions},
		68: {1, 1, handleConsumerGroupHeartbeat},
		69: {0, 1, handleConsumerGroupDescribe},
		75: {0, 0, handleDescribeTopicPartitions},
		76: {1, 1, handleShareGroupHeartbeat},
		77: {1, 1, handleShareGroupDescribe},
		78: {1, 2, handleShareFetch},
		79: {1, 2, handleShareAcknowledge},
		90: {0, 1, handleDescribeShareGroupOffsets},
		91: {0, 0, handleAlterShareGroupOffsets},
		92: {0, 0, handleDeleteShareGroupOffsets},
	}
	for key, a := range apis {
		// Never advertise past what kmsg can encode.
		if r := kmsg.RequestForKey(key); r == nil || r.MaxVersion() < a.max {
			panic("kafka: api table names a version kmsg lacks")
		}
		a.handle = loggingUnexpected(a.handle)
		apis[key] = a
	}
}

// supported reports whether version of the API key is implemented.
func supported(key, version int16) bool {
	a, ok := apis[key]
	return ok && version >= a.min && version <= a.max
}

// advertised returns the API table as ApiVersions sends it, by key.
func advertised() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for key, a := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, a.min, a.max
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}
