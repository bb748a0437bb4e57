package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests below walk herald's command tree itself, so that a command
// added to it is held to the same rules without being named here.

// cliRun runs a herald command line as main does: its exit status and
// what it printed.
func cliRun(t *testing.T, root *command, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = report(root.run(context.Background(), args, &out, &errOut), &errOut)
	return code, out.String(), errOut.String()
}

// words is the command's path as arguments: ["tenant", "create"].
func words(c *command) []string { return strings.Fields(c.path()) }

// sampleArgs are stand-ins for the command's required arguments.
func sampleArgs(c *command) []string {
	var args []string
	for _, a := range c.args {
		if !strings.HasPrefix(a, "[") {
			args = append(args, "arg-"+strings.ToLower(a))
		}
	}
	return args
}

func cat(parts ...[]string) []string { return slices.Concat(parts...) }

func TestCommandHelp(t *testing.T) {
	t.Parallel()
	root := commandTree()
	n := 0
	root.walk(func(c *command) {
		n++
		w := words(c)
		var first string
		for _, args := range [][]string{cat(w, []string{"--help"}), cat(w, []string{"-h"}), cat([]string{"help"}, w)} {
			code, out, errOut := cliRun(t, root, args...)
			if code != 0 || errOut != "" {
				t.Errorf("herald %q: exit %d, stderr %q; want 0 and the help on stdout", args, code, errOut)
				continue
			}
			if first == "" {
				first = out
			} else if out != first {
				t.Errorf("herald %q answers another help than herald %q --help:\n%s", args, w, out)
			}
			if !strings.Contains(out, "Usage: "+c.title()) {
				t.Errorf("herald %q does not say its usage (Usage: %s):\n%s", args, c.title(), out)
			}
			if len(c.verbs) > 0 {
				c.walk(func(v *command) {
					if len(v.verbs) == 0 && !strings.Contains(out, v.listLine()) {
						t.Errorf("herald %q does not list %s:\n%s", args, v.listLine(), out)
					}
				})
				continue
			}
			fs, _ := c.flags()
			fs.VisitAll(func(f *flag.Flag) {
				if !regexp.MustCompile(`(?m)^\s+(HERALD_\w+, )?--` + f.Name + `\b`).MatchString(out) {
					t.Errorf("herald %q does not list its flag --%s:\n%s", args, f.Name, out)
				}
			})
		}
	})
	if n < 15 {
		t.Fatalf("the tree holds %d commands; the walk is broken", n)
	}
}

// sampleValue is a value of f's kind as given on a command line ("" for
// a bool flag, which takes none) and as its Value prints it.
func sampleValue(t *testing.T, f *flag.Flag) (arg, want string) {
	switch f.Value.(flag.Getter).Get().(type) {
	case bool:
		return "", "true"
	case int:
		return "7", "7"
	case time.Duration:
		return "3s", "3s"
	case string:
		return "sample", "sample"
	}
	t.Fatalf("--%s: no sample value for a %T", f.Name, f.Value)
	return "", ""
}

// TestCommandFlagsAnywhere gives each flag of each command at every
// place on its command line, before the group's verb, after it and
// among the arguments, and checks that the command runs with the flag's
// value and its arguments intact.
func TestCommandFlagsAnywhere(t *testing.T) {
	t.Parallel()
	root := commandTree()
	var ran struct {
		fs   *flag.FlagSet
		args []string
	}
	root.walk(func(c *command) {
		if c.setup == nil {
			return
		}
		declare := c.setup
		c.setup = func(fs *flag.FlagSet) action {
			declare(fs)
			return func(_ context.Context, args []string, _, _ io.Writer) error {
				ran.fs, ran.args = fs, args
				return nil
			}
		}
	})
	tested := 0
	root.walk(func(c *command) {
		if len(c.verbs) > 0 {
			return
		}
		line := cat(words(c), sampleArgs(c))
		fs, _ := c.flags()
		fs.VisitAll(func(f *flag.Flag) {
			arg, want := sampleValue(t, f)
			given := []string{"--" + f.Name}
			if arg != "" {
				given = append(given, arg)
			}
			for at := 0; at <= len(line); at++ {
				args := cat(line[:at], given, line[at:])
				ran.fs, ran.args = nil, nil
				if code, _, errOut := cliRun(t, root, args...); code != 0 {
					t.Errorf("herald %q: exit %d: %s", args, code, errOut)
					continue
				}
				if ran.fs == nil || ran.fs.Name() != c.title() {
					t.Errorf("herald %q did not run %s", args, c.title())
					continue
				}
				if got := ran.fs.Lookup(f.Name).Value.String(); got != want {
					t.Errorf("herald %q: --%s is %q, want %q", args, f.Name, got, want)
				}
				if !slices.Equal(ran.args, sampleArgs(c)) {
					t.Errorf("herald %q: arguments %q, want %q", args, ran.args, sampleArgs(c))
				}
				tested++
			}
		})
	})
	// The case a user met: a flag between the group and its verb.
	ran.fs = nil
	if code, _, errOut := cliRun(t, root, "tenant", "--http", "127.0.0.1:9", "list"); code != 0 || ran.fs == nil ||
		ran.fs.Lookup("http").Value.String() != "127.0.0.1:9" {
		t.Errorf("herald tenant --http X list: exit %d: %s", code, errOut)
	}
	// After "--" everything is an argument, even what looks like a flag.
	ran.fs = nil
	if code, _, errOut := cliRun(t, root, "tenant", "create", "--", "--http"); code != 0 || !slices.Equal(ran.args, []string{"--http"}) {
		t.Errorf("herald tenant create -- --http: exit %d %s, arguments %q", code, errOut, ran.args)
	}
	if tested < 50 {
		t.Fatalf("only %d command lines tried; the walk is broken", tested)
	}
}

// usageLines checks a usage error's answer: exit 2, nothing on stdout,
// and on stderr one line, want, then c's usage hint.
func usageLines(t *testing.T, root, c *command, want string, args ...string) {
	t.Helper()
	code, out, errOut := cliRun(t, root, args...)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 2 || out != "" || len(lines) != 2 || lines[0] != want || lines[1] != c.hint() {
		t.Errorf("herald %q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and on stderr:\n%s\n%s", args, code, out, errOut, want, c.hint())
	}
	if !strings.HasPrefix(c.hint(), "usage: "+c.title()) || !strings.Contains(c.hint(), "herald help") {
		t.Errorf("%s's usage hint %q", c.title(), c.hint())
	}
}

func TestCommandUsageErrors(t *testing.T) {
	t.Parallel()
	root := commandTree()
	root.walk(func(c *command) {
		w := words(c)
		if len(c.verbs) > 0 {
			var names []string
			for _, v := range c.verbs {
				names = append(names, v.name)
			}
			usageLines(t, root, c, c.title()+": missing command ("+strings.Join(names, ", ")+")", w...)
			usageLines(t, root, c, c.title()+`: unknown command "bogus"`, cat(w, []string{"bogus"})...)
			usageLines(t, root, c, c.title()+`: unknown command "bogus"`, cat([]string{"help"}, w, []string{"bogus"})...)
			usageLines(t, root, c, c.title()+": flag provided but not defined: -bogus", cat(w, []string{"--bogus"})...)
			return
		}
		args := sampleArgs(c)
		for k := range args {
			usageLines(t, root, c, c.title()+": missing argument "+c.args[k], cat(w, args[:k])...)
		}
		usageLines(t, root, c, c.title()+": flag provided but not defined: -bogus", cat(w, args, []string{"--bogus"})...)
		if len(args) == len(c.args) {
			usageLines(t, root, c, c.title()+`: unexpected argument "extra"`, cat(w, args, []string{"extra"})...)
		}
	})
}

// TestCommandFlagKinds: a flag before a group's verb is parsed with the
// flags of every command below it, so one name must be a bool flag
// everywhere or nowhere. A command's synopsis names only its own flags.
func TestCommandFlagKinds(t *testing.T) {
	t.Parallel()
	isBool := map[string]bool{}
	commandTree().walk(func(c *command) {
		if len(c.verbs) > 0 {
			return
		}
		fs, _ := c.flags()
		fs.VisitAll(func(f *flag.Flag) {
			b := f.Value.(flag.Getter).Get()
			_, kind := b.(bool)
			if seen, ok := isBool[f.Name]; ok && seen != kind {
				t.Errorf("--%s is a bool flag of some commands and not of %s", f.Name, c.title())
			}
			isBool[f.Name] = kind
		})
		for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(c.synopsis, -1) {
			if fs.Lookup(m[1]) == nil {
				t.Errorf("%s's synopsis names --%s, which it does not declare", c.title(), m[1])
			}
		}
	})
}

// TestREADMECommands: the README's table of commands names every command
// as herald help lists it, and nothing else.
func TestREADMECommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Commands\n")
	if !ok {
		t.Fatal("README has no ## Commands section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(herald[^`]*)` \\|").FindAllStringSubmatch(section, -1) {
		rows = append(rows, m[1])
	}
	var want []string
	commandTree().walk(func(c *command) {
		if len(c.verbs) == 0 {
			want = append(want, c.listLine())
		}
	})
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("README's commands:\n  %s\nherald help's:\n  %s", strings.Join(rows, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		pos      []string
		n        string
		b        bool
		parseErr bool
	}{
		{args: nil},
		{args: []string{"a", "b"}, pos: []string{"a", "b"}},
		{args: []string{"--n", "1", "a"}, pos: []string{"a"}, n: "1"},
		{args: []string{"a", "--n", "1", "b"}, pos: []string{"a", "b"}, n: "1"},
		{args: []string{"a", "b", "--n=1", "--b"}, pos: []string{"a", "b"}, n: "1", b: true},
		{args: []string{"-b", "a", "-n", "2"}, pos: []string{"a"}, n: "2", b: true},
		{args: []string{"a", "--", "--n", "1"}, pos: []string{"a", "--n", "1"}},
		{args: []string{"--", "a", "-b"}, pos: []string{"a", "-b"}},
		{args: []string{"-", "--b"}, pos: []string{"-"}, b: true},
		{args: []string{"a", "--n"}, parseErr: true},
		{args: []string{"a", "--x"}, parseErr: true},
	} {
		fs := newFlagSet("t")
		n := fs.String("n", "", "")
		b := fs.Bool("b", false, "")
		pos, err := parseInterspersed(fs, tc.args)
		if (err != nil) != tc.parseErr {
			t.Errorf("%q: error %v", tc.args, err)
			continue
		}
		if tc.parseErr {
			continue
		}
		if !slices.Equal(pos, tc.pos) || *n != tc.n || *b != tc.b {
			t.Errorf("%q: arguments %q, -n %q, -b %v; want %q, %q, %v", tc.args, pos, *n, *b, tc.pos, tc.n, tc.b)
		}
	}
}

// TestBenchNATSPprofNeedsExternal: --nats-pprof profiles the NATS process
// of --nats external; with NATS inside herald serve there is none, and
// the flag is refused rather than ignored.
func TestBenchNATSPprofNeedsExternal(t *testing.T) {
	t.Parallel()
	root := commandTree()
	bench, err := root.find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	usageLines(t, root, bench, "herald bench: --nats-pprof needs --nats external (embedded, NATS is inside herald serve: use HERALD_PPROF_ADDR)",
		"bench", "--nats-pprof", "127.0.0.1:0")
}
