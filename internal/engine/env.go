// Package engine runs Kura's jobs on the local machine: backup, restore,
// verify and scan. It ties the walker, the saveset stream, the index, the
// virtual tape library and the catalog together, and it never prints: every
// figure leaves through monitor events and the returned results.
//
// Ordering that keeps a crash from corrupting anything (docs/design.md):
//
//  1. The catalog gets the saveset row as "running" before any byte is written.
//  2. Data tape files are finished (fsync, then filemark) before the index
//     tape file is written; the index tape file is finished before the cached
//     index file is renamed into place.
//  3. Only then is the saveset marked "complete". A job that dies leaves a
//     "running"/"incomplete" saveset whose tape files are incomplete or
//     ignored, and every earlier saveset untouched.
package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/home"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/job"
	"github.com/kura-backup/kura/internal/library"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/private"
	"github.com/kura-backup/kura/internal/seal"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// DefaultLibrary is the library "kura backup DIR" creates on first use.
const DefaultLibrary = "default"

// Env is what a job runs in: the home folder, the catalog, a clock and
// where events go.
type Env struct {
	Home    string
	Catalog *catalog.Catalog
	Clock   monitor.Clock
	Events  monitor.Sink
	// Client names the machine whose data this is; "" is the local machine.
	Client string
	// Notice, when set, receives the warnings of commands that are not
	// jobs (ls, find): the CLI prints them. Jobs keep their warnings.
	Notice func(msg string)
	// ClassifyError, when set, gives the API's code and field of a job's
	// error, recorded with the job (catalog.Job.ErrorCode, ErrorField) so
	// that a client shown the job later can act on its kind; the service
	// layer sets it to its one mapping (service.Err).
	ClassifyError func(err error) (code, field string)
	// Jobs leases the jobs this process runs in the catalog (jobs.go): its
	// holder is this process's. Its clock is the system's, not Clock:
	// leases are compared across processes. Tests may replace it with one
	// on an injected clock and ticker.
	Jobs *job.Registry
	// OpenChanger, when set, opens the changer of a registered library
	// for the jobs and commands that only need a library.Changer (Changer,
	// ChangerOfTape); nil opens the folder or S3 library in rec.Dir. It is
	// the seam where a library that is not a folder comes in. Creating,
	// removing and adding tapes stay with *library.Library (OpenLibrary).
	OpenChanger func(rec catalog.Library) (library.Changer, error)
	// TapeHardware is how the tape libraries (library.TapeLibrary) this
	// Env opens reach their changers and drives; nil: the real ones (mtx
	// on PATH, the st driver). Tests set an emulation.
	TapeHardware *library.Hardware
	// Nodes reaches the libraries that live on storage nodes (a server
	// sets it); nil: this process reaches none, and such a library is
	// refused with ErrOnNode.
	Nodes Nodes
}

// Nodes is how an Env reaches the libraries of storage nodes: each is a
// library.Changer whose drives and tapes are in another process (the
// server's tunnel to the node, internal/node).
type Nodes interface {
	// CreateLibrary creates a library on the node — a folder, S3 or tape
	// library as cfg.Media says (cfg.Dir is the node's to choose).
	CreateLibrary(node string, cfg library.Config) (library.Changer, error)
	// Open opens a registered library of a node; a node that is not
	// connected is an error saying so (ErrNodeOffline).
	Open(rec catalog.Library) (library.Changer, error)
}

// ErrOnNode: a library lives on a storage node, which only a server
// reaches (and which has no folder here to open).
var ErrOnNode = errors.New("the library lives on a storage node")

// ErrNodeOffline: the storage node a library lives on is not connected
// now. The server's queue waits for it; anything else fails with it.
var ErrNodeOffline = errors.New("storage node is offline")

// notice reports a warning that belongs to no job: as a warning event and
// to Notice.
func (e *Env) notice(msg string) {
	e.emit(monitor.Event{Kind: monitor.WarningEvent, Message: msg})
	if e.Notice != nil {
		e.Notice(msg)
	}
}

// Open opens the home folder (creating it) and its catalog.
func Open(homeDir string) (*Env, error) { return OpenCatalog(homeDir, "") }

// OpenCatalog opens the home folder (creating it) with the catalog dsn
// names (catalog.Open: a postgres:// URL or the path of a SQLite file); ""
// is the SQLite catalog in the home.
func OpenCatalog(homeDir, dsn string) (*Env, error) {
	if homeDir == "" {
		d, err := home.Dir()
		if err != nil {
			return nil, err
		}
		homeDir = d
	}
	if err := home.Ensure(homeDir); err != nil {
		return nil, err
	}
	if dsn != "" {
		cat, err := catalog.Open(dsn)
		if err != nil {
			return nil, fmt.Errorf("opening the catalog: %w", err)
		}
		return openWith(homeDir, cat)
	}
	cat, err := catalog.Open(home.CatalogPath(homeDir))
	if err != nil && reclaimHomeLibraries(homeDir) > 0 {
		// The disk was full of what a job that died left on a tape.
		cat, err = catalog.Open(home.CatalogPath(homeDir))
	}
	if err != nil {
		if diskFull(homeDir) {
			return nil, fmt.Errorf("opening the catalog in %s: %w (the file system holding it is full: %w)", homeDir, err, syscall.ENOSPC)
		}
		return nil, fmt.Errorf("opening the catalog in %s: %w", homeDir, err)
	}
	return openWith(homeDir, cat)
}

// openWith makes the Env of a home and its open catalog.
func openWith(homeDir string, cat *catalog.Catalog) (*Env, error) {
	jobs, err := job.NewRegistry(cat, job.Options{})
	if err != nil {
		cat.Close()
		return nil, err
	}
	e := &Env{Home: homeDir, Catalog: cat, Clock: monitor.SystemClock{}, Events: monitor.Nop{}, Jobs: jobs}
	if _, err := e.ReclaimDeadJobs(); err != nil {
		cat.Close()
		return nil, fmt.Errorf("checking for jobs whose process died: %w", err)
	}
	return e, nil
}

// ExposedFolders returns a warning for the home and for each registered
// library whose folder its group or others can read: they hold the catalog
// and the backed-up data (everything Kura creates in them is private).
func (e *Env) ExposedFolders() []string {
	var warns []string
	if w := private.Check(e.Home); w != "" {
		warns = append(warns, "Kura home "+w)
	}
	libs, err := e.Catalog.Libraries()
	if err != nil {
		return warns
	}
	for _, l := range libs {
		if l.Node != "" {
			continue // a folder of the node, not of this machine
		}
		if w := private.Check(l.Dir); w != "" {
			warns = append(warns, "library "+l.Name+" at "+w)
		}
	}
	return warns
}

// reclaimHomeLibraries removes the unfinished tape files that writers which
// died left in the libraries inside the home (library.Reclaim), before the
// catalog can say which libraries there are, and returns the bytes freed.
func reclaimHomeLibraries(homeDir string) int64 {
	dirs, _ := filepath.Glob(filepath.Join(homeDir, "vtl", "*"))
	var freed int64
	for _, d := range dirs {
		if lib, err := library.Open(d); err == nil {
			n, _ := lib.Reclaim()
			freed += n
		}
	}
	return freed
}

// diskFull reports whether the file system holding dir has no space left.
func diskFull(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Bavail == 0
}

// Close closes the catalog.
func (e *Env) Close() error { return e.Catalog.Close() }

func (e *Env) now() time.Time { return e.Clock.Now() }

func (e *Env) emit(ev monitor.Event) {
	if ev.Time.IsZero() {
		ev.Time = e.now()
	}
	if e.Events != nil {
		e.Events.Event(ev)
	}
}

// CreateLibrary creates a library and registers it (and its tapes) in the catalog.
func (e *Env) CreateLibrary(cfg library.Config) (*library.Library, error) {
	if cfg.Media != nil && cfg.Media.Kind == library.MediaChanger {
		return nil, fmt.Errorf("%w: library %s: %w (CreateChanger creates it)", ErrBadOption, cfg.Name, library.ErrTapeLibrary)
	}
	if err := e.checkNewLibrary(&cfg); err != nil {
		return nil, err
	}
	lib, err := library.Create(cfg)
	if err != nil {
		return nil, err
	}
	return lib, e.addLibrary(lib)
}

// checkNewLibrary checks the name of a library to be created and sets its
// folder (by default in the home) and barcode prefix.
func (e *Env) checkNewLibrary(cfg *library.Config) error {
	if cfg.Name == "" {
		return fmt.Errorf("%w: a library needs a name", ErrBadOption)
	}
	if _, err := e.Catalog.Library(cfg.Name); err == nil {
		return &existsError{fmt.Sprintf("library %q already exists", cfg.Name)}
	}
	if cfg.Dir == "" {
		cfg.Dir = home.LibraryDir(e.Home, cfg.Name)
	}
	prefix, err := e.barcodePrefix(cfg.Name, cfg.BarcodePrefix)
	if err != nil {
		return err
	}
	cfg.BarcodePrefix = prefix
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return err
	}
	cfg.Dir = abs
	return nil
}

// addLibrary records a library just created, and its tapes, in the
// catalog.
func (e *Env) addLibrary(lib library.Changer) error { return e.addLibraryOn(lib, "") }

// addLibraryOn records a library just created on a node ("" the server).
func (e *Env) addLibraryOn(lib library.Changer, node string) error {
	c := lib.Config()
	if err := e.Catalog.AddLibrary(catalog.Library{Name: c.Name, Dir: c.Dir, Created: e.now(), Node: node}); err != nil {
		return err
	}
	return e.registerTapes(lib)
}

// CreateNodeLibrary creates a library on a storage node (through Nodes) —
// a folder library, or with cfg.Media one on S3 or a tape library, whose
// bucket, changer and drives the node reaches itself — and registers it
// and its tapes: its name and barcode prefix are checked here against
// every library of the catalog, its folder is in the node's home.
func (e *Env) CreateNodeLibrary(cfg library.Config, node string) (library.Changer, error) {
	if e.Nodes == nil {
		return nil, fmt.Errorf("library %s: %w %s: create it through the server (kura login)", cfg.Name, ErrOnNode, node)
	}
	if err := e.checkNewLibrary(&cfg); err != nil {
		return nil, err
	}
	cfg.Dir = ""
	lib, err := e.Nodes.CreateLibrary(node, cfg)
	if err != nil {
		return nil, err
	}
	return lib, e.addLibraryOn(lib, node)
}

// CreateChanger creates a library of any kind: a tape library when
// cfg.Media names a changer (library.CreateTapeLibrary, through
// TapeHardware: its devices are checked first and nothing is registered
// when one is missing), else as CreateLibrary does.
func (e *Env) CreateChanger(cfg library.Config) (library.Changer, error) {
	if cfg.Media == nil || cfg.Media.Kind != library.MediaChanger {
		return e.CreateLibrary(cfg)
	}
	if err := e.checkNewLibrary(&cfg); err != nil {
		return nil, err
	}
	lib, err := library.CreateTapeLibrary(cfg, e.TapeHardware)
	if err != nil {
		return nil, err
	}
	return lib, e.addLibrary(lib)
}

func (e *Env) registerTapes(lib library.Changer) error {
	tapes, err := lib.Tapes()
	if err != nil {
		return err
	}
	name := lib.Config().Name
	for _, t := range tapes {
		owner, err := e.Catalog.TapeLibrary(t.Barcode)
		switch {
		case errors.Is(err, catalog.ErrNotFound):
			if err := e.Catalog.AddTape(t.Barcode, name); err != nil {
				return err
			}
		case err != nil:
			return err
		case owner != name:
			return fmt.Errorf("tape %s of library %s has the same barcode as a tape of library %s: barcodes must be unique", t.Barcode, name, owner)
		}
	}
	// The tapes may hold savesets this catalog has not seen (it was lost,
	// or restored from an older backup): new savesets must never take
	// their IDs, scanned or not.
	return e.Catalog.ReserveSavesetIDs(maxSavesetOnTapes(lib, tapes))
}

// maxSavesetOnTapes returns the highest saveset ID named by the tags of the
// tape files ("saveset N data part K", "saveset N index", "saveset N copy
// …") on the tapes of lib, complete or not. Exported or unreadable tapes
// cannot be read here (nor written); their IDs are reserved when they are
// scanned.
func maxSavesetOnTapes(lib library.Changer, tapes []library.TapeStatus) int64 {
	var top int64
	for _, ts := range tapes {
		if ts.MailSlot > 0 || ts.Files == 0 {
			continue
		}
		t, err := lib.OpenTape(ts.Barcode)
		if err != nil {
			continue
		}
		files, err := t.Files()
		t.Close()
		if err != nil {
			continue
		}
		for _, fi := range files {
			var id int64
			if _, err := fmt.Sscanf(fi.Tag, "saveset %d", &id); err == nil && id > top {
				top = id
			}
		}
	}
	return top
}

// barcodePrefix picks the barcode prefix of a new library: the one asked
// for, which no other library may use, or one derived from the name ("KUR"
// for the default library), so that barcodes stay unique across libraries
// as they are in a real tape vault.
func (e *Env) barcodePrefix(name, asked string) (string, error) {
	libs, err := e.Catalog.Libraries()
	if err != nil {
		return "", err
	}
	used := map[string]string{}
	for _, rec := range libs {
		if rec.Node != "" {
			if lib, err := e.ChangerOf(rec); err == nil {
				used[lib.Config().BarcodePrefix] = rec.Name
			}
			continue
		}
		if lib, err := library.Open(rec.Dir); err == nil {
			used[lib.Config().BarcodePrefix] = rec.Name
		}
	}
	if asked != "" {
		if owner, ok := used[strings.ToUpper(asked)]; ok {
			return "", fmt.Errorf("barcode prefix %s is used by library %s: choose another with --barcode-prefix", asked, owner)
		}
		return asked, nil
	}
	base := library.DefaultBarcodePrefix
	if name != DefaultLibrary {
		var b strings.Builder
		for _, c := range strings.ToUpper(name) {
			if (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
				b.WriteRune(c)
			}
		}
		base = b.String()
		if len(base) > 3 {
			base = base[:3]
		}
		if base == "" || base[0] >= '0' && base[0] <= '9' {
			base = "V" + base
		}
	}
	for i := 0; i < 100; i++ {
		p := base
		if i > 0 {
			p = fmt.Sprintf("%s%c", base, 'A'+rune(i-1)%26)
			if i > 26 {
				p = fmt.Sprintf("%s%02d", base, i)
			}
		}
		if _, ok := used[p]; !ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free barcode prefix for library %s: give one with --barcode-prefix", name)
}

// ErrUnregisteredLibrary is returned when the home's default library
// exists on disk but the catalog does not know it: the catalog was lost or
// replaced, and nothing is written until the library is registered.
var ErrUnregisteredLibrary = errors.New("the catalog does not know this home's library (was catalog.db lost?)")

// defaultLibraryMu serializes the creation of the default library.
var defaultLibraryMu sync.Mutex

// OpenLibrary opens a registered library by name. An empty name means the
// default library, which is created on first use.
func (e *Env) OpenLibrary(name string) (*library.Library, error) {
	if name == "" {
		name = DefaultLibrary
	}
	if name == DefaultLibrary {
		// Two jobs of one process may be the first to need it.
		defaultLibraryMu.Lock()
		defer defaultLibraryMu.Unlock()
	}
	rec, err := e.Catalog.Library(name)
	if errors.Is(err, catalog.ErrNotFound) {
		if name == DefaultLibrary {
			dir := home.LibraryDir(e.Home, DefaultLibrary)
			if _, err := os.Stat(dir); err == nil {
				// The home's own library survived a lost catalog. Writing
				// to it now would start a history beside the one on its
				// tapes: the user registers it (and scans its tapes) first.
				return nil, &UnregisteredLibraryError{Name: DefaultLibrary, Dir: dir}
			}
			return e.CreateLibrary(library.Config{Name: DefaultLibrary})
		}
		return nil, Missing("library", "no library named %q", name)
	}
	if err != nil {
		return nil, err
	}
	if rec.Node != "" {
		return nil, fmt.Errorf("library %s: %w %s (it is created, grown and removed there)", name, ErrOnNode, rec.Node)
	}
	return library.Open(rec.Dir)
}

// Changer opens a registered library's changer by name, through
// OpenChanger when it is set. An empty name means the default library,
// which is created (as a folder library) on first use.
func (e *Env) Changer(name string) (library.Changer, error) {
	if name == "" {
		name = DefaultLibrary
	}
	rec, err := e.Catalog.Library(name)
	if errors.Is(err, catalog.ErrNotFound) {
		// Creation is the folder library's: OpenLibrary makes the
		// default library or says there is no such library.
		if _, err := e.OpenLibrary(name); err != nil {
			return nil, err
		}
		rec, err = e.Catalog.Library(name)
	}
	if err != nil {
		return nil, err
	}
	return e.ChangerOf(rec)
}

// ChangerOf opens the changer of a library the catalog knows, through
// OpenChanger when it is set, otherwise the folder, S3 or tape library in
// rec.Dir (library.OpenChanger, with TapeHardware).
func (e *Env) ChangerOf(rec catalog.Library) (library.Changer, error) {
	if rec.Node != "" {
		if e.Nodes == nil {
			return nil, fmt.Errorf("library %s: %w %s: reach it through the server (kura login)", rec.Name, ErrOnNode, rec.Node)
		}
		return e.Nodes.Open(rec)
	}
	if e.OpenChanger != nil {
		return e.OpenChanger(rec)
	}
	return library.OpenChanger(rec.Dir, e.TapeHardware)
}

// The folder and S3 library is one Changer, the tape library another;
// OpenChanger may give others.
var (
	_ library.Changer = (*library.Library)(nil)
	_ library.Changer = (*library.TapeLibrary)(nil)
)

// ChangerOfTape opens the changer of the library that holds a tape.
func (e *Env) ChangerOfTape(barcode string) (library.Changer, error) {
	name, err := e.Catalog.TapeLibrary(barcode)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("tape", "no tape %s", barcode)
	}
	if err != nil {
		return nil, err
	}
	return e.Changer(name)
}

// ErrNotFound: an argument names a saveset, library, tape, job, policy or
// selection that does not exist. Such an error is a *NotFoundError naming
// what is missing ("no saveset 999"); the CLI adds where to look.
var ErrNotFound = errors.New("not found")

// existsError is a catalog.ErrExists with its own words.
type existsError struct{ msg string }

func (e *existsError) Error() string        { return e.msg }
func (e *existsError) Is(target error) bool { return target == catalog.ErrExists }

// NotFoundError is an ErrNotFound that says what kind of thing was missing.
type NotFoundError struct {
	What string // saveset, library, tape, drive, selection, policy, client, job, copy
	Msg  string
}

func (e *NotFoundError) Error() string        { return e.Msg }
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Missing returns an ErrNotFound about a thing of kind what.
func Missing(what, format string, args ...any) error {
	return &NotFoundError{What: what, Msg: fmt.Sprintf(format, args...)}
}

// LibraryOfTape opens the library that holds a tape.
func (e *Env) LibraryOfTape(barcode string) (*library.Library, error) {
	name, err := e.Catalog.TapeLibrary(barcode)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, Missing("tape", "no tape %s", barcode)
	}
	if err != nil {
		return nil, err
	}
	return e.OpenLibrary(name)
}

// AddTapes adds blank tapes to a library and registers them.
func (e *Env) AddTapes(libName string, n int) ([]string, error) {
	var lib interface {
		library.Changer
		AddTapes(n int) ([]string, error)
	}
	if rec, err := e.Catalog.Library(libName); err == nil && rec.Node != "" {
		// A storage node's library grows on the node (node.Remote).
		c, err := e.ChangerOf(rec)
		if err != nil {
			return nil, err
		}
		adder, ok := c.(interface {
			library.Changer
			AddTapes(n int) ([]string, error)
		})
		if !ok {
			return nil, fmt.Errorf("adding tapes to library %s: %w", libName, library.ErrUnsupported)
		}
		lib = adder
	} else {
		l, err := e.OpenLibrary(libName)
		if err != nil {
			return nil, err
		}
		lib = l
	}
	codes, err := lib.AddTapes(n)
	if err != nil {
		return nil, err
	}
	return codes, e.registerTapes(lib)
}

// ImportTape moves a tape from its library's mail slot back into a slot.
// A tape exported before the catalog was lost or restored may hold savesets
// this catalog has not seen: their IDs are reserved at once, as when a
// library is registered.
func (e *Env) ImportTape(barcode string) error {
	lib, err := e.ChangerOfTape(barcode)
	if errors.Is(err, ErrNotFound) {
		// A cartridge new to the catalog, put into a tape library's
		// mail slot: it joins that library.
		if tl := e.tapeLibraryHolding(barcode); tl != nil {
			lib, err = tl, e.knowTape(tl, barcode)
		}
	}
	if err != nil {
		return err
	}
	if err := lib.Import(barcode); err != nil {
		return err
	}
	tapes, err := lib.Tapes()
	if err != nil {
		return err
	}
	tapes = slices.DeleteFunc(tapes, func(t library.TapeStatus) bool { return t.Barcode != barcode })
	return e.Catalog.ReserveSavesetIDs(maxSavesetOnTapes(lib, tapes))
}

// tapeLibraryHolding is the registered tape library whose changer holds a
// cartridge with barcode, or nil.
func (e *Env) tapeLibraryHolding(barcode string) library.Changer {
	recs, err := e.Catalog.Libraries()
	if err != nil {
		return nil
	}
	for _, rec := range recs {
		lib, err := e.ChangerOf(rec)
		if err != nil {
			continue
		}
		if _, ok := lib.(*library.TapeLibrary); !ok {
			continue
		}
		tapes, err := lib.Tapes()
		if err != nil {
			continue
		}
		if slices.ContainsFunc(tapes, func(t library.TapeStatus) bool { return t.Barcode == barcode }) {
			return lib
		}
	}
	return nil
}

// tapeOpener returns a function that opens any tape by barcode for reading,
// in whichever library holds it. The caller closes each device it gets: a
// tape library's cartridge holds a drive while it is open.
func (e *Env) tapeOpener() func(string) (tape.Device, error) {
	libs := map[string]library.Changer{}
	return func(barcode string) (tape.Device, error) {
		name, err := e.Catalog.TapeLibrary(barcode)
		if err != nil {
			return nil, fmt.Errorf("tape %s: %w", barcode, err)
		}
		lib := libs[name]
		if lib == nil {
			if lib, err = e.Changer(name); err != nil {
				return nil, err
			}
			libs[name] = lib
		}
		t, err := lib.OpenTape(barcode)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}

// fsyncDir makes a rename in dir durable.
func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// openIndex opens a saveset's index: the cached file in the home, or the
// index tape file (which is then cached again). A damaged cache is rebuilt
// from the tape and reported to warn (nil: e.notice).
func (e *Env) openIndex(ss *catalog.Saveset, warn func(msg string)) (*index.Reader, error) {
	if err := notSealed(ss); err != nil {
		return nil, err
	}
	p, err := e.indexFile(ss, warn)
	if err != nil {
		return nil, err
	}
	return index.OpenFile(p)
}

// indexCachePath is where the home caches the index of the tape files a
// saveset record describes: ID.idx for the saveset's own, ID.copyN.idx for
// its copy N (a record made by copyView). A copy's index lists the same
// entries as the saveset's, with the frame table of the copy's tapes.
func (e *Env) indexCachePath(ss *catalog.Saveset) string {
	name := fmt.Sprintf("%d.idx", ss.ID)
	if n := copyInUse(ss); n > 0 {
		name = fmt.Sprintf("%d.copy%d.idx", ss.ID, n)
	}
	return filepath.Join(home.IndexDir(e.Home), name)
}

// IndexFile returns the path of a saveset's index in the home's cache,
// reading it back from its tape when the cache lacks it or it is damaged
// (reported with e.notice). For a copy view it is the copy's index
// (indexCachePath).
func (e *Env) IndexFile(ss *catalog.Saveset) (string, error) {
	return e.indexFile(ss, nil)
}

// indexCheck is the check of a saveset's index file: every block of a
// clear one (checkIndexFile); of an encrypted one, which only its client's
// key opens, that it is an age file of the size the catalog recorded (its
// chunks are authenticated where it is decrypted).
func indexCheck(ss *catalog.Saveset) func(p string) error {
	if ss.Encryption == "" {
		return checkIndexFile
	}
	return func(p string) error {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		head := make([]byte, len(seal.Magic))
		if _, err := io.ReadFull(f, head); err != nil || !seal.IsSealed(head) {
			return fmt.Errorf("%s: %w: not an age file", p, index.ErrCorrupt)
		}
		if ss.IndexBytes > 0 && st.Size() != ss.IndexBytes {
			return fmt.Errorf("%s: %w: %d bytes, the catalog recorded %d", p, index.ErrCorrupt, st.Size(), ss.IndexBytes)
		}
		return nil
	}
}

// notSealed is nil for a saveset this process can read, and ErrSealed for
// an encrypted one: its index and data open only on an agent holding its
// client's key.
func notSealed(ss *catalog.Saveset) error {
	if ss.Encryption == "" {
		return nil
	}
	return sayf(ErrSealed, "saveset %d is encrypted by client %s (%s): its index and data open only on an agent holding its key", ss.ID, ss.Client, ss.Encryption)
}

// checkIndexFile opens the index file at p and checks every block.
func checkIndexFile(p string) error {
	indexChecks.Add(1)
	r, err := index.OpenFile(p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Check(); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// indexChecks counts checkIndexFile's passes over a whole cached index:
// a listing read in pages makes them for its first page only
// (TestLaterPagesCheckNoIndex).
var indexChecks atomic.Int64

// indexFile is IndexFile with the warning of a rebuilt cache going to warn
// (nil: e.notice). Every block of the cache is checked (index.Reader.Check:
// one sequential read), so that a damaged cache is replaced here rather than
// failing a restore or verify half-way; a missing cache is read back
// quietly (as after a catalog restore on a new machine).
func (e *Env) indexFile(ss *catalog.Saveset, warn func(msg string)) (string, error) {
	p := e.indexCachePath(ss)
	cerr := indexCheck(ss)(p)
	if cerr == nil {
		return p, nil
	}
	// A damaged cache is not fatal: the tape has the index too. It stays
	// until the tape's replaces it (a rename), so a failure loses nothing.
	missing := errors.Is(cerr, fs.ErrNotExist)
	if err := e.cacheIndex(ss, p); err != nil {
		if missing {
			return "", err
		}
		return "", fmt.Errorf("the cached index of saveset %d is damaged (%v), and its index tape file cannot replace it: %w", ss.ID, cerr, err)
	}
	if !missing {
		msg := fmt.Sprintf("the cached index of saveset %d was damaged (%v): rebuilt from tape %s file %d",
			ss.ID, cerr, ss.IndexPart.Barcode, ss.IndexPart.File)
		if warn == nil {
			warn = e.notice
		}
		warn(msg)
	}
	return p, nil
}

// cacheIndex reads a saveset's index tape file into the cache at p,
// checking every block before it takes the cache's place.
func (e *Env) cacheIndex(ss *catalog.Saveset, p string) error {
	if ss.IndexPart.Barcode == "" {
		return fmt.Errorf("saveset %d has no index on tape", ss.ID)
	}
	dev, err := e.tapeOpener()(ss.IndexPart.Barcode)
	if err != nil {
		return err
	}
	defer dev.Close()
	fr, err := dev.Open(ss.IndexPart.File)
	if err != nil {
		return fmt.Errorf("reading the index of saveset %d from tape %s file %d: %w", ss.ID, ss.IndexPart.Barcode, ss.IndexPart.File, err)
	}
	defer fr.Close()
	err = writeFileAtomicChecked(p, fr, indexCheck(ss))
	if err != nil {
		return fmt.Errorf("reading the index of saveset %d from tape %s file %d: %w", ss.ID, ss.IndexPart.Barcode, ss.IndexPart.File, err)
	}
	return nil
}

// writeFileAtomic writes r into path through a temporary file and a rename.
func writeFileAtomic(path string, r io.Reader) error {
	return writeFileAtomicChecked(path, r, nil)
}

// writeFileAtomicChecked is writeFileAtomic; check (when not nil) is given
// the temporary file once it is durable and must pass before the rename.
func writeFileAtomicChecked(path string, r io.Reader, check func(tmp string) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if check != nil {
		if err := check(tmp.Name()); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return fsyncDir(filepath.Dir(path))
}

// phaseRecord turns a finished monitor phase into its catalog record.
func phaseRecord(p *monitor.Phase) catalog.Phase {
	start := p.Source.Start()
	return catalog.Phase{Name: p.Name, Start: start, End: start.Add(p.Elapsed()), Files: p.Files.Total(),
		Bytes: p.Source.Total(), MediaBytes: p.Media.Total(), AvgRate: p.Source.Average(), PeakRate: p.Source.Peak()}
}

// progressTicker limits progress events to a few per second; total is the
// phase's expected source bytes (0 when unknown); tape is the barcode of
// the tape in use, set by whoever loads or opens one (setTape), from any
// goroutine.
type progressTicker struct {
	last  time.Time
	total int64
	tape  atomic.Pointer[string]
	// estimate is the total a pre-count found (see precount), from another
	// goroutine; it counts while total is unknown (0).
	estimate atomic.Int64
}

// currentTotal is the expected total: known, estimated, or 0.
func (t *progressTicker) currentTotal() int64 {
	if t.total > 0 {
		return t.total
	}
	return t.estimate.Load()
}

// setTape notes the tape the phase uses now.
func (t *progressTicker) setTape(barcode string) { t.tape.Store(&barcode) }

func (t *progressTicker) currentTape() string {
	if p := t.tape.Load(); p != nil {
		return *p
	}
	return ""
}

// tapeNoting is a FrameSource that tells a progress ticker which tape each
// part it opens is on.
type tapeNoting struct {
	src    stream.FrameSource
	parts  []catalog.Part
	ticker *progressTicker
}

var _ stream.FrameSource = tapeNoting{}

func (s tapeNoting) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	return NoteTapes(s.src, s.parts, s.ticker.setTape).OpenAt(loc)
}

// NoteTapes returns src telling note the barcode of the tape each read
// starts on (parts: the saveset's parts, in src's order): the tape in use
// that progress shows, for a local job and for a server reading a
// saveset's data for an agent alike.
func NoteTapes(src stream.FrameSource, parts []catalog.Part, note func(barcode string)) stream.FrameSource {
	return tapeNoter{src: src, parts: parts, note: note}
}

type tapeNoter struct {
	src   stream.FrameSource
	parts []catalog.Part
	note  func(string)
}

func (s tapeNoter) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	if loc.Part >= 0 && loc.Part < len(s.parts) {
		s.note(s.parts[loc.Part].Barcode)
	}
	return s.src.OpenAt(loc)
}

const progressEvery = 250 * time.Millisecond

func (e *Env) tick(t *progressTicker, jobID int64, p *monitor.Phase, path string) {
	now := e.now()
	if now.Sub(t.last) < progressEvery {
		return
	}
	t.last = now
	e.emit(monitor.Event{Kind: monitor.Progress, JobID: jobID, Phase: p.Name, Files: p.Files.Total(),
		Bytes: p.Source.Total(), Path: path, Rate: p.Source.Average(), Total: t.currentTotal(), Tape: t.currentTape()})
}

// logf adds a timestamped line to a job's log (the tail `kura jobs show`
// prints; the catalog keeps the last lines).
func (e *Env) logf(job *catalog.Job, format string, args ...any) {
	job.Log = append(job.Log, e.now().Local().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}
