package api

import "context"

// LibraryService is the virtual tape libraries: /libraries.
type LibraryService interface {
	// Libraries lists every library of the catalog; one that cannot be
	// opened is listed with its Error.
	Libraries(ctx context.Context) ([]Library, error)
	// Library shows one library with its slots, drives and mail slots.
	Library(ctx context.Context, name string) (*Library, error)
	// CreateLibrary creates a library with labelled blank tapes.
	CreateLibrary(ctx context.Context, req LibraryCreate) (*Library, error)
	// RegisterLibrary registers an existing library folder (after losing
	// the catalog); its savesets come back with a tape scan.
	RegisterLibrary(ctx context.Context, req LibraryRegister) (*Library, error)
	// RemoveLibrary deletes a library and its tapes; refused while it
	// holds unexpired savesets.
	RemoveLibrary(ctx context.Context, name string) error
}

func init() {
	wireTypes = append(wireTypes, Library{}, LibraryCreate{}, LibraryRegister{})
}

// LibraryConfig is a library's configuration.
type LibraryConfig struct {
	Slots                   int    `json:"slots"`
	Drives                  int    `json:"drives"`
	MailSlots               int    `json:"mail_slots"`
	TapeSizeBytes           int64  `json:"tape_size_bytes"`
	BlockSizeBytes          int    `json:"block_size_bytes"`  // the drives' default
	BufferSizeBytes         int    `json:"buffer_size_bytes"` // the drives' default
	EarlyWarningMarginBytes int64  `json:"early_warning_margin_bytes"`
	BarcodePrefix           string `json:"barcode_prefix"`
	// Media is where the tapes are kept when not in the library folder:
	// "s3 URL" for a bucket (no credential is ever part of it).
	Media string `json:"media,omitempty"`
}

// Drive is one drive of a library.
type Drive struct {
	Library         string `json:"library"`
	Number          int    `json:"number"`
	BlockSizeBytes  int    `json:"block_size_bytes"`
	BufferSizeBytes int    `json:"buffer_size_bytes"`
	Barcode         string `json:"barcode"` // the loaded tape; "" when empty
	Busy            bool   `json:"busy"`
}

// Slot is a storage or mail slot.
type Slot struct {
	Number  int    `json:"number"`
	Barcode string `json:"barcode,omitempty"` // the tape in the slot now
	// Reserved is the tape whose home this slot is while it sits in a
	// drive.
	Reserved string `json:"reserved,omitempty"`
}

// Library is a virtual tape library. A list leaves out Slots, Drives and
// MailSlots; showing one library fills them in.
type Library struct {
	Name      string         `json:"name"`
	Dir       string         `json:"dir"`
	Node      string         `json:"node,omitempty"`   // the storage node it lives on ("" for the server)
	Config    *LibraryConfig `json:"config,omitempty"` // left out when the library cannot be opened
	Tapes     *int           `json:"tapes,omitempty"`
	Error     string         `json:"error,omitempty"`
	Slots     []Slot         `json:"slots,omitempty"`
	Drives    []Drive        `json:"drives,omitempty"`
	MailSlots *[]Slot        `json:"mail_slots,omitempty"`
}

// LibraryCreate creates a library (POST /libraries). Zero values take the
// library's defaults.
type LibraryCreate struct {
	Name string `json:"name"`
	Dir  string `json:"dir,omitempty"` // on the server; default: in its home
	// Node creates the library on that storage node (in its home), not on
	// the server: its tapes and drives are the node's. With S3 the node
	// reaches the bucket with its own credentials; with Changer the
	// changer and drive devices are the node's.
	Node            string `json:"node,omitempty"`
	Slots           int    `json:"slots,omitempty"`
	Drives          int    `json:"drives,omitempty"`
	TapeSizeBytes   int64  `json:"tape_size_bytes,omitempty"`
	BlockSizeBytes  int    `json:"block_size_bytes,omitempty"`
	BufferSizeBytes int    `json:"buffer_size_bytes,omitempty"`
	BarcodePrefix   string `json:"barcode_prefix,omitempty"`
	// S3 keeps the tapes in an S3-compatible bucket instead of the library
	// folder: http[s]://HOST[:PORT]/BUCKET[/PREFIX]. Credentials never go
	// here: the server reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
	// or a credentials file, from its own environment.
	S3 string `json:"s3,omitempty"`
	// ChunkSizeBytes is the size of a tape file's chunk objects on S3
	// (default 64 MiB).
	ChunkSizeBytes int64 `json:"chunk_size_bytes,omitempty"`
	// Changer makes the library a real tape library: its SCSI media
	// changer on the server (/dev/sgN), driven through mtx, with the st
	// drives DriveDevices (/dev/nstN, in the changer's drive order). Its
	// slots and mail slots are the changer's; Slots, Drives and S3 are not
	// given with it.
	Changer      string   `json:"changer,omitempty"`
	DriveDevices []string `json:"drive_devices,omitempty"`
}

// LibraryRegister registers an existing library folder
// (POST /libraries/register).
type LibraryRegister struct {
	Dir string `json:"dir"`
}
