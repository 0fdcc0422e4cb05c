package engine

import (
	"errors"
	"fmt"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/library"
)

// Tape pools. Every tape belongs to one pool, named in the catalog; the
// scratch pool (catalog.ScratchPool, "") holds blank and recycled tapes and
// the tapes of ad-hoc backups. A backup for a policy writes to its pool:
// an appendable tape of the pool first, then a blank one from scratch (or
// the pool), which then joins the pool. Retention returns a tape whose
// savesets have all expired to scratch, erased.

// poolFilter says which writable tapes a backup for pool may take.
func (e *Env) poolFilter(pool string) (library.TapeFilter, error) {
	pools, err := e.Catalog.TapePools()
	if err != nil {
		return nil, err
	}
	return func(barcode string, blank bool) bool {
		p := pools[barcode]
		return p == pool || (blank && p == catalog.ScratchPool)
	}, nil
}

// claimTape puts a tape a backup has taken from lib into its pool.
func (e *Env) claimTape(lib library.Changer, barcode, pool string) error {
	if err := e.knowTape(lib, barcode); err != nil {
		return err
	}
	cur, err := e.Catalog.TapePool(barcode)
	if err != nil || cur == pool {
		return err
	}
	return e.Catalog.SetTapePool(barcode, pool)
}

// knowTape registers in the catalog a tape of lib it does not know: a
// tape library's cartridges come and go through its door, and one a job
// has just labelled and written must be found again by barcode.
func (e *Env) knowTape(lib library.Changer, barcode string) error {
	_, err := e.Catalog.TapeLibrary(barcode)
	if errors.Is(err, catalog.ErrNotFound) {
		return e.Catalog.AddTape(barcode, lib.Config().Name)
	}
	return err
}

// WritableTapes counts the tapes of a library a backup for pool could
// write to (the server's queue waits "for a tape" when there are none).
func (e *Env) WritableTapes(lib library.Changer, pool string) (int, error) {
	allow, err := e.poolFilter(pool)
	if err != nil {
		return 0, err
	}
	tapes, err := lib.Tapes()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tapes {
		// A tape library's cartridge Kura has not read yet may be blank.
		blank := t.State == library.StateBlank || t.State == library.StateUnread
		if (blank || t.State == library.StateAppendable) && !t.MarkedFull && t.Used < t.EarlyWarning && t.MailSlot == 0 && allow(t.Barcode, blank) {
			n++
		}
	}
	return n, nil
}

// ErrTapeInUse: a tape holds unexpired savesets, so what it is for cannot
// change (its pool) until they expire or it is erased.
var ErrTapeInUse = errors.New("tape holds unexpired savesets")

// LabelTape puts a tape into a pool (catalog.ScratchPool returns it to
// scratch): a backup for that pool may then take it, and no other. A tape
// that holds unexpired savesets stays in its pool (ErrTapeInUse); putting
// a tape into the pool it is in changes nothing.
func (e *Env) LabelTape(barcode, pool string) error {
	if _, err := e.ChangerOfTape(barcode); err != nil {
		return err
	}
	cur, err := e.Catalog.TapePool(barcode)
	if err != nil || cur == pool {
		return err
	}
	live, err := e.liveSavesets("", barcode)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		ids := make([]int64, 0, len(live))
		for _, s := range live {
			ids = append(ids, s.ID)
		}
		return fmt.Errorf("tape %s holds unexpired savesets %v of pool %s: %w; it stays in its pool until they expire or it is erased",
			barcode, ids, poolName(cur), ErrTapeInUse)
	}
	return e.Catalog.SetTapePool(barcode, pool)
}

// poolName is a pool's name as the CLI prints it.
func poolName(pool string) string {
	if pool == catalog.ScratchPool {
		return "scratch"
	}
	return pool
}
