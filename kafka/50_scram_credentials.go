package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// Kafka's SCRAM mechanism numbers (DescribeUserScramCredentials and
// AlterUserScramCredentials).
var scramMechanisms = map[int8]auth.Mechanism{1: auth.ScramSHA256, 2: auth.ScramSHA512}

func scramNumber(m auth.Mechanism) int8 {
	for n, mm := range scramMechanisms {
		if mm == m {
			return n
		}
	}
	return 0
}

// handleDescribeUserScramCredentials lists the users named (every user
// when none is) with their mechanisms and iteration counts, as `logd
// user list` does: describe on the cluster. A user named twice is
// DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND; a principal
// that may not describe the cluster gets CLUSTER_AUTHORIZATION_FAILED for
// the request.
func handleDescribeUserScramCredentials(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	return func() kmsg.Response {
		ctx, cancel := contextWithTimeout(r, 0)
		defer cancel()
		var names []string
		for _, u := range req.Users {
			names = append(names, u.Name)
		}
		if req.Users == nil {
			all, err := s.core.Users(ctx, r.c.principal)
			if err != nil {
				resp.ErrorCode, resp.ErrorMessage = r.errorCode(err), kmsg.StringPtr(err.Error())
				return resp
			}
			names = all
		}
		count := map[string]int{}
		for _, n := range names {
			count[n]++
		}
		for _, n := range names {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = n
			if count[n] > 1 {
				res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr(fmt.Sprintf("user %q is named more than once", n))
				resp.Results = append(resp.Results, res)
				continue
			}
			creds, err := s.core.UserMechanisms(ctx, r.c.principal, n)
			if _, denied := authorizationCode(err, auth.ResourceCluster); denied {
				resp.ErrorCode, resp.ErrorMessage, resp.Results = r.errorCode(err), kmsg.StringPtr(err.Error()), nil
				return resp
			}
			if err != nil {
				res.ErrorCode, res.ErrorMessage = r.errorCode(err), kmsg.StringPtr(err.Error())
			}
			for _, c := range creds {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramNumber(c.Mechanism), int32(c.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
}

// handleAlterUserScramCredentials sets (upsertions: the client's salt,
// iteration count and salted password) and removes (deletions) one
// mechanism's credential of a user, as `logd user add` and `logd user
// delete` do: alter on the cluster. One result per user; a user named
// twice is DUPLICATE_RESOURCE and nothing of it is changed; an unknown
// mechanism UNSUPPORTED_SASL_MECHANISM; a credential logd cannot use
// (iterations outside 4096 to 1048576, a salted password of the wrong
// size) UNACCEPTABLE_CREDENTIAL; deleting a credential the user lacks
// RESOURCE_NOT_FOUND.
func handleAlterUserScramCredentials(s *Server, r *request) func() kmsg.Response {
	req := r.kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	return func() kmsg.Response {
		ctx, cancel := contextWithTimeout(r, 0)
		defer cancel()
		count := map[string]int{}
		var order []string
		for _, d := range req.Deletions {
			if count[d.Name]++; count[d.Name] == 1 {
				order = append(order, d.Name)
			}
		}
		for _, u := range req.Upsertions {
			if count[u.Name]++; count[u.Name] == 1 {
				order = append(order, u.Name)
			}
		}
		results := map[string]*kmsg.AlterUserSCRAMCredentialsResponseResult{}
		for _, n := range order {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User = n
			if count[n] > 1 {
				res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr(fmt.Sprintf("user %q is named more than once: send one change per user", n))
			}
			results[n] = &res
		}
		fail := func(n string, code int16, err error) {
			results[n].ErrorCode, results[n].ErrorMessage = code, kmsg.StringPtr(err.Error())
		}
		for _, d := range req.Deletions {
			if count[d.Name] > 1 {
				continue
			}
			m, ok := scramMechanisms[d.Mechanism]
			if !ok {
				fail(d.Name, kerr.UnsupportedSaslMechanism.Code, fmt.Errorf("SCRAM mechanism %d: logd has 1 (SCRAM-SHA-256) and 2 (SCRAM-SHA-512)", d.Mechanism))
				continue
			}
			if err := s.core.DeleteUserCredential(ctx, r.c.principal, d.Name, m); err != nil {
				fail(d.Name, r.errorCode(err), err)
			}
		}
		for _, u := range req.Upsertions {
			if count[u.Name] > 1 {
				continue
			}
			code, err := s.upsertScram(r, u)
			if err != nil {
				fail(u.Name, code, err)
			}
		}
		for _, n := range order {
			resp.Results = append(resp.Results, *results[n])
		}
		return resp
	}
}

func (s *Server) upsertScram(r *request, u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (int16, error) {
	m, ok := scramMechanisms[u.Mechanism]
	if !ok {
		return kerr.UnsupportedSaslMechanism.Code, fmt.Errorf("SCRAM mechanism %d: logd has 1 (SCRAM-SHA-256) and 2 (SCRAM-SHA-512)", u.Mechanism)
	}
	if err := auth.ValidateUserName(u.Name); err != nil {
		return kerr.UnacceptableCredential.Code, fmt.Errorf("user %q: %v", u.Name, err)
	}
	sc, err := auth.SaltedCredential(m, u.Salt, u.SaltedPassword, int(u.Iterations))
	if err != nil {
		return kerr.UnacceptableCredential.Code, err
	}
	ctx, cancel := contextWithTimeout(r, 0)
	defer cancel()
	if err := s.core.SetUserCredential(ctx, r.c.principal, u.Name, sc); err != nil {
		if errors.Is(err, auth.ErrInvalid) {
			return kerr.UnacceptableCredential.Code, err
		}
		return r.errorCode(err), err
	}
	return 0, nil
}
