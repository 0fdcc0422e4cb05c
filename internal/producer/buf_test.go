package producer

import "testing"

// Buffers come in the size asked, from the smallest power-of-two class
// that holds it.
func TestBufPools(t *testing.T) {
	for _, n := range []int{1, 4096, 4097, 10 << 10, smallFile, smallFile + 1} {
		b := getBuf(n)
		if len(b) != n {
			t.Fatalf("getBuf(%d) has length %d", n, len(b))
		}
		if c := cap(b); c < n || c&(c-1) != 0 || c < 1<<minBufShift || c >= 2*max(n, 1<<minBufShift) {
			t.Fatalf("getBuf(%d) has capacity %d; want the smallest power of two ≥ max(n, 4 KiB)", n, c)
		}
		putBuf(b)
	}
}
