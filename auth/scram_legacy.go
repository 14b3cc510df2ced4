package auth

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
)

// librdkafka before 2.6.1 (Debian's 2.0.2 and Ubuntu's 2.3.0 among them,
// so kcat and confluent-kafka-python as distributions ship them) answers
// SCRAM's server-first message with the nonce c-nonce + (c-nonce +
// s-nonce): it prepends its own nonce to the server's, which already
// starts with it (confluentinc/librdkafka#4895). Kafka brokers up to 3.9
// accepted that; xdg-go/scram, like Kafka 4, compares the nonce strictly.
// The exchange accepts exactly that one other form, and checks the proof
// itself over the message as the client sent it. Accepting it costs
// nothing: the whole fresh server nonce is still required, the proof still
// covers the client's final message, and any other nonce is refused.

// scramFirst is what the exchange keeps of its first round, to check a
// librdkafka-style final message.
type scramFirst struct {
	gs2Header   string // "n,," or "n,a=user,", as the client sent it
	clientBare  string // client-first-message-bare
	serverFirst string
	clientNonce string
	nonce       string // the server's r=: client nonce + server nonce
}

// recordFirst keeps the first round of a SCRAM exchange: the client's
// message and the server's answer.
func (x *SASLExchange) recordFirst(clientFirst, serverFirst string) {
	// gs2-header = gs2-cbind-flag "," [authzid] ","
	i := strings.Index(clientFirst, ",")
	if i < 0 {
		return
	}
	j := strings.Index(clientFirst[i+1:], ",")
	if j < 0 {
		return
	}
	split := i + 1 + j + 1
	f := &scramFirst{gs2Header: clientFirst[:split], clientBare: clientFirst[split:], serverFirst: serverFirst,
		clientNonce: scramAttr(clientFirst[split:], 'r'), nonce: scramAttr(serverFirst, 'r')}
	if f.clientNonce != "" && strings.HasPrefix(f.nonce, f.clientNonce) {
		x.first = f
	}
}

// scramAttr is the value of attribute a in a SCRAM message, or "".
func scramAttr(msg string, a byte) string {
	for _, kv := range strings.Split(msg, ",") {
		if len(kv) >= 2 && kv[0] == a && kv[1] == '=' {
			return kv[2:]
		}
	}
	return ""
}

// isLegacyFinal reports whether msg is a client-final message whose nonce
// is librdkafka's doubled form.
func (x *SASLExchange) isLegacyFinal(msg string) bool {
	f := x.first
	return f != nil && scramAttr(msg, 'r') == f.clientNonce+f.nonce
}

// stepLegacyFinal checks a librdkafka-style client-final message: the
// channel binding, then the proof (RFC 5802: ClientKey = proof XOR
// HMAC(StoredKey, AuthMessage), and H(ClientKey) must be StoredKey), and
// answers with the server's signature.
func (x *SASLExchange) stepLegacyFinal(msg string) ([]byte, error) {
	f := x.first
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, x.fail(errors.New("client-final message without a proof"))
	}
	withoutProof, proofB64 := msg[:i], msg[i+len(",p="):]
	if scramAttr(withoutProof, 'c') != base64.StdEncoding.EncodeToString([]byte(f.gs2Header)) {
		return nil, x.fail(errors.New("channel binding differs from the first message's"))
	}
	if authz := gs2AuthzID(f.gs2Header); authz != "" && authz != x.user {
		return nil, x.fail(errors.New("authorization identity is not the user"))
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return nil, x.fail(errors.New("proof is not base64"))
	}
	h, size, _ := x.mechanism.scramHash()
	authMsg := []byte(f.clientBare + "," + f.serverFirst + "," + withoutProof)
	mac := func(key []byte) []byte {
		m := hmac.New(h, key)
		m.Write(authMsg)
		return m.Sum(nil)
	}
	sig := mac(x.cred.StoredKey)
	if len(proof) != size || len(sig) != size {
		return nil, x.fail(errors.New("proof of the wrong size"))
	}
	clientKey := make([]byte, size)
	subtle.XORBytes(clientKey, proof, sig)
	stored := h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), x.cred.StoredKey) != 1 || !x.known {
		return nil, x.fail(errors.New("invalid proof"))
	}
	if !x.stillCurrent() {
		return nil, x.fail(errors.New("credential changed or deleted during the exchange"))
	}
	x.done, x.principal = true, User(x.user)
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(x.cred.ServerKey))), nil
}

// gs2AuthzID is the authorization identity of a gs2 header ("n,a=bob,"),
// with SCRAM's escapes (=2C, =3D) undone, or "".
func gs2AuthzID(header string) string {
	a := scramAttr(header, 'a')
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(a)
}
