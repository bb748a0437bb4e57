package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one node of herald's command tree: a command that runs
// (`herald audit`, `herald tenant create`), or a group of them (`herald
// tenant`, and the root, `herald` itself).
type command struct {
	name string
	// args names the positional arguments in order; a name in brackets
	// ("[COMMAND]") may be left out.
	args []string
	// synopsis follows the command's name in the list of `herald help`
	// and the README's table of commands; "" is args.
	synopsis string
	// brief is the command's line in a list; about, when set, is the
	// paragraph of its --help in place of brief.
	brief, about string
	// setup declares the command's flags on fs, and nothing else, and
	// returns what runs the command once its flags and arguments parse.
	setup func(fs *flag.FlagSet) action
	// help, when set, writes the command's --help in place of its usage
	// line and flags (serve's lists every setting).
	help func(w io.Writer)
	// verbs are a group's commands.
	verbs  []*command
	parent *command
}

// action runs a command with its positional arguments.
type action func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// commandTree returns herald's commands: the root of the tree.
func commandTree() *command {
	help := &command{name: "help", args: []string{"[COMMAND]", "[VERB]"},
		brief: "this list, or a command's usage and flags (as herald COMMAND --help)"}
	root := &command{brief: "herald — notification orchestration", verbs: []*command{
		{name: "serve", setup: serveCmd, help: serveHelp,
			brief: "API, engine and projections in one process; embedded NATS unless HERALD_NATS_URL is set (herald serve --help: every setting)"},
		{name: "tenant", brief: "the tenants, through the admin API of a running server", verbs: []*command{
			{name: "create", args: []string{"NAME"}, setup: tenantCreateCmd,
				brief: "creates a tenant; prints its id and first API key, once"},
			{name: "list", setup: tenantListCmd,
				brief: "lists the tenants (id, creation time, name)"},
		}},
		{name: "key", brief: "a tenant's API keys, through the admin API of a running server", verbs: []*command{
			{name: "create", args: []string{"TENANT"}, setup: keyCreateCmd,
				brief: "mints another API key for a tenant; prints it, once"},
			{name: "list", args: []string{"TENANT"}, setup: keyListCmd,
				brief: "lists a tenant's live keys: prefixes and creation times, never the keys"},
			{name: "revoke", args: []string{"TENANT", "PREFIX"}, setup: keyRevokeCmd,
				brief: "revokes a key; it is refused at once"},
		}},
		{name: "audit", synopsis: "[--tenant ID] [--since RFC3339] [--type TYPE] [--follow]", setup: auditCmd,
			brief: "prints the event log, one JSON event a line, secrets sealed; through the running server, or straight from the data dir or the cluster"},
		{name: "check", synopsis: "--bridge URL [--key API_KEY] [--http ADDR] [--secret S] [--workflow W] [--since D] [--max N]", setup: checkCmd,
			brief: "replays the tenant's recorded runs against a candidate Bridge (a preview deploy) and lists those that would break; exits 1 when an unfinished one would"},
		{name: "rebuild", setup: rebuildCmd,
			brief: "with the server stopped, rebuilds the projections from the event log and prints their checksum beside the old file's"},
		{name: "bench", synopsis: "[--quick] [--json] …", setup: benchCmd,
			brief: "the end-to-end benchmark: herald serve as a child process, a Bridge and an SMTP sink on loopback",
			about: "Runs herald serve as a child process on loopback, with a Bridge and an SMTP sink in this process, and measures fan-out, latency, single-subscriber triggers from many clients, timers, the API and the recovery after a kill under HERALD_SYNC=interval and always. Progress goes to stderr, the result to stdout."},
		{name: "devmail", synopsis: "[--smtp ADDR] [--http ADDR] [--max N]", setup: devmailCmd,
			brief: "development mail catcher: accepts any mail on --smtp, lists it on --http (a page; JSON at /api/messages)"},
		{name: "healthcheck", synopsis: "[--http ADDR]", setup: healthcheckCmd,
			brief: "exits 0 when the server's GET /healthz answers 200: the container image's HEALTHCHECK"},
		{name: "version", setup: versionCmd,
			brief: "version, commit, Go and NATS versions (also herald --version)"},
		help,
	}}
	help.setup = func(*flag.FlagSet) action {
		return func(_ context.Context, args []string, stdout, _ io.Writer) error {
			c, err := root.find(args)
			if err != nil {
				return err
			}
			c.writeHelp(stdout)
			return nil
		}
	}
	root.link(nil)
	return root
}

func (c *command) link(parent *command) {
	c.parent = parent
	for _, v := range c.verbs {
		v.link(c)
	}
}

// path is the command's words after herald: "tenant create"; "" for the
// root.
func (c *command) path() string {
	if c.parent == nil {
		return ""
	}
	if p := c.parent.path(); p != "" {
		return p + " " + c.name
	}
	return c.name
}

// title is the command as typed: "herald tenant create".
func (c *command) title() string {
	return strings.TrimSpace("herald " + c.path())
}

// walk calls fn on c and every command below it, groups first.
func (c *command) walk(fn func(*command)) {
	fn(c)
	for _, v := range c.verbs {
		v.walk(fn)
	}
}

// verb is the group's command called name, or nil.
func (c *command) verb(name string) *command {
	for _, v := range c.verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

// find is the command that words name below c (herald help's arguments).
func (c *command) find(words []string) (*command, error) {
	for i, w := range words {
		if len(c.verbs) == 0 {
			return nil, &usageError{cmd: c, msg: fmt.Sprintf("unexpected argument %q", words[i])}
		}
		v := c.verb(w)
		if v == nil {
			return nil, &usageError{cmd: c, msg: fmt.Sprintf("unknown command %q", w)}
		}
		c = v
	}
	return c, nil
}

// flags returns the command's flag set, declared, and its action.
func (c *command) flags() (*flag.FlagSet, action) {
	fs := newFlagSet(c.title())
	return fs, c.setup(fs)
}

// usageLine is the command's form: "herald tenant create [flags] NAME".
func (c *command) usageLine() string {
	if len(c.verbs) > 0 {
		return c.title() + " COMMAND [flags] [args]"
	}
	line := c.title()
	if fs, _ := c.flags(); hasFlags(fs) {
		line += " [flags]"
	}
	if len(c.args) > 0 {
		line += " " + strings.Join(c.args, " ")
	}
	return line
}

// listLine is the command in a list of commands, as the README's table
// names it too: "herald devmail [--smtp ADDR] [--http ADDR] [--max N]".
func (c *command) listLine() string {
	s := c.synopsis
	if s == "" {
		s = strings.Join(c.args, " ")
	}
	return strings.TrimSpace(c.title() + " " + s)
}

// hint is the line that follows a usage error.
func (c *command) hint() string {
	return fmt.Sprintf("usage: %s; run '%s' for more", c.usageLine(), strings.TrimSpace("herald help "+c.path()))
}

// writeHelp writes the command's --help: its usage, what it does, and
// its flags, or a group's commands.
func (c *command) writeHelp(w io.Writer) {
	if c.help != nil {
		c.help(w)
		return
	}
	if c.parent == nil {
		fmt.Fprintf(w, "%s\n\n", c.brief)
	}
	fmt.Fprintf(w, "Usage: %s\n\n", c.usageLine())
	if len(c.verbs) > 0 {
		if c.parent != nil {
			fmt.Fprintf(w, "%s.\n\n", capitalize(c.brief))
		}
		fmt.Fprintln(w, "Commands:")
		c.walk(func(v *command) {
			if len(v.verbs) == 0 {
				fmt.Fprintf(w, "  %s\n", v.listLine())
				for _, line := range wrap(v.brief, 72) {
					fmt.Fprintf(w, "      %s\n", line)
				}
			}
		})
		more := fmt.Sprintf("Flags go before or after a command and its arguments: '%s COMMAND' (or %s COMMAND --help) lists a command's.",
			strings.TrimSpace("herald help "+c.path()), c.title())
		if c.parent == nil {
			more += " Configuration comes from flags, then HERALD_* environment variables, then defaults: herald serve --help lists every setting. Every command reads the same HERALD_* environment; tenant and key find the server's admin token in --data (its admin.token) unless HERALD_ADMIN_TOKEN is set."
		}
		fmt.Fprintln(w)
		for _, line := range wrap(more, 78) {
			fmt.Fprintln(w, line)
		}
		return
	}
	about := c.about
	if about == "" {
		about = capitalize(c.brief) + "."
	}
	for _, line := range wrap(about, 78) {
		fmt.Fprintln(w, line)
	}
	fs, _ := c.flags()
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nFlags, before or after the arguments:")
		writeFlags(w, fs)
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// writeFlags lists fs's flags as --name TYPE, then the usage and a
// default that is not the zero value.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if kind != "" {
			head += " " + kind
		}
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, head)
		for _, line := range wrap(usage, 72) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	})
}

// run runs the command with args: a group finds its verb among them, a
// command parses its flags and arguments, then acts.
func (c *command) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(c.verbs) > 0 {
		return c.dispatch(ctx, args, stdout, stderr)
	}
	fs, act := c.flags()
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.writeHelp(stdout)
		return nil
	}
	if err != nil {
		return &usageError{cmd: c, msg: err.Error()}
	}
	required, max := 0, len(c.args)
	for _, a := range c.args {
		if !strings.HasPrefix(a, "[") {
			required++
		}
	}
	if len(pos) < required {
		return &usageError{cmd: c, msg: "missing argument " + c.args[len(pos)]}
	}
	if len(pos) > max {
		return &usageError{cmd: c, msg: fmt.Sprintf("unexpected argument %q", pos[max])}
	}
	err = act(ctx, pos, stdout, stderr)
	var ue *usageError
	if errors.As(err, &ue) && ue.cmd == nil {
		ue.cmd = c
	}
	return err
}

// dispatch runs the group's verb. Flags may precede it: they parse here
// with the flags of every command below (so that a flag's value is not
// taken for the verb), then again, in place, with the verb's own.
func (c *command) dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if c.parent == nil && len(args) > 0 && (args[0] == "--version" || args[0] == "-v") {
		return c.verb("version").run(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet(c.title())
	c.walk(func(v *command) {
		if len(v.verbs) > 0 {
			return
		}
		vfs, _ := v.flags()
		vfs.VisitAll(func(f *flag.Flag) {
			if fs.Lookup(f.Name) == nil {
				fs.Var(f.Value, f.Name, f.Usage)
			}
		})
	})
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.writeHelp(stdout)
		return nil
	}
	if err != nil {
		return &usageError{cmd: c, msg: err.Error()}
	}
	rest := fs.Args()
	if len(rest) == 0 {
		names := make([]string, len(c.verbs))
		for i, v := range c.verbs {
			names[i] = v.name
		}
		return &usageError{cmd: c, msg: "missing command (" + strings.Join(names, ", ") + ")"}
	}
	v := c.verb(rest[0])
	if v == nil {
		return &usageError{cmd: c, msg: fmt.Sprintf("unknown command %q", rest[0])}
	}
	i := len(args) - len(rest)
	return v.run(ctx, append(args[:i:i], args[i+1:]...), stdout, stderr)
}

// parseInterspersed parses fs's flags wherever they stand among args and
// returns the positional arguments: the flag package stops at the first
// one, so the rest is parsed again after each. Everything after "--" is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// errUsage marks a command line that does not parse: herald exits 2.
var errUsage = errors.New("usage")

// usageError is a command line that does not parse: one line naming
// what is wrong, then cmd's usage hint.
type usageError struct {
	cmd *command // nil until the command that ran fills it in
	msg string
}

// badUsage is an action's usage error, such as an invalid flag value.
func badUsage(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

func (e *usageError) Error() string {
	if e.cmd == nil {
		return "herald: " + e.msg
	}
	return e.cmd.title() + ": " + e.msg
}

func (e *usageError) Is(target error) bool { return target == errUsage }

// report writes err on stderr and returns herald's exit status: 0 for
// none, 2 for a usage error (its line, then the usage hint), 1 for any
// other.
func report(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.Error())
		c := ue.cmd
		if c == nil {
			c = commandTree()
		}
		fmt.Fprintln(stderr, c.hint())
		return 2
	default:
		fmt.Fprintf(stderr, "herald: %v\n", err)
		return 1
	}
}
