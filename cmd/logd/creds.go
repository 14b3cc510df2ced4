package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/logd/logd/client"
)

// credFlags are a client command's --user and --password-stdin. The
// password never comes from the command line (where `ps` and the shell's
// history show it): from LOGD_PASSWORD, or the first line of stdin with
// --password-stdin, as `docker login` does.
type credFlags struct {
	user          string
	passwordStdin bool
	stdin         io.Reader // os.Stdin; tests replace it
	getenv        func(string) string
}

func (c *credFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.user, "user", os.Getenv("LOGD_USER"), "authenticate as this user (password from LOGD_PASSWORD or --password-stdin; over TLS only) (env LOGD_USER)")
	fs.BoolVar(&c.passwordStdin, "password-stdin", false, "read the --user's password from the first line of standard input")
}

// option is the client option of the flags, nil without --user.
func (c *credFlags) option(overTLS bool) (client.Option, error) {
	if c.user == "" {
		if c.passwordStdin {
			return nil, errors.New("--password-stdin needs --user (or LOGD_USER)")
		}
		return nil, nil
	}
	if !overTLS {
		return nil, errors.New("--user sends a password, which logd accepts over TLS only: add --tls-ca (or LOGD_TLS_CA)")
	}
	pw, err := c.password()
	if err != nil {
		return nil, err
	}
	return client.WithCredentials(c.user, pw), nil
}

// password is LOGD_PASSWORD, or stdin's first line with --password-stdin.
func (c *credFlags) password() (string, error) {
	getenv, in := c.getenv, c.stdin
	if getenv == nil {
		getenv = os.Getenv
	}
	if in == nil {
		in = os.Stdin
	}
	if c.passwordStdin {
		return readPasswordLine(in, "--password-stdin")
	}
	if pw := getenv("LOGD_PASSWORD"); pw != "" {
		return pw, nil
	}
	return "", fmt.Errorf("--user %s needs a password: set LOGD_PASSWORD or pass --password-stdin", c.user)
}

// readPasswordLine reads one line, byte by byte so that the rest of the
// input stays for the command (produce reads records after it).
func readPasswordLine(in io.Reader, what string) (string, error) {
	var sb strings.Builder
	b := make([]byte, 1)
	for {
		n, err := in.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			sb.WriteByte(b[0])
			if sb.Len() > 4096 {
				return "", fmt.Errorf("%s: the password line is over 4096 bytes", what)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
	}
	pw := strings.TrimSuffix(sb.String(), "\r")
	if pw == "" {
		return "", fmt.Errorf("%s: no password on standard input", what)
	}
	return pw, nil
}
