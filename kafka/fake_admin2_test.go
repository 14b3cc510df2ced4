package kafka

// The fake core's answers for the APIs of topic configs and the admin
// APIs added beside the first round's (fake_admin_test.go).

// fakeMaxBatchBytes is the fake node's bound on a batch (the broker's default).
const fakeMaxBatchBytes = 1 << 20

func (f *fakeCore) MaxBatchBytes() int { return fakeMaxBatchBytes }
