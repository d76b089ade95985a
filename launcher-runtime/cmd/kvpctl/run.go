// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a mistake in the command line rather than in the files or
// the hooks.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// command is one kvpctl subcommand.
type command struct {
	synopsis string
	run      func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"validate": {
			synopsis: "validate FILE...  check Plugin manifests: CRD rules, CEL compilation and type checks",
			run:      runValidate,
		},
		"guest-definition": {
			synopsis: "guest-definition --plugins PATH... --vmi FILE --domain FILE [--context Boot|MigrationTarget] [--socket-wait D] [--socket-root DIR] [--diff] [--explain]",
			run:      runGuestDefinition,
		},
		"pre-migration-source": {
			synopsis: "pre-migration-source --plugins PATH... --vmi FILE --flags N [--params FILE] [--socket-wait D] [--socket-root DIR]",
			run:      runPreMigrationSource,
		},
		"conformance": {
			synopsis: conformanceSynopsis,
			run:      runConformance,
		},
		"required": {
			synopsis: requiredSynopsis,
			run:      runRequired,
		},
		"injection-policy": {
			synopsis: injectionPolicySynopsis,
			run:      runInjectionPolicy,
		},
		"condition": {
			synopsis: "condition --expression EXPR --vmi FILE  evaluate a Plugin condition",
			run:      runCondition,
		},
	}
}

// run is the whole command: main hands it the arguments after the program
// name, the standard streams and a context cancelled by SIGINT or SIGTERM,
// and exits with the status it returns. Tests call it the same way.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kvpctl: unknown command %q\n", args[0])
		printUsage(stderr, cmds)
		return exitUsage
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "kvpctl %s: %s\nusage: kvpctl %s\n", args[0], ue.msg, cmd.synopsis)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "kvpctl %s: %s\n", args[0], err)
		return exitError
	}
}

func printUsage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("usage:\n")
	for _, n := range names {
		fmt.Fprintf(&sb, "  kvpctl %s\n", cmds[n].synopsis)
	}
	sb.WriteString("exit status: 0 ok, 1 operation error, 2 usage error\n")
	fmt.Fprint(w, sb.String())
}

// parseFlags parses args with fs; a flag mistake or a stray argument is a
// usage error.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// required returns a usage error naming the first empty flag.
func required(flags map[string]string) error {
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if flags[n] == "" {
			return usagef("--%s is required", n)
		}
	}
	return nil
}
