package main

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
)

// configHelp is the part of serve --help about where flags come from.
const configHelp = `Every flag can also come from an environment variable, LOGD_ and the flag's
name in capitals with underscores (LOGD_DATA_DIR for --data-dir), and from a
TOML file given with --config (or LOGD_CONFIG) whose keys are the flag names:

  data-dir = "/var/lib/logd"
  addr = "0.0.0.0:7070"
  fsync = "always"
  retention-interval = "30s"

A flag on the command line wins over the environment, which wins over the
file, which wins over the default. A key the file does not know is an error.
--print-config prints the effective configuration in that format, each value
with where it came from, and exits.`

// notConfigurable are flags that only make sense on a command line.
var notConfigurable = map[string]bool{"config": true, "print-config": true, "help": true}

// envName is the environment variable of a flag: data-dir -> LOGD_DATA_DIR.
func envName(flag string) string {
	return "LOGD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyConfig sets every flag of fs the command line left unset from its
// LOGD_* variable, else from the TOML file (path "" : LOGD_CONFIG, or
// none). It returns where each flag's value came from: "flag", "env
// LOGD_...", "file PATH" or "default". lookupEnv is os.LookupEnv.
func applyConfig(fs *pflag.FlagSet, path string, lookupEnv func(string) (string, bool)) (map[string]string, error) {
	sources := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		sources[f.Name] = "default"
		if f.Changed {
			sources[f.Name] = "flag"
		}
	})
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		v, ok := lookupEnv(envName(f.Name))
		// An empty variable means "" only to a string flag (LOGD_HTTP_ADDR=
		// turns HTTP off); for the others it is as good as unset.
		if v == "" && f.Value.Type() != "string" {
			ok = false
		}
		if firstErr != nil || notConfigurable[f.Name] || f.Changed || !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			firstErr = fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)
		}
		sources[f.Name] = "env " + envName(f.Name)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if path == "" {
		path, _ = lookupEnv("LOGD_CONFIG")
	}
	if path == "" {
		return sources, nil
	}
	values, err := readConfigFile(path, fs)
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(values) {
		if sources[name] != "default" { // the command line or the environment set it
			continue
		}
		if err := fs.Set(name, values[name]); err != nil {
			return nil, fmt.Errorf("config file %s: key %q: %v", path, name, err)
		}
		sources[name] = "file " + path
	}
	return sources, nil
}

// readConfigFile parses a TOML file of flag values, as strings the flags
// parse. Unknown keys and tables are errors naming the key.
func readConfigFile(path string, fs *pflag.FlagSet) (map[string]string, error) {
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	out := make(map[string]string, len(raw))
	for _, key := range sortedKeys(raw) {
		if fs.Lookup(key) == nil || notConfigurable[key] {
			return nil, fmt.Errorf("config file %s: unknown key %q (keys are the names of logd serve's flags, such as data-dir; see logd serve --help)", path, key)
		}
		s, err := flagString(raw[key])
		if err != nil {
			return nil, fmt.Errorf("config file %s: key %q: %v", path, key, err)
		}
		out[key] = s
	}
	return out, nil
}

// flagString is a TOML value as a flag's command-line text.
func flagString(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			s, err := flagString(e)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", fmt.Errorf("a table, where a value is expected (write key = value at the top level)")
	}
	return fmt.Sprint(v), nil
}

// printConfig writes the effective configuration as a TOML file --config
// accepts, each line with where its value came from.
func printConfig(w io.Writer, fs *pflag.FlagSet, sources map[string]string) error {
	var out bytes.Buffer
	fs.VisitAll(func(f *pflag.Flag) {
		if notConfigurable[f.Name] {
			return
		}
		var v any = f.Value.String()
		switch f.Value.Type() {
		case "bool":
			v = f.Value.String() == "true"
		case "int", "int32", "int64":
			n, _ := strconv.ParseInt(f.Value.String(), 10, 64)
			v = n
		}
		var line bytes.Buffer
		if err := toml.NewEncoder(&line).Encode(map[string]any{f.Name: v}); err != nil {
			fmt.Fprintf(&out, "# %s: %v\n", f.Name, err)
			return
		}
		fmt.Fprintf(&out, "%-40s # %s\n", strings.TrimSpace(line.String()), sources[f.Name])
	})
	_, err := w.Write(out.Bytes())
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
