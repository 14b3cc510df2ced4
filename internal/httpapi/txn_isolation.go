package httpapi

import "fmt"

// readCommittedParam reads a read's isolation= parameter: read_committed
// (the default: committed data only, without the records of aborted
// transactions; docs/transactions.md) or read_uncommitted (every record
// up to the high watermark).
func readCommittedParam(v string) (bool, error) {
	switch v {
	case "", "read_committed":
		return true, nil
	case "read_uncommitted":
		return false, nil
	}
	return false, fmt.Errorf("isolation=%q: want read_committed (the default) or read_uncommitted", v)
}
