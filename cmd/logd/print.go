package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/recordtext"
)

// printer writes one consumed record.
type printer func(w *bufio.Writer, r client.ConsumedRecord) error

// valuePrinter prints the value on its own line.
func valuePrinter(w *bufio.Writer, r client.ConsumedRecord) error {
	w.Write(r.Value)
	return w.WriteByte('\n')
}

// jsonRecord is one line of consume --json.
type jsonRecord struct {
	Topic         string            `json:"topic"`
	Partition     int32             `json:"partition"`
	Offset        int64             `json:"offset"`
	Key           *string           `json:"key"`
	KeyEncoding   string            `json:"key_encoding,omitempty"`
	Value         string            `json:"value"`
	ValueEncoding string            `json:"value_encoding,omitempty"`
	Timestamp     string            `json:"timestamp"`
	Headers       map[string]string `json:"headers,omitempty"`
}

func jsonPrinter(w *bufio.Writer, r client.ConsumedRecord) error {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: r.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	if r.Key != nil {
		k, enc := recordtext.TextOrBase64(r.Key)
		j.Key, j.KeyEncoding = &k, enc
	}
	j.Value, j.ValueEncoding = recordtext.TextOrBase64(r.Value)
	if len(r.Headers) > 0 {
		j.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			j.Headers[h.Key] = string(h.Value)
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}

// formatPrinter compiles a --format template (see consume --help).
func formatPrinter(format string) (printer, error) {
	type piece struct {
		lit  string
		verb byte // 0: lit only
	}
	var pieces []piece
	var lit strings.Builder
	flush := func(verb byte) {
		pieces = append(pieces, piece{lit: lit.String(), verb: verb})
		lit.Reset()
	}
	endsWithNewline := false
	for i := 0; i < len(format); i++ {
		ch := format[i]
		switch {
		case ch == '%' && i+1 < len(format):
			i++
			switch v := format[i]; v {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'k', 's', 'T', 'D', 'h':
				flush(v)
			default:
				return nil, fmt.Errorf("unknown verb %%%c in %q: use %%t %%p %%o %%k %%s %%T %%D %%h or %%%%", v, format)
			}
		case ch == '\\' && i+1 < len(format):
			i++
			switch v := format[i]; v {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(v)
			}
		case ch == '%':
			return nil, fmt.Errorf("%q ends with a lone %%: write %%%% for a percent sign", format)
		default:
			lit.WriteByte(ch)
		}
	}
	endsWithNewline = strings.HasSuffix(lit.String(), "\n")
	if !endsWithNewline {
		lit.WriteByte('\n')
	}
	flush(0)
	return func(w *bufio.Writer, r client.ConsumedRecord) error {
		for _, p := range pieces {
			w.WriteString(p.lit)
			writeVerb(w, p.verb, r)
		}
		return nil
	}, nil
}

// writeVerb writes the field of r that a --format verb names (0: none).
func writeVerb(w *bufio.Writer, verb byte, r client.ConsumedRecord) {
	switch verb {
	case 't':
		w.WriteString(r.Topic)
	case 'p':
		w.WriteString(strconv.Itoa(int(r.Partition)))
	case 'o':
		w.WriteString(strconv.FormatInt(r.Offset, 10))
	case 'k':
		w.Write(r.Key)
	case 's':
		w.Write(r.Value)
	case 'T':
		w.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	case 'D':
		w.WriteString(r.Timestamp.UTC().Format(time.RFC3339Nano))
	case 'h':
		for i, h := range r.Headers {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(h.Key)
			w.WriteByte('=')
			w.Write(h.Value)
		}
	}
}
