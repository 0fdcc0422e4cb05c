package library

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/s3tape"
)

// Media kinds a library's configuration names (MediaConfig.Kind). The
// folder is the default and is never written out.
const (
	MediaFolder  = "folder"
	MediaS3      = "s3"
	MediaChanger = "changer" // a tape library: TapeLibrary, not Media
)

// MediaConfig says where a library keeps its tapes when they are not the
// folder DIR/tapes: the kind and the location, never a credential (an S3
// library reads its keys from the environment or a credentials file each
// time it opens a tape). It is stored in library.json.
type MediaConfig struct {
	Kind string `json:"kind"`
	// URL is http[s]://HOST[:PORT]/BUCKET[/PREFIX] (s3tape.ParseURL): each
	// tape is the objects under PREFIX/BARCODE/.
	URL    string `json:"url"`
	Region string `json:"region,omitempty"`
	// ChunkSize is the size of a tape file's chunk objects (0: the
	// default, s3tape.DefaultChunkSize).
	ChunkSize int64 `json:"chunk_size,omitempty"`
	// Changer is a tape library's SCSI media changer (/dev/sgN or
	// /dev/changer) and DriveDevices its drives' st devices (/dev/nstN),
	// in the changer's drive order (Kind MediaChanger).
	Changer      string   `json:"changer,omitempty"`
	DriveDevices []string `json:"drive_devices,omitempty"`
}

// validate checks the configuration without touching the store.
func (m *MediaConfig) validate() error {
	if m == nil {
		return nil
	}
	switch m.Kind {
	case MediaS3:
		if _, err := m.s3Config(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if m.ChunkSize < 0 || (m.ChunkSize > 0 && m.ChunkSize < MinBlockSize) {
			return fmt.Errorf("%w: chunk size %d: want at least %d bytes", ErrInvalidConfig, m.ChunkSize, MinBlockSize)
		}
		return nil
	case MediaChanger:
		if !filepath.IsAbs(m.Changer) {
			return fmt.Errorf("%w: changer device %q: want an absolute path such as /dev/sg3", ErrInvalidConfig, m.Changer)
		}
		if len(m.DriveDevices) < 1 || len(m.DriveDevices) > MaxDrives {
			return fmt.Errorf("%w: a tape library needs 1 to %d drive devices (/dev/nstN), %d given", ErrInvalidConfig, MaxDrives, len(m.DriveDevices))
		}
		for i, d := range m.DriveDevices {
			if !filepath.IsAbs(d) {
				return fmt.Errorf("%w: drive device %q: want an absolute path such as /dev/nst0", ErrInvalidConfig, d)
			}
			if slices.Contains(m.DriveDevices[:i], d) || d == m.Changer {
				return fmt.Errorf("%w: device %s named twice", ErrInvalidConfig, d)
			}
		}
		if m.URL != "" || m.ChunkSize != 0 {
			return fmt.Errorf("%w: a tape library has no URL or chunk size", ErrInvalidConfig)
		}
		return nil
	case "", MediaFolder:
		return fmt.Errorf("%w: media kind %q: a folder library has no media configuration", ErrInvalidConfig, m.Kind)
	}
	return fmt.Errorf("%w: unknown media kind %q (want %q or %q)", ErrInvalidConfig, m.Kind, MediaS3, MediaChanger)
}

func (m *MediaConfig) s3Config() (s3tape.Config, error) {
	c, err := s3tape.ParseURL(m.URL)
	if err != nil {
		return s3tape.Config{}, err
	}
	c.Region, c.ChunkSize = m.Region, m.ChunkSize
	return c, nil
}

// String is the location for messages and logs (no credential is part of
// it).
func (m *MediaConfig) String() string {
	if m == nil {
		return MediaFolder
	}
	if m.Kind == MediaChanger {
		return "changer " + m.Changer + ", drives " + strings.Join(m.DriveDevices, " ")
	}
	return m.Kind + " " + m.URL
}

// mediaFor builds the media a configuration names; nil for a folder
// library.
func mediaFor(m *MediaConfig) (Media, error) {
	if m == nil {
		return nil, nil
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	if m.Kind == MediaChanger {
		return nil, fmt.Errorf("%w: its tapes are the cartridges in %s (put new ones into a mail slot and import them with kura tape import)", ErrTapeLibrary, m)
	}
	c, err := m.s3Config()
	if err != nil {
		return nil, err
	}
	return S3Media(c), nil
}

// S3Media returns the media of a library whose tapes are in an S3 bucket:
// each tape the objects under PREFIX/BARCODE/ (package s3tape). Its devices
// can be relabelled (recycling) and report label damage; a tape whose two
// label objects are both lost does not open (no stand-in label).
func S3Media(cfg s3tape.Config) Media { return s3Media{cfg: cfg} }

type s3Media struct{ cfg s3tape.Config }

// check reaches the store and the bucket: the credentials, the bucket and
// the endpoint are checked before a library is created around them.
func (m s3Media) check() error {
	t, err := s3tape.Open(m.cfg, "KURA-PROBE")
	if err == nil {
		return t.Close()
	}
	if errors.Is(err, tape.ErrBlank) {
		return nil
	}
	return err
}

func (m s3Media) Format(l tape.Label, opts tape.Options) error {
	t, err := s3tape.Format(m.cfg, l)
	if err != nil {
		return err
	}
	return t.Close()
}

func (m s3Media) Open(bc string, standIn tape.Label, opts tape.Options) (tape.Device, error) {
	t, err := s3tape.Open(m.cfg, bc)
	if err != nil {
		return nil, err
	}
	return s3Device{t, m.cfg}, nil
}

// s3Device is a tape in the bucket that also knows where the bucket is, for
// the stock-tool recipe (tape.DataURLer); every other capability is the
// s3tape.Tape's.
type s3Device struct {
	*s3tape.Tape
	cfg s3tape.Config
}

var (
	_ tape.DataURLer = s3Device{}
	_ Relabeler      = s3Device{}
)

// DataURLs are the URLs of tape file n's chunk objects, in order
// (path-style: SCHEME://ENDPOINT/BUCKET/KEY), and the signing region
// (us-east-1 when the library names none).
func (d s3Device) DataURLs(n int) ([]string, string, error) {
	keys, err := d.Keys(n)
	if err != nil {
		return nil, "", err
	}
	scheme := "https"
	if d.cfg.Insecure {
		scheme = "http"
	}
	urls := make([]string, len(keys))
	for i, k := range keys {
		urls[i] = scheme + "://" + d.cfg.Endpoint + "/" + d.cfg.Bucket + "/" + (&url.URL{Path: k}).EscapedPath()
	}
	region := d.cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	return urls, region, nil
}

// Exists reports whether tape bc has a label (good or damaged) in the
// bucket. Objects of a tape without either label copy are stray (a crash
// before the label): Format removes them.
func (m s3Media) Exists(bc string) (bool, error) {
	t, err := s3tape.Open(m.cfg, bc)
	switch {
	case err == nil:
		t.Close()
		return true, nil
	case errors.Is(err, tape.ErrBlank):
		return false, nil
	case errors.Is(err, tape.ErrBadLabel):
		return true, nil
	}
	return false, fmt.Errorf("media %s: %w", bc, err)
}

// labelOf reads the label of stored media bc (for adopting the tapes of a
// library created again over the same bucket).
func labelOf(m Media, bc string) (tape.Label, bool) {
	d, err := m.Open(bc, tape.Label{}, tape.Options{})
	if err != nil {
		return tape.Label{}, false
	}
	defer d.Close()
	return d.Label(), true
}
