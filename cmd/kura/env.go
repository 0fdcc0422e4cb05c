package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/service"
)

// catalogDSN is the catalog KURA_CATALOG names ("": the home's).
func catalogDSN() string { return os.Getenv("KURA_CATALOG") }

// openEnv opens the local home and catalog for a command: the catalog
// KURA_CATALOG names (as the server does), else the home's.
func openEnv(g *globals) (*engine.Env, error) {
	env, err := engine.OpenCatalog(g.home, catalogDSN())
	if err != nil {
		return nil, err
	}
	env.Client = g.client
	// The jobs it runs record what kind of error ended them, as a server's
	// do (jobs show says what to run next).
	env.ClassifyError = service.Classify
	// Warnings of commands that are not jobs (ls, find: a damaged index
	// cache rebuilt from tape); jobs print theirs with their result.
	env.Notice = func(msg string) { fmt.Fprintln(os.Stderr, "warning:", msg) }
	if !g.warned && g.stderr != nil {
		g.warned = true
		for _, w := range env.ExposedFolders() {
			fmt.Fprintln(g.stderr, "warning:", w)
		}
	}
	return env, nil
}

// withEnv opens the local home for one command and closes it after fn.
func withEnv(g *globals, fn func(env *engine.Env) error) error {
	env, err := openEnv(g)
	if err != nil {
		return err
	}
	defer env.Close()
	return fn(env)
}

// jobError maps an engine error to the documented exit codes.
func jobError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrWarnings):
		return &exitError{Code: exitWarnings}
	case remoteExit(err) != 0:
		return &exitError{Code: remoteExit(err), Err: err}
	case errors.Is(err, engine.ErrBadOption), notFound(err):
		return &exitError{Code: exitUsage, Err: err}
	case errors.Is(err, engine.ErrVerify):
		return &exitError{Code: exitVerify, Err: err}
	case errors.Is(err, context.Canceled):
		return &exitError{Code: exitFailure, Err: errors.New("interrupted: the job was canceled and its saveset marked failed; earlier savesets are untouched")}
	}
	return &exitError{Code: exitFailure, Err: err}
}

func parseID(s, what string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("%s must be a number, not %q", what, s)
	}
	return id, nil
}
