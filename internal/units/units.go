// Package units parses and formats the sizes, rates and ratios that Kura's
// command line and reports speak: binary (KiB, MiB, GiB, TiB) and decimal
// (KB, MB, GB, TB) sizes, byte and bit rates, and compression ratios written
// the way the seed reports write them ("5.26:1").
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

var sizeSuffixes = map[string]float64{
	"":    1,
	"b":   1,
	"k":   1 << 10,
	"kib": 1 << 10,
	"m":   1 << 20,
	"mib": 1 << 20,
	"g":   1 << 30,
	"gib": 1 << 30,
	"t":   1 << 40,
	"tib": 1 << 40,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
}

// ParseSize parses "256KiB", "8193 KiB", "1.5GB", "4096" or "64M" into bytes.
// Binary suffixes (KiB, MiB, GiB, TiB and the bare K, M, G, T) are powers of
// 1024; decimal ones (KB, MB, GB, TB) are powers of 1000.
func ParseSize(s string) (int64, error) {
	num, suffix := splitNumber(s)
	if num == "" {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional unit such as 256KiB or 10GB", s)
	}
	mult, ok := sizeSuffixes[strings.ToLower(suffix)]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, suffix)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return int64(math.Round(b)), nil
}

// ParseRate parses a transfer rate into bytes per second. It accepts byte
// rates ("12.5MB/s", "100MiB/s", "25MiB") and bit rates ("100Mbit",
// "10Mbps", "1Gbit/s"); bit rates are decimal, as network people use them.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "ps")
	lower := strings.ToLower(t)
	for _, bit := range []struct {
		suffix string
		mult   float64
	}{{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"kb", 0}, {"bit", 1}} {
		if bit.mult == 0 {
			break
		}
		if strings.HasSuffix(lower, bit.suffix) {
			num := strings.TrimSpace(t[:len(t)-len(bit.suffix)])
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("invalid rate %q", s)
			}
			return v * bit.mult / 8, nil
		}
	}
	// "10Mbps" arrives here as "10Mb" after trimming "ps": treat a lower-case
	// "b" after a decimal prefix as bits, as "Mbps" always means megabits.
	if strings.HasSuffix(strings.TrimSpace(s), "bps") {
		num, suffix := splitNumber(t)
		mult := map[string]float64{"kb": 1e3, "mb": 1e6, "gb": 1e9, "b": 1}[strings.ToLower(suffix)]
		v, err := strconv.ParseFloat(num, 64)
		if mult == 0 || err != nil || v <= 0 {
			return 0, fmt.Errorf("invalid rate %q", s)
		}
		return v * mult / 8, nil
	}
	b, err := ParseSize(t)
	if err != nil {
		return 0, fmt.Errorf("invalid rate %q: want e.g. 100Mbit, 12.5MB/s or 25MiB/s", s)
	}
	if b <= 0 {
		return 0, fmt.Errorf("invalid rate %q: must be positive", s)
	}
	return float64(b), nil
}

func splitNumber(s string) (num, suffix string) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], strings.TrimFunc(s[i:], unicode.IsSpace)
}

// FormatSize formats bytes with binary units: "0 B", "512 B", "1.5 KiB", "8.0 MiB".
func FormatSize(n int64) string {
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= 1024
		if math.Abs(v) < 1024 || u == "PiB" {
			if math.Abs(v) < 10 {
				return fmt.Sprintf("%.2f %s", v, u)
			}
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// FormatRate formats a byte rate as "123.4 MiB/s".
func FormatRate(bytesPerSecond float64) string {
	return FormatSize(int64(bytesPerSecond)) + "/s"
}

// KBps converts bytes per second into the seeds' KB/s (1 KB = 1024 bytes, as
// NetVault's job monitor counts).
func KBps(bytesPerSecond float64) float64 { return bytesPerSecond / 1024 }

// FormatKiB formats a block or buffer size exactly, as the seeds write
// them: "256 KiB", "8193 KiB", "1024 KiB"; sizes that are not whole KiB
// fall back to bytes.
func FormatKiB(n int64) string {
	if n%1024 != 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d KiB", n/1024)
}

// Ratio formats a compression ratio source:media as the seeds do: "5.26:1".
// Without source or media bytes it gives "-", and so it does when the ratio
// would print as "0.00:1": a job that wrote next to no data (an incremental
// of nothing changed writes only its labels and directory entries) has no
// compression ratio to speak of.
func Ratio(source, media int64) string {
	if media <= 0 || source <= 0 {
		return "-"
	}
	r := float64(source) / float64(media)
	if r < 0.005 {
		return "-"
	}
	return fmt.Sprintf("%.2f:1", r)
}

// RatioValue returns source/media, or 0 when media is zero.
func RatioValue(source, media int64) float64 {
	if media <= 0 {
		return 0
	}
	return float64(source) / float64(media)
}

// Thousands formats n with comma separators, as the seeds' tables do:
// 105005 → "105,005".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Count writes a count with its noun, singular or plural as English wants
// it, and the count with thousands separators: "1 file", "0 files",
// "2 entries", "1,234 tapes". noun is the singular; the plural is formed by
// the regular rules (y after a consonant → ies; s, x, ch, sh → es).
// Every count word the command line prints goes through here.
func Count(n int64, noun string) string {
	if n == 1 || n == -1 {
		return Thousands(n) + " " + noun
	}
	return Thousands(n) + " " + Plural(noun)
}

// Plural returns the regular English plural of a singular noun.
func Plural(noun string) string {
	switch {
	case noun == "":
		return noun
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
