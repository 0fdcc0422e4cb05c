package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/console"
)

func init() { commands = append(commands, newUserCmd) }

// newUserCmd manages the web console's users in a server home.
func newUserCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the web console's users (on the server machine)",
		Long: `Manage who may sign in to the web console of "kura server --console-listen".
Users are kept in console-users.json in the server home, passwords as argon2id
hashes; the server reads the file at each sign-in, so changes count at once.
An admin user may change things; an operator (--operator) may only watch.
The admin token signs in too (leave the name empty).`,
	}
	usersOf := func() (*console.Users, error) {
		home := g.home
		if home == "" {
			env, err := openEnv(g)
			if err != nil {
				return nil, err
			}
			home = env.Home
			env.Close()
		}
		return console.OpenUsers(console.UsersFile(home)), nil
	}
	var operator, asJSON bool
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a console user; the password is read from the terminal or the first line of stdin",
		Example: `  kura user add alice --home /var/lib/kura
  kura user add night-shift --operator --home /var/lib/kura < password.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			us, err := usersOf()
			if err != nil {
				return err
			}
			pw, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			role := console.RoleAdmin
			if operator {
				role = console.RoleOperator
			}
			if err := us.Add(args[0], pw, role); err != nil {
				if errors.Is(err, console.ErrBadUser) {
					return usageErrorf("%v", err)
				}
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), userJSON{Name: args[0], Role: role})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Console user %s added (%s).\n", args[0], role)
			return nil
		},
	}
	add.Flags().BoolVar(&operator, "operator", false, "the user may watch but not change anything")
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a console user; their sessions end at their next request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			us, err := usersOf()
			if err != nil {
				return err
			}
			if err := us.Remove(args[0]); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"name": args[0], "removed": true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Console user %s removed.\n", args[0])
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the console users and their roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			us, err := usersOf()
			if err != nil {
				return err
			}
			all, err := us.List()
			if err != nil {
				return err
			}
			if asJSON {
				out := []userJSON{}
				for _, u := range all {
					out = append(out, userJSON{Name: u.Name, Role: u.Role})
				}
				return printJSON(cmd.OutOrStdout(), out)
			}
			for _, u := range all {
				fmt.Fprintf(cmd.OutOrStdout(), "%-24s %s\n", u.Name, u.Role)
			}
			return nil
		},
	}
	for _, c := range []*cobra.Command{add, remove, list} {
		c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	}
	cmd.AddCommand(add, remove, list)
	return cmd
}

// userJSON is a console user as --json prints it.
type userJSON struct {
	Name string `json:"name"`
	Role string `json:"role"` // admin or operator
}

// readPassword reads a password: from the terminal, asked twice without
// echo, or else the first line of in.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		fmt.Fprint(prompt, "Password: ")
		a, err := readNoEcho(f)
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		fmt.Fprint(prompt, "Again: ")
		b, err := readNoEcho(f)
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		if a != b {
			return "", usageErrorf("the two passwords differ")
		}
		return a, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
