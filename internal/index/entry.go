package index

// Type of an entry. Values are permanent: they are stored on media.
type Type uint8

const (
	TypeFile     Type = 1
	TypeDir      Type = 2
	TypeSymlink  Type = 3
	TypeHardlink Type = 4 // a further name of a regular file already in the stream; Link names the first
	TypeFifo     Type = 5
	TypeChar     Type = 6
	TypeBlock    Type = 7
)

func (t Type) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeSymlink:
		return "symlink"
	case TypeHardlink:
		return "hardlink"
	case TypeFifo:
		return "fifo"
	case TypeChar:
		return "char"
	case TypeBlock:
		return "block"
	}
	return "unknown"
}

// Flags on an entry. Values are permanent.
const (
	// FlagUnchanged: the entry's content is not in this saveset's stream; it
	// is in saveset Source (an earlier backup of the chain).
	FlagUnchanged uint8 = 1 << 0
	// FlagChanged: the file changed while it was read; the stored content may
	// be inconsistent (GNU tar: "file changed as we read it").
	FlagChanged uint8 = 1 << 1
	// FlagSparse: the file has holes and is stored sparse (its data
	// extents only, pax GNU sparse format 1.0); Size is its logical size.
	FlagSparse uint8 = 1 << 2
	// FlagPart: the file entry continues the content of the file entry
	// before it in the index (the output of a command, stored in parts of
	// a known size; its path is that entry's path + ".kura-part-NNNNNN").
	// A restore appends it to that file.
	FlagPart uint8 = 1 << 3
)

// Entry is one path of a saveset's index. Paths are slash-separated, relative
// to the root "/" (no leading slash), cleaned, and may hold any bytes but NUL
// (non-UTF-8 names are kept as they are).
type Entry struct {
	Path   string
	Type   Type
	Flags  uint8
	Mode   uint32 // permission and setuid/setgid/sticky bits (os.FileMode.Perm plus those), not the type
	UID    uint32
	GID    uint32
	Size   int64 // content bytes (files); 0 otherwise
	MTime  int64 // unix nanoseconds
	CTime  int64 // unix nanoseconds (change detection)
	Inode  uint64
	Dev    uint64
	Rdev   uint64 // device number for char/block devices
	Link   string // symlink target, or hardlink target path
	Xattrs map[string]string

	// Where the content is. Offset is the uncompressed stream offset of the
	// entry's tar header. Source is the saveset id holding the data when
	// FlagUnchanged is set (0 otherwise).
	Offset int64
	Source uint64
	Digest [16]byte // XXH3-128 of the content (files)

	invalid bool // read from a file, its path or link breaks the rules
}

// Less reports whether path a sorts before b in index order: component by
// component, bytewise within a component ("a/b" < "a/b/c" < "a/b-2" < "a/c").
// The walker emits entries in this order: all children of a directory, then
// each subdirectory in turn. So the immediate children of a directory are
// contiguous and follow the directory's own parent listing.
func Less(a, b string) bool {
	return Compare(a, b) < 0
}

// Compare orders paths in index order: by parent directory (component-wise,
// so a directory's subtree follows it) and then by base name, bytewise.
// It returns -1, 0 or +1.
func Compare(a, b string) int {
	da, ba := split(a)
	db, bb := split(b)
	if c := compareDirs(da, db); c != 0 {
		return c
	}
	switch {
	case ba < bb:
		return -1
	case ba > bb:
		return 1
	}
	return 0
}

func split(p string) (dir, base string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// compareDirs compares slash-separated paths component by component: '/'
// sorts below every other byte.
func compareDirs(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
