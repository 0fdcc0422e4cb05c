package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/server"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

func init() { commands = append(commands, newVersionCmd) }

// version and commit name the build. A release sets them at link time:
//
//	go build -ldflags "-X main.version=1.0.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/kura
//
// Left empty, they come from the build information Go records
// (vcs.revision, vcs.modified; the module version for `go install`).
var (
	version string
	commit  string
)

// versionJSON is `kura version --json`.
type versionJSON struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// The on-media formats this binary writes and reads.
	TapeLabelVersion    int    `json:"tape_label_version"`
	TapeChecksumVersion int    `json:"tape_checksum_version"`
	TapeFilemarkVersion int    `json:"tape_filemark_version"`
	StreamFormat        string `json:"stream_format"`
	StreamVersion       int    `json:"stream_version"`
	IndexVersion        int    `json:"index_version"`
}

// buildVersion is what `kura version` reports.
func buildVersion() versionJSON {
	v := versionJSON{
		Version:             version,
		Commit:              commit,
		GoVersion:           runtime.Version(),
		Platform:            runtime.GOOS + "/" + runtime.GOARCH,
		TapeLabelVersion:    tape.LabelVersion,
		TapeChecksumVersion: tape.ChecksumVersion,
		TapeFilemarkVersion: tape.FilemarkVersion,
		StreamFormat:        stream.LabelFormat,
		StreamVersion:       stream.LabelVersion,
		IndexVersion:        index.Version,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = server.Version + "-dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

func newVersionCmd(*globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and the media format versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, v)
			}
			mod := ""
			if v.Modified {
				mod = " (modified)"
			}
			fmt.Fprintf(out, "kura %s\ncommit   %s%s\ngo       %s %s\n", v.Version, v.Commit, mod, v.GoVersion, v.Platform)
			fmt.Fprintf(out, "formats  tape label %d, block checksums %d, filemarks %d; stream %s %d; index %d\n",
				v.TapeLabelVersion, v.TapeChecksumVersion, v.TapeFilemarkVersion, v.StreamFormat, v.StreamVersion, v.IndexVersion)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
