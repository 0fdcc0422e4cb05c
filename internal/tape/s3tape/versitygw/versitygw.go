// Package versitygw runs the S3-compatible server the tests of s3tape and
// of the CLI run against: versitygw (Apache-2.0) over a folder, on
// 127.0.0.1. scripts/test.sh installs it at the pinned version (Module) and
// sets KURA_VERSITYGW. For tests only.
package versitygw

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/build"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Module is the pinned version scripts/test.sh installs.
const Module = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Find finds the server binary: $KURA_VERSITYGW, PATH, or GOPATH/bin. Its
// error says how to install it.
func Find() (string, error) {
	if p := os.Getenv("KURA_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("KURA_VERSITYGW=%s: %v; run ./scripts/test.sh, which installs %s", p, err, Module)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("versitygw (the S3 server these tests run against) is not installed: not in $KURA_VERSITYGW, PATH or %s; run ./scripts/test.sh, which installs %s",
		filepath.Dir(p), Module)
}

// Server is a versitygw process serving Dir at Addr with one key pair.
type Server struct {
	Bin, Dir, Addr string
	Access, Secret string
	cmd            *exec.Cmd
	done           chan struct{}
}

// Start runs bin over dir on a free port of 127.0.0.1 and returns once the
// server answers requests.
func Start(bin, dir, access, secret string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Bin: bin, Dir: dir, Addr: addr, Access: access, Secret: secret}
	if err := s.Restart(); err != nil {
		return nil, err
	}
	return s, nil
}

// Restart starts the (stopped) server again on the same folder and address
// and returns once it answers.
func (s *Server) Restart() error {
	cmd := exec.Command(s.Bin, "--port", s.Addr, "--access", s.Access, "--secret", s.Secret, "posix", s.Dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		var log []string
		for sc.Scan() {
			log = append(log, sc.Text())
			if !said && strings.Contains(sc.Text(), "listening on") {
				said = true
				ready <- true
			}
		}
		if !said {
			fmt.Fprintf(os.Stderr, "versitygw exited: %s\n", strings.Join(log, "\n"))
			ready <- false
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(s.done)
	}()
	if !<-ready {
		return errors.New("versitygw did not start")
	}
	// It says so just before it listens: the first request retries until
	// the port answers.
	if _, err := s.Client().ListBuckets(context.Background()); err != nil {
		s.Kill()
		return fmt.Errorf("versitygw does not answer: %w", err)
	}
	return nil
}

// Client is a plain client of the server that retries (minio-go's bounded
// backoff, 10 attempts) until the port answers.
func (s *Server) Client() *minio.Client {
	c, err := minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(s.Access, s.Secret, ""), MaxRetries: 10})
	if err != nil {
		panic(err) // only a malformed address fails here
	}
	return c
}

// Kill kills the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// Stop stops the server if it runs.
func (s *Server) Stop() {
	if s != nil && s.cmd != nil && s.cmd.ProcessState == nil {
		s.Kill()
	}
}
