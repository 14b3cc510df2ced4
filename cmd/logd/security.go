package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/logd/logd/client"
)

// `logd user` and `logd acl`: users (SCRAM credentials) and ACLs, through
// the Security gRPC service (docs/security.md).

func newUserCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, delete and list users that log in with a password",
		Long: `Manage users that log in with a password (gRPC and HTTP Basic credentials,
Kafka SASL SCRAM-SHA-256/512 and PLAIN). A node stores salted, iterated SCRAM
credentials, never the password. Changing users needs alter on the cluster,
listing them describe on the cluster (or --super-users).`,
	}
	srv.register(cmd, true)
	cmd.AddCommand(newUserCreateCmd(&srv), newUserDeleteCmd(&srv), newUserListCmd(&srv))
	return cmd
}

func newUserCreateCmd(srv *serverFlag) *cobra.Command {
	var update bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user (the password is read from standard input)",
		Long: `Create a user. Its password is never taken from the command line: it is
LOGD_NEW_PASSWORD when set, else the next line of standard input:

  printf '%s\n' "$PASSWORD" | logd user create alice --tls-ca ca.pem --user admin

(with --password-stdin for the admin's own password too, give two lines: the
admin's first, then the new user's). --update changes an existing user's
password; without it an existing user is an error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				pw := os.Getenv("LOGD_NEW_PASSWORD")
				if pw == "" {
					if isTerminal(os.Stdin) {
						fmt.Fprintf(cmd.ErrOrStderr(), "password for %s (it will show as you type; prefer piping it): ", args[0])
					}
					var err error
					if pw, err = readPasswordLine(cmd.InOrStdin(), "the new password"); err != nil {
						return fmt.Errorf("%w (pipe it on standard input, or set LOGD_NEW_PASSWORD)", err)
					}
				}
				if err := c.Admin().CreateUser(callContext(cmd), args[0], pw, update); err != nil {
					return err
				}
				verb := "created"
				if update {
					verb = "updated"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s %s\n", args[0], verb)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&update, "update", false, "change the password of an existing user (create it if missing)")
	return cmd
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func newUserDeleteCmd(srv *serverFlag) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user: its next login fails",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				if err := c.Admin().DeleteUser(callContext(cmd), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s deleted\n", args[0])
				return nil
			})
		},
	}
}

func newUserListCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the users",
		Long:  "List the users, one name a line; --json prints one object a line: user.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return srv.run(func(c *client.Client) error {
				names, err := c.Admin().ListUsers(callContext(cmd))
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					for _, n := range names {
						if err := enc.Encode(struct {
							User string `json:"user"`
						}{n}); err != nil {
							return err
						}
					}
					return nil
				}
				if len(names) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "no users yet: create one with `logd user create NAME`")
				}
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// aclFlags are the flags that name ACLs.
type aclFlags struct {
	principal, operation, topic, group, pattern, permission string
	cluster                                                 bool
}

func (a *aclFlags) register(cmd *cobra.Command, filter bool) {
	f := cmd.Flags()
	f.StringVar(&a.principal, "principal", "", "User:NAME, or User:* for everyone (anonymous included)")
	f.StringVar(&a.operation, "operation", "", "read, write, create, delete, alter, describe or all; several separated by commas")
	f.StringVar(&a.topic, "topic", "", "the topic (or, with --pattern prefix, topics starting with it; * is every topic)")
	f.StringVar(&a.group, "group", "", "the consumer group (or prefix; * is every group)")
	f.BoolVar(&a.cluster, "cluster", false, "the cluster: its nodes, users and ACLs (and every topic's creation)")
	def, permDef := "literal", "allow"
	if filter {
		def, permDef = "", ""
	}
	f.StringVar(&a.pattern, "pattern", def, "how the name matches: literal or prefix")
	f.StringVar(&a.permission, "permission", permDef, "allow or deny")
}

// acls turns the flags into ACLs (one per operation); as a filter, unset
// flags match anything.
func (a *aclFlags) acls(filter bool) ([]client.ACL, error) {
	base := client.ACL{Principal: a.principal, Permission: a.permission, Pattern: a.pattern}
	if base.Pattern == "prefix" {
		base.Pattern = "prefixed"
	}
	n := 0
	if a.topic != "" {
		n++
		base.ResourceType, base.Name = "topic", a.topic
	}
	if a.group != "" {
		n++
		base.ResourceType, base.Name = "group", a.group
	}
	if a.cluster {
		n++
		base.ResourceType, base.Name = "cluster", "kafka-cluster"
	}
	if n > 1 {
		return nil, errors.New("give one of --topic, --group and --cluster")
	}
	if !filter {
		switch {
		case n == 0:
			return nil, errors.New("name the resource: --topic NAME, --group NAME or --cluster")
		case a.principal == "":
			return nil, errors.New("--principal is required (User:NAME, or User:* for everyone)")
		case a.operation == "":
			return nil, errors.New("--operation is required (read, write, create, delete, alter, describe or all)")
		}
	}
	if a.operation == "" {
		return []client.ACL{base}, nil
	}
	var out []client.ACL
	for _, op := range strings.Split(a.operation, ",") {
		acl := base
		acl.Operation = strings.TrimSpace(op)
		out = append(out, acl)
	}
	return out, nil
}

func newACLCmd() *cobra.Command {
	var srv serverFlag
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Add, remove and list access rules (ACLs)",
		Long: `Manage ACLs, enforced by nodes started with --authz on. An ACL allows or
denies a principal an operation on a topic, a group or the cluster, named
literally or by prefix; deny wins, and no matching allow is a refusal.
Super users (serve --super-users) bypass ACLs. Examples:

  logd acl add --principal User:alice --operation read,describe --topic orders
  logd acl add --principal User:alice --operation read --group billing- --pattern prefix
  logd acl add --principal User:ops --operation alter --cluster
  logd acl remove --principal User:alice --topic orders
  logd acl list --principal User:alice`,
	}
	srv.register(cmd, true)
	cmd.AddCommand(newACLAddCmd(&srv), newACLRemoveCmd(&srv), newACLListCmd(&srv))
	return cmd
}

// newACLSubCmd is an acl subcommand that takes no arguments: its flags
// become ACLs (filters, when filter is set), and do gets them with a client
// connected to the server.
func newACLSubCmd(srv *serverFlag, use, short string, filter bool, do func(cmd *cobra.Command, c *client.Client, acls []client.ACL) error) *cobra.Command {
	var fl aclFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			acls, err := fl.acls(filter)
			if err != nil {
				return err
			}
			return srv.run(func(c *client.Client) error { return do(cmd, c, acls) })
		},
	}
	fl.register(cmd, filter)
	return cmd
}

func newACLAddCmd(srv *serverFlag) *cobra.Command {
	return newACLSubCmd(srv, "add", "Add ACLs (one per --operation)", false,
		func(cmd *cobra.Command, c *client.Client, acls []client.ACL) error {
			if err := c.Admin().AddACLs(callContext(cmd), acls...); err != nil {
				return err
			}
			for _, a := range acls {
				fmt.Fprintf(cmd.OutOrStdout(), "added: %s\n", a)
			}
			return nil
		})
}

func newACLRemoveCmd(srv *serverFlag) *cobra.Command {
	cmd := newACLSubCmd(srv, "remove", "Remove the ACLs the flags match (unset flags match anything; at least one is needed)", true,
		func(cmd *cobra.Command, c *client.Client, filters []client.ACL) error {
			n := 0
			for _, f := range filters {
				removed, err := c.Admin().RemoveACLs(callContext(cmd), f)
				if err != nil {
					return err
				}
				for _, a := range removed {
					n++
					fmt.Fprintf(cmd.OutOrStdout(), "removed: %s\n", a)
				}
			}
			if n == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no ACL matched")
			}
			return nil
		})
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if !anyACLFlag(cmd) {
			return errors.New("name what to remove: --principal, --topic, --group, --cluster, --operation, --permission or --pattern (refusing to remove every ACL)")
		}
		return nil
	}
	return cmd
}

// anyACLFlag reports whether one of the ACL flags was given.
func anyACLFlag(cmd *cobra.Command) bool {
	for _, n := range []string{"principal", "operation", "topic", "group", "cluster", "pattern", "permission"} {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

func newACLListCmd(srv *serverFlag) *cobra.Command {
	var asJSON bool
	cmd := newACLSubCmd(srv, "list", "List ACLs (the flags filter them; --json: one object a line)", true,
		func(cmd *cobra.Command, c *client.Client, filters []client.ACL) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			enc := json.NewEncoder(cmd.OutOrStdout())
			if !asJSON {
				fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tPATTERN\tNAME")
			}
			for _, f := range filters {
				acls, err := c.Admin().ListACLs(callContext(cmd), f)
				if err != nil {
					return err
				}
				for _, a := range acls {
					if asJSON {
						if err := enc.Encode(aclJSON{a.Principal, a.Permission, a.Operation, a.ResourceType, a.Pattern, a.Name}); err != nil {
							return err
						}
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Principal, a.Permission, a.Operation, a.ResourceType, a.Pattern, a.Name)
				}
			}
			return tw.Flush()
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// aclJSON is a line of acl list --json.
type aclJSON struct {
	Principal    string `json:"principal"`
	Permission   string `json:"permission"`
	Operation    string `json:"operation"`
	ResourceType string `json:"resource_type"`
	Pattern      string `json:"pattern"`
	Name         string `json:"name"`
}
