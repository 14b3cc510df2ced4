package kafka

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/broker"
)

// errNoQuotas answers the quota APIs on a core without them.
var errNoQuotas = errors.New("this node does not serve client quotas")

// handleDescribeClientQuotas lists the client quotas whose entities match
// the request's components (describe on the cluster).
func handleDescribeClientQuotas(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	return func() kmsg.Response {
		ac := s.adminCore()
		if ac == nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(errNoQuotas.Error())
			return resp
		}
		var filters []broker.QuotaFilter
		for _, c := range req.Components {
			f := broker.QuotaFilter{Type: c.EntityType}
			switch c.MatchType {
			case 0:
				f.Match = "exact"
				if c.Match != nil {
					f.Name = *c.Match
				}
			case 1:
				f.Match = "default"
			default:
				f.Match = "any"
			}
			filters = append(filters, f)
		}
		qs, err := ac.ClientQuotas(r.ctx, r.c.principal, filters, req.Strict)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = r.errorCode(err), kmsg.StringPtr(err.Error())
			return resp
		}
		for _, q := range qs {
			e := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, p := range q.Entity {
				ep := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				ep.Type = p.Type
				if !p.Default {
					ep.Name = kmsg.StringPtr(p.Name)
				}
				e.Entity = append(e.Entity, ep)
			}
			for _, k := range slices.Sorted(maps.Keys(q.Values)) {
				v := kmsg.NewDescribeClientQuotasResponseEntryValue()
				v.Key, v.Value = k, q.Values[k]
				e.Values = append(e.Values, v)
			}
			resp.Entries = append(resp.Entries, e)
		}
		return resp
	}
}

// handleAlterClientQuotas sets and removes client quotas, entity by
// entity (alter on the cluster): producer_byte_rate and
// consumer_byte_rate of a user, a client id or both, each by name or the
// default; anything else is INVALID_REQUEST for its entity.
func handleAlterClientQuotas(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	return func() kmsg.Response {
		ac := s.adminCore()
		for _, re := range req.Entries {
			out := kmsg.NewAlterClientQuotasResponseEntry()
			var e broker.QuotaEntity
			for _, p := range re.Entity {
				oe := kmsg.NewAlterClientQuotasResponseEntryEntity()
				oe.Type, oe.Name = p.Type, p.Name
				out.Entity = append(out.Entity, oe)
				part := broker.QuotaEntityPart{Type: p.Type, Default: p.Name == nil}
				if p.Name != nil {
					part.Name = *p.Name
				}
				e = append(e, part)
			}
			set := map[string]float64{}
			var remove []string
			for _, op := range re.Ops {
				if op.Remove {
					remove = append(remove, op.Key)
				} else {
					set[op.Key] = op.Value
				}
			}
			err := errNoQuotas
			if ac != nil {
				ctx, cancel := contextWithTimeout(r, 0)
				err = ac.AlterClientQuota(ctx, r.c.principal, e, set, remove, req.ValidateOnly)
				cancel()
			}
			if err != nil {
				out.ErrorCode, out.ErrorMessage = r.errorCode(err), kmsg.StringPtr(err.Error())
			}
			resp.Entries = append(resp.Entries, out)
		}
		return resp
	}
}

// throttle counts a produce's or a fetch's bytes against the client's
// quota and returns the response's throttle time in milliseconds (0 within
// the quota, or on a core without quotas). The answer is sent at once; a
// client backs off for that long before its next request to this node,
// as Kafka clients do since Kafka 2.0 (KIP-219).
func (s *Server) throttle(r *request, produce bool, n int) int32 {
	ac := s.adminCore()
	if ac == nil {
		return 0
	}
	d := ac.QuotaThrottle(r.c.principal, r.hdr.clientID, produce, n)
	return int32(min(d, time.Hour) / time.Millisecond)
}

// fetchedLen is the size of a fetch's batches, what the consumer byte
// rate quota counts.
func fetchedLen(res FetchResult) int {
	n := 0
	for _, p := range res.Partitions {
		n += len(p.Batches)
	}
	return n
}
