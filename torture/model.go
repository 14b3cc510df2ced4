package torture

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The model of one partition: a sequential append-only log. Its state is
// the sequence of values; append(v) puts v at the end and returns the offset
// it got (the length before); read(o) returns the values at o, o+1, ... (a
// prefix of them, at least one when o is below the end) and returns nothing
// when o is at or past the end.
//
// Keeping the state small. Every record carries a unique value, and acks
// and reads tell us which value sits at which offset. Given that this
// offset -> value map is a function (CheckOffsets and CheckDuplicates hold
// it so, and the model rejects any read that disagrees with it), the state
// sequence after L appends is map[0], ..., map[L-1]: the length L alone is
// the state. An append of the value at offset o is legal exactly when L == o;
// a read of k records from o is legal when L >= o+k and each record is the
// map's value at its offset; an empty read at o is legal when L <= o. A
// produce whose outcome is unknown takes effect at the offset where its
// value was read, or never when no read saw it (the final read covers every
// offset, so an unseen record was not appended).

// logInput is an operation's input in the model.
type logInput struct {
	append bool
	value  string // append
	from   int64  // read
}

// logOutput is an operation's output in the model.
type logOutput struct {
	offset  int64 // append: where the value went
	unknown bool  // append: the client never learnt it; offset is where it was read
	records []ReadRecord
}

// partitionModel is the porcupine model of one partition, whose offsets hold
// the values in at.
func partitionModel(partition int32, at map[int64]string, start int64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return start },
		Step: func(state, input, output any) (bool, any) {
			l := state.(int64)
			in, out := input.(logInput), output.(logOutput)
			if in.append {
				if out.offset != l {
					return false, l
				}
				return true, l + 1
			}
			if len(out.records) == 0 {
				return l <= in.from, l
			}
			for i, r := range out.records {
				if r.Offset != in.from+int64(i) || at[r.Offset] != r.Value {
					return false, l
				}
			}
			return l >= in.from+int64(len(out.records)), l
		},
		Equal: func(a, b any) bool { return a.(int64) == b.(int64) },
		Hash:  func(s any) uint64 { return uint64(s.(int64)) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(logInput), output.(logOutput)
			if in.append {
				if out.unknown {
					return fmt.Sprintf("append(%s) -> ?(read at %d)", in.value, out.offset)
				}
				return fmt.Sprintf("append(%s) -> %d", in.value, out.offset)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "read(%d/%d) -> [", partition, in.from)
			for i, r := range out.records {
				if i == 3 && len(out.records) > 4 {
					fmt.Fprintf(&b, " ... %d more", len(out.records)-3)
					break
				}
				fmt.Fprintf(&b, " %d:%s", r.Offset, r.Value)
			}
			b.WriteString(" ]")
			return b.String()
		},
		DescribeState: func(s any) string {
			l := s.(int64)
			if l == 0 {
				return "[]"
			}
			return fmt.Sprintf("[0..%d] last %s", l-1, at[l-1])
		},
	}
}
