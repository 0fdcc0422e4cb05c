package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/seal"
)

// recoveryFile keeps the server's recovery recipients in its home, one
// "age1…" public key a line ('#' starts a comment), so that a restart
// without --recovery-recipient keeps them.
const recoveryFile = "recovery-recipients.txt"

// RecoveryPath is where the recovery recipients of the server home dir are
// kept.
func RecoveryPath(dir string) string { return filepath.Join(dir, recoveryFile) }

// RecoveryRecipients reads the recovery recipients kept in the server home
// dir: none when the file does not exist. A line that is not an X25519
// public key is an error (seal.ErrBadRecipient) naming the file and line:
// a backup is not encrypted to fewer keys than the administrator set.
func RecoveryRecipients(dir string) ([]string, error) {
	p := RecoveryPath(dir)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recovery recipients: %w", err)
	}
	var rs []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		r, err := seal.ParseRecipient(l)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", p, n, err)
		}
		rs = append(rs, r.String())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return rs, nil
}

// SetRecoveryRecipients replaces the recovery recipients kept in the server
// home dir (none: removes the file). Every key is checked first
// (seal.ErrBadRecipient), so a bad one changes nothing. The file is
// replaced atomically; a running server reads it for every new encrypted
// backup.
func SetRecoveryRecipients(dir string, rs []string) error {
	var b strings.Builder
	seen := map[string]bool{}
	for _, s := range rs {
		r, err := seal.ParseRecipient(s)
		if err != nil {
			return fmt.Errorf("recovery recipient: %w", err)
		}
		if !seen[r.String()] {
			seen[r.String()] = true
			b.WriteString(r.String() + "\n")
		}
	}
	p := RecoveryPath(dir)
	if len(seen) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := private.MkdirAll(dir); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := private.WriteFile(tmp, []byte("# kura server recovery recipients (kura server recovery-recipient set|show|clear)\n"+b.String())); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// recoveryRecipients are the recipients a new encrypted backup is also
// encrypted to: those kept in the home, read now, so that a change made
// while the server runs applies to the next saveset.
func (s *Server) recoveryRecipients() ([]string, error) {
	return RecoveryRecipients(s.env.Home)
}

// RecoveryRecipients are the recovery recipients new encrypted backups are
// encrypted to (as kept in the home).
func (s *Server) RecoveryRecipients() ([]string, error) { return s.recoveryRecipients() }
