package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleInitProducerID gives an idempotent producer a fresh producer id
// (epoch 0) from the core. A producer re-initializing after an error
// (v3+, with its old id) also gets a fresh one: its old sequences are
// forgotten with it. A transactional id goes to the transaction
// coordinator (txn.go): its producer id and a new epoch, fencing the
// previous instance.
func handleInitProducerID(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	return func() kmsg.Response {
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if req.TransactionalID != nil {
			handleInitTransactions(s, r, req, resp)
			return resp
		}
		id, epoch, err := s.core.NewProducerID(r.ctx)
		if err != nil {
			resp.ErrorCode = r.errorCode(err)
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, epoch
		return resp
	}
}
