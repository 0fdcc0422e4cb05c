package restorer

// WithoutPrivilegedXattrs makes the restores of a test run as a process
// that may not set security.* and trusted.* attributes, until undone.
func WithoutPrivilegedXattrs() (undo func()) {
	was := mayPrivilegedXattrs
	mayPrivilegedXattrs = func() bool { return false }
	return func() { mayPrivilegedXattrs = was }
}
