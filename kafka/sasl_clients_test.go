package kafka

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/auth"
)

// kcat (librdkafka) logs in with SCRAM over TLS (security.protocol
// SASL_SSL), produces and consumes; a wrong password is an authentication
// error.
func TestKcatSASLSSL(t *testing.T) {
	needCommand(t, "kcat", "kcat")
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, tls: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := ss.core.CreateTopic(ctx, "", topicConfig("sec", 1)); err != nil {
		t.Fatal(err)
	}
	addr := ss.s.Addr().String()
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		sasl := func(pass string) []string {
			return []string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mech,
				"-X", "sasl.username=alice", "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=" + ss.ca.File}
		}
		run(t, ctx, "k:"+mech+"\n", "kcat", append(sasl("s3cret"), "-P", "-t", "sec", "-K:")...)
		out := run(t, ctx, "", "kcat", append(sasl("s3cret"), "-C", "-t", "sec", "-o", "beginning", "-e", "-f", "%k=%s\n")...)
		if !strings.Contains(out, "k="+mech+"\n") {
			t.Fatalf("%s: kcat consumed %q, want the record it produced", mech, out)
		}
		cmd := exec.CommandContext(ctx, "kcat", append(sasl("wrong"), "-L", "-m", "5")...)
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), "SASL authentication error") || !strings.Contains(string(b), "wrong user name or password") {
			t.Fatalf("%s with a wrong password: %v\n%s\nwant an authentication failure", mech, err, b)
		}
	}
}

const kafkajsSASL = `
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");
const [addr, ca, mechanism, password] = process.argv.slice(-4);
const kafka = new Kafka({ clientId: "logd-sasl", brokers: [addr], logLevel: logLevel.NOTHING, retry: { retries: 0 },
  ssl: { ca: [fs.readFileSync(ca, "utf-8")] }, sasl: { mechanism, username: "alice", password } });
(async () => {
  const producer = kafka.producer();
  await producer.connect();
  const sent = await producer.send({ topic: "sec", acks: -1, messages: [{ value: mechanism }] });
  await producer.disconnect();
  console.log(JSON.stringify({ sent: sent.length }));
})().catch((e) => { console.error(e.name + ": " + e.message); process.exit(1); });
`

// kafkajs logs in over TLS with each mechanism (its names:
// scram-sha-256, scram-sha-512, plain) and produces; a wrong password is
// a KafkaJSSASLAuthenticationError.
func TestKafkaJSSASLSSL(t *testing.T) {
	needCommand(t, "node", "nodejs")
	modules, err := filepath.Abs("../.tools/kafkajs/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "kafkajs")); err != nil {
		t.Fatalf("kafkajs is not installed in %s: run `make tools`", modules)
	}
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, tls: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := ss.core.CreateTopic(ctx, "", topicConfig("sec", 1)); err != nil {
		t.Fatal(err)
	}
	node := func(mech, pass string) (string, error) {
		cmd := exec.CommandContext(ctx, "node", "-e", kafkajsSASL, ss.s.Addr().String(), ss.ca.File, mech, pass)
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	for _, mech := range []string{"scram-sha-256", "scram-sha-512", "plain"} {
		if out, err := node(mech, "s3cret"); err != nil || !strings.Contains(out, `{"sent":1}`) {
			t.Errorf("kafkajs %s: %v\n%s", mech, err, out)
		}
		if out, err := node(mech, "wrong"); err == nil || !strings.Contains(out, "KafkaJSSASLAuthenticationError") {
			t.Errorf("kafkajs %s with a wrong password: %v\n%s\nwant KafkaJSSASLAuthenticationError", mech, err, out)
		}
	}
}
