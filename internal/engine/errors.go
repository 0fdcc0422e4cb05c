package engine

import (
	"errors"
	"fmt"

	"github.com/kura-backup/kura/internal/restorer"
)

// The engine says what is wrong; the CLI says which command to run next
// (cmd/kura/hints.go). An error a user can act on is a sentinel (or a type
// wrapping one, when the CLI needs a name or a number from it) so that the
// CLI can recognise it with errors.Is or errors.As, and the service layer
// can give it a stable code and field on the wire (service.Err).
var (
	// ErrNotComplete: a restore names a saveset that is not complete
	// (running, failed, partial): the user chooses another.
	ErrNotComplete = errors.New("saveset not complete")
	// ErrTapesOffline: a restore needs tapes that are exported.
	ErrTapesOffline = errors.New("tapes are exported")
	// ErrNoCopyLibrary: a copy names no library to copy to.
	ErrNoCopyLibrary = errors.New("no library to copy to")
	// ErrPolicyClient: a policy on a server names no client.
	ErrPolicyClient = errors.New("a policy on a server needs a client")
	// ErrPolicySelection: a policy names no selection set.
	ErrPolicySelection = errors.New("a policy needs a selection set")
	// ErrNoSelectionSet: a policy names a selection set its client does
	// not have (a *NoSelectionSetError).
	ErrNoSelectionSet = errors.New("no such selection set")
	// ErrNoDataPath: the stock-tool recipe needs a tape's data as files on
	// this machine, and the tape's device has none (tape.DataPather).
	ErrNoDataPath = errors.New("no data path for stock tools")
	// ErrSealed: the saveset is encrypted by its client's agent; what needs
	// its index or its data (restore, data verify, ls, copy) runs on an
	// agent holding the key, not here.
	ErrSealed = errors.New("saveset encrypted by its client")
	// ErrNotSealable: a backup asked to be encrypted where no agent
	// produces it (only a client's agent holds a key).
	ErrNotSealable = errors.New("this backup cannot be encrypted")
)

// said is an error of a sentinel kind in its own words: its message is
// msg alone, and errors.Is(err, kind) holds.
type said struct {
	kind error
	msg  string
}

func (e *said) Error() string { return e.msg }
func (e *said) Unwrap() error { return e.kind }

// sayf returns an error of kind whose message is format and args.
func sayf(kind error, format string, args ...any) error {
	return &said{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// UnregisteredLibraryError is an ErrUnregisteredLibrary: the home's
// library folder Dir holds library Name, which the catalog does not know.
type UnregisteredLibraryError struct {
	Name, Dir string
}

func (e *UnregisteredLibraryError) Error() string {
	return fmt.Sprintf("%v: %s holds library %s", ErrUnregisteredLibrary, e.Dir, e.Name)
}

func (e *UnregisteredLibraryError) Unwrap() error { return ErrUnregisteredLibrary }

// NoMatchError is an ErrNothingToRestore: no path in saveset Saveset
// matches the --include patterns or --path paths of a restore.
type NoMatchError struct {
	Saveset int64
	Picks   []restorer.Pick
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("%v: no path in saveset %d matches %s", ErrNothingToRestore, e.Saveset, joinPicks(e.Picks))
}

func (e *NoMatchError) Unwrap() error { return ErrNothingToRestore }

// NoSelectionSetError is an ErrNoSelectionSet: Client ("" for this
// machine) has no selection set Selection.
type NoSelectionSetError struct {
	Client, Selection string
}

func (e *NoSelectionSetError) Error() string {
	who := "this machine"
	if e.Client != "" {
		who = "client " + e.Client
	}
	return fmt.Sprintf("%s has no selection set %q", who, e.Selection)
}

func (e *NoSelectionSetError) Unwrap() error { return ErrNoSelectionSet }
