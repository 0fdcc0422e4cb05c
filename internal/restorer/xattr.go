package restorer

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kura-backup/kura/internal/index"
)

// Extended attributes come back in every namespace the backup could read.
// security.* (file capabilities, SELinux labels) and trusted.* may only be
// set by a privileged process: a restore without the privilege skips them
// and says so once for the whole job (how many entries had them), not once
// per file.

// privilegedXattr reports whether only a privileged process may set the
// attribute name.
func privilegedXattr(name string) bool {
	return strings.HasPrefix(name, "security.") || strings.HasPrefix(name, "trusted.")
}

// mayPrivilegedXattrs reports whether this process may set security.* and
// trusted.* attributes: whether CAP_SYS_ADMIN (trusted.*) and CAP_SETFCAP
// (file capabilities) are in its effective set, as they are for root. A
// variable, so that a test can restore as a process without them.
var mayPrivilegedXattrs = func() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_SYS_ADMIN) && has(unix.CAP_SETFCAP)
}

// setXattrs sets an entry's extended attributes with set, after its owner
// (chown clears a file capability). Without the privilege, the security.*
// and trusted.* ones are skipped and counted for the job's one warning;
// so are the ones the target's file system does not support.
func (r *restoreRun) setXattrs(e *index.Entry, set func(name string, value []byte) error) {
	skipped, unsupported := false, false
	for k, v := range e.Xattrs {
		if !r.privXattrs && privilegedXattr(k) {
			skipped = true
			continue
		}
		err := set(k, []byte(v))
		switch {
		case errors.Is(err, unix.ENOTSUP):
			unsupported = true
		case err != nil:
			r.warn(e.Path, fmt.Sprintf("xattr %s: %v", k, err))
		}
	}
	if skipped {
		r.privSkipped.Add(1)
	}
	if unsupported {
		r.xattrUnsupported.Add(1)
	}
}

// warnSkippedXattrs gives the job's one warning for each kind of attribute
// it could not set, naming how many entries had them.
func (r *restoreRun) warnSkippedXattrs() {
	if n := r.privSkipped.Load(); n > 0 {
		r.warn("", fmt.Sprintf("%d files had security.* or trusted.* attributes (file capabilities, SELinux labels), which only root may set: "+
			"they were restored without them; a restore as root keeps them", n))
	}
	if n := r.xattrUnsupported.Load(); n > 0 {
		r.warn("", fmt.Sprintf("%d files had extended attributes (or ACLs) that the file system of the target does not support: "+
			"they were restored without them", n))
	}
}
