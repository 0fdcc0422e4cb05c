//go:build !linux

package main

import (
	"bufio"
	"os"
	"strings"
)

// readNoEcho reads a line from the terminal f (with echo: this platform's
// terminal control is not wired up).
func readNoEcho(f *os.File) (string, error) {
	line, err := bufio.NewReader(f).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}
