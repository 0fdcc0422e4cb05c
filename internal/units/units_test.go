package units

import "testing"

func TestParseSize(t *testing.T) {
	cases := map[string]int64{
		"0": 0, "4096": 4096, "32KiB": 32 << 10, "257 KiB": 257 << 10, "8193KiB": 8193 << 10,
		"1MiB": 1 << 20, "1.5GiB": 3 << 29, "3TiB": 3 << 40, "10GB": 10e9, "1KB": 1000,
		"64M": 64 << 20, "2tb": 2e12, "12B": 12,
	}
	for in, want := range cases {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "abc", "12 parsecs", "-1KiB", "1e999GB", "KiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded, want error", bad)
		}
	}
}

func TestParseRate(t *testing.T) {
	cases := map[string]float64{
		"100Mbit": 12.5e6, "10Mbit/s": 1.25e6, "10Mbps": 1.25e6, "1Gbit": 125e6,
		"12.5MB/s": 12.5e6, "25MiB/s": 25 << 20, "65MiB": 65 << 20,
	}
	for in, want := range cases {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "0MB/s", "-3Mbit"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) succeeded, want error", bad)
		}
	}
}

func TestFormat(t *testing.T) {
	if got := FormatSize(512); got != "512 B" {
		t.Errorf("FormatSize(512) = %q", got)
	}
	if got := FormatSize(8193 << 10); got != "8.00 MiB" {
		t.Errorf("FormatSize(8193KiB) = %q", got)
	}
	if got := Ratio(526, 100); got != "5.26:1" {
		t.Errorf("Ratio = %q", got)
	}
	if got := Ratio(1, 0); got != "-" {
		t.Errorf("Ratio with zero media = %q", got)
	}
}

func TestCount(t *testing.T) {
	cases := []struct {
		n    int64
		noun string
		want string
	}{
		{0, "file", "0 files"}, {1, "file", "1 file"}, {2, "file", "2 files"}, {1234, "file", "1,234 files"},
		{1, "entry", "1 entry"}, {3, "entry", "3 entries"}, {2, "day", "2 days"}, {1, "day", "1 day"},
		{2, "mail slot", "2 mail slots"}, {1, "saveset", "1 saveset"}, {5, "pass", "5 passes"},
		{2, "backup", "2 backups"}, {1, "generation", "1 generation"},
	}
	for _, c := range cases {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

func TestRatioNeverPrintsZero(t *testing.T) {
	cases := []struct {
		source, media int64
		want          string
	}{
		{526, 100, "5.26:1"}, {100, 100, "1.00:1"}, {1, 100, "0.01:1"},
		{0, 1021, "-"}, {100, 0, "-"}, {0, 0, "-"}, {1, 1021, "-"}, {4, 1000, "-"},
	}
	for _, c := range cases {
		if got := Ratio(c.source, c.media); got != c.want {
			t.Errorf("Ratio(%d, %d) = %q, want %q", c.source, c.media, got, c.want)
		}
	}
}
