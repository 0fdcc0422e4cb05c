package catalog

import (
	"errors"
	"testing"
	"time"
)

func TestPolicyLifecycleAndRunOncePerSlot(t *testing.T) {
	onBoth(t, testPolicyLifecycleAndRunOncePerSlot)
}

func testPolicyLifecycleAndRunOncePerSlot(t *testing.T) {
	c, _ := openTemp(t)
	p := &Policy{Name: "nightly", Client: "web1", Selection: "home", IncrCron: "0 1 * * *", KeepGenerations: 3, Pool: "nightly", Encrypt: true}
	if err := c.CreatePolicy(p); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePolicy(p); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	slot := t0.Add(24 * time.Hour)
	ok, err := c.PolicyRan("nightly", slot.Add(time.Minute), slot)
	if err != nil || !ok {
		t.Fatalf("first run of a slot: %v %v", ok, err)
	}
	// The same slot again (a second scheduler, a restart): refused.
	if ok, err := c.PolicyRan("nightly", slot.Add(2*time.Minute), slot); err != nil || ok {
		t.Fatalf("second run of the same slot: %v %v", ok, err)
	}
	got, err := c.Policy("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastSlot.Equal(slot) || got.KeepGenerations != 3 || got.IncrCron != "0 1 * * *" || !got.Encrypt {
		t.Fatalf("policy read back: %+v", got)
	}
	got.KeepDays, got.Encrypt = 30, false
	if err := c.UpdatePolicy(got); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Policy("nightly"); err != nil || got.KeepDays != 30 || got.Encrypt {
		t.Fatalf("policy after update: %+v %v", got, err)
	}
	if err := c.DeletePolicy("nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Policy("nightly"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestSavesetCopiesAndExpiry(t *testing.T) { onBoth(t, testSavesetCopiesAndExpiry) }

func testSavesetCopiesAndExpiry(t *testing.T) {
	c, _ := openTemp(t)
	for _, l := range []string{"default", "offsite"} {
		if err := c.AddLibrary(Library{Name: l, Dir: "/vtl/" + l}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bc := range []string{"KUR001", "OFF001"} {
		lib := "default"
		if bc == "OFF001" {
			lib = "offsite"
		}
		if err := c.AddTape(bc, lib); err != nil {
			t.Fatal(err)
		}
	}
	s := &Saveset{Client: "web1", Selection: "home", Level: LevelFull, Status: StatusComplete, Library: "default", Policy: "nightly",
		Parts: []Part{{Barcode: "KUR001", File: 1, Bytes: 100}}, IndexPart: Part{Barcode: "KUR001", File: 2, Bytes: 10}}
	if err := c.CreateSaveset(s); err != nil {
		t.Fatal(err)
	}
	s.Copies = []Copy{{Copy: 1, Library: "offsite", Created: t0, Parts: []Part{{Barcode: "OFF001", File: 1, Bytes: 100}},
		IndexPart: Part{Barcode: "OFF001", File: 2, Bytes: 10}}}
	if err := c.UpdateSaveset(s); err != nil {
		t.Fatal(err)
	}
	got, err := c.Saveset(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Copies) != 1 || got.Copies[0].Library != "offsite" || got.Copies[0].Parts[0].Barcode != "OFF001" ||
		got.Copies[0].IndexPart.File != 2 || got.Policy != "nightly" || len(got.Parts) != 1 {
		t.Fatalf("saveset with a copy read back: %+v", got)
	}
	// A tape that holds only a copy still counts as holding the saveset.
	on, err := c.Savesets(SavesetFilter{Barcode: "OFF001"})
	if err != nil || len(on) != 1 {
		t.Fatalf("savesets on the copy's tape: %v %v", on, err)
	}
	if err := c.ExpireSaveset(s.ID, "expired: generation 4"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Saveset(s.ID); !got.Expired || got.ExpireReason != "expired: generation 4" {
		t.Fatalf("after expiry: %+v", got)
	}
	if err := c.SetTapePool("KUR001", "nightly"); err != nil {
		t.Fatal(err)
	}
	if pool, _ := c.TapePool("KUR001"); pool != "nightly" {
		t.Fatalf("pool: %q", pool)
	}
}
