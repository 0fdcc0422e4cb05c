package index

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// DisplayPath is the one way a file is named in warnings and problems:
// absolute ("/srv/data/x", whether it came from the walk or from an index,
// which names it "srv/data/x"), and printable: names that are not UTF-8
// are quoted with their bytes escaped (\xff), as GNU tar and ls do.
func DisplayPath(p string) string {
	if len(p) > 1024 || strings.IndexByte(p, 0) >= 0 {
		return ShortPath(p) // a hostile name: quoted and shortened
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if utf8.ValidString(p) {
		return p
	}
	return strconv.Quote(p)
}
