package console

import (
	"os"
	"testing"

	"github.com/kura-backup/kura/internal/console/browsertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.Close() // the one Chromium of this package's browser tests
	os.Exit(code)
}
