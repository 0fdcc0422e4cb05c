// Command faults is Kura's repeatable fault campaign: it builds the kura
// binary, backs a generated tree up into a temporary home (a full and an
// incremental), then runs many trials, each on a fresh copy of that home and
// its library, injects one fault, runs kura's own commands on the result and
// classifies what happened:
//
//	detected   a command exited non-zero or reported the damage
//	harmless   nothing was reported and every restore is byte-identical
//	silent     a restore exited 0 but its tree differs from the source
//	escape     something was written outside the restore target
//	hang       a command passed the timeout
//
// Fault kinds: bit flips, truncation and deletion of every kind of file in
// the home and the library; kill -9 of a backup; a full tmpfs under the home
// or the library (root only); hostile savesets crafted from docs/design.md,
// put on a tape, scanned and restored; a server and an agent with the client
// revoked mid-backup and mid-restore.
//
//	go run ./scripts/faults                 # default campaign, ~5-10 minutes
//	go run ./scripts/faults -n 3            # three times the trials
//	go run ./scripts/faults -kinds flip,kill -json /tmp/faults.json
//
// It prints a table of counts per kind and the totals, and writes every
// trial (fault, commands, exit codes, outcome) to a JSON file. The exit
// status is 1 when any trial is silent, an escape or a hang. See docs/faults.md.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Outcome classifies one trial.
type Outcome string

const (
	Detected Outcome = "detected"
	Harmless Outcome = "harmless"
	Silent   Outcome = "silent"
	Escape   Outcome = "escape"
	Hang     Outcome = "hang"
	Skipped  Outcome = "skipped" // the trial could not be set up (e.g. no root for tmpfs)
)

// Trial is one fault and what kura made of it.
type Trial struct {
	Kind     string    `json:"kind"`
	Fault    string    `json:"fault"`
	Outcome  Outcome   `json:"outcome"`
	Lost     bool      `json:"lost,omitempty"` // detected, but an invariant broke: an earlier saveset stopped restoring or a new backup failed
	Detail   string    `json:"detail,omitempty"`
	Commands []Command `json:"commands"`
	Seconds  float64   `json:"seconds"`
}

// Command is one kura invocation of a trial.
type Command struct {
	Args    []string `json:"args"`
	Exit    int      `json:"exit"` // -1: timed out (hang)
	Seconds float64  `json:"seconds"`
	Output  string   `json:"output,omitempty"` // the tail of stdout+stderr
	stdout  string   // all of stdout
}

// Report is the JSON result file.
type Report struct {
	Started  time.Time                  `json:"started"`
	Seed     uint64                     `json:"seed"`
	Scale    int                        `json:"scale"`
	Counts   map[string]map[Outcome]int `json:"counts"`
	Totals   map[Outcome]int            `json:"totals"`
	Lost     int                        `json:"lost"`
	Trials   []Trial                    `json:"trials"`
	Failures []Trial                    `json:"failures"` // silent, escape and hang trials, with their reproducers
}

// kindDefault is a kind of fault and its default number of trials.
type kindDefault struct {
	name string
	n    int
}

// kindDefaults in run order (counts scaled by -n).
var kindDefaults = []kindDefault{
	{"flip", 120},
	{"truncate", 60},
	{"delete", 30},
	{"kill", 25},
	{"tmpfs-home", 8},
	{"tmpfs-library", 8},
	{"hostile", len(hostileCases)},
	{"revoke", 2},
}

func main() {
	var (
		scale   = flag.Int("n", 1, "scale the number of trials of every kind by this factor")
		seed    = flag.Uint64("seed", 0, "random seed (0: from the clock); printed so a run can be repeated")
		kinds   = flag.String("kinds", "", "comma-separated kinds to run (default all): flip,truncate,delete,kill,tmpfs-home,tmpfs-library,hostile,revoke")
		jsonOut = flag.String("json", "", "write the result here (default: kura-faults-SEED.json in the temporary folder)")
		kura    = flag.String("kura", "", "use this kura binary instead of building ./cmd/kura")
		work    = flag.String("work", "", "work folder (default: a new temporary folder, removed at the end unless -keep)")
		keep    = flag.Bool("keep", false, "keep the work folder (trial homes of failures are always kept)")
		each    = flag.Int("each", 0, "run exactly this many trials of every kind (overrides the defaults and -n)")
		timeout = flag.Duration("timeout", 60*time.Second, "a command running longer than this is a hang")
	)
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	if *jsonOut == "" {
		*jsonOut = filepath.Join(os.TempDir(), fmt.Sprintf("kura-faults-%d.json", *seed))
	}
	c := &campaign{timeout: *timeout, rng: rand.New(rand.NewPCG(*seed, 0x6b757261))}
	var err error
	if c.work = *work; c.work == "" {
		if c.work, err = os.MkdirTemp("", "kura-faults-"); err != nil {
			fatal(err)
		}
	}
	c.work, _ = filepath.Abs(c.work)
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		fatal(err)
	}
	if c.kura = *kura; c.kura == "" {
		c.kura = filepath.Join(c.work, "kura")
		fmt.Fprintf(os.Stderr, "building kura into %s\n", c.kura)
		cmd := exec.Command("go", "build", "-o", c.kura, "./cmd/kura")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fatal(fmt.Errorf("go build ./cmd/kura (run from the top of the repository): %w", err))
		}
	}
	c.kura, _ = filepath.Abs(c.kura)
	fmt.Fprintf(os.Stderr, "seed %d, work %s\n", *seed, c.work)
	if err := c.setup(); err != nil {
		fatal(fmt.Errorf("setup: %w", err))
	}
	want := map[string]bool{}
	for _, k := range strings.Split(*kinds, ",") {
		if k != "" {
			want[k] = true
		}
	}
	rep := Report{Started: time.Now().UTC(), Seed: *seed, Scale: *scale, Counts: map[string]map[Outcome]int{}, Totals: map[Outcome]int{}}
	for _, kd := range kindDefaults {
		if len(want) > 0 && !want[kd.name] {
			continue
		}
		n := kd.n * *scale
		if *each > 0 {
			n = *each
		}
		for i := 0; i < n; i++ {
			start := time.Now()
			t := c.run(kd.name, i)
			t.Seconds = time.Since(start).Seconds()
			rep.Trials = append(rep.Trials, t)
			if rep.Counts[t.Kind] == nil {
				rep.Counts[t.Kind] = map[Outcome]int{}
			}
			rep.Counts[t.Kind][t.Outcome]++
			rep.Totals[t.Outcome]++
			if t.Lost {
				rep.Lost++
			}
			if t.Outcome == Silent || t.Outcome == Escape || t.Outcome == Hang {
				rep.Failures = append(rep.Failures, t)
				fmt.Fprintf(os.Stderr, "!! %s %s: %s — %s\n", t.Kind, t.Outcome, t.Fault, t.Detail)
			} else if t.Lost {
				fmt.Fprintf(os.Stderr, "!  %s lost: %s — %s\n", t.Kind, t.Fault, t.Detail)
			}
		}
		fmt.Fprintf(os.Stderr, "%-14s done: %v\n", kd.name, rep.Counts[kd.name])
	}
	printTable(os.Stdout, &rep)
	b, _ := json.MarshalIndent(&rep, "", "  ")
	if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
		fatal(err)
	}
	fmt.Printf("results: %s\n", *jsonOut)
	if !*keep && len(rep.Failures) == 0 && *work == "" {
		os.RemoveAll(c.work)
	} else {
		fmt.Printf("work folder kept: %s\n", c.work)
	}
	if len(rep.Failures) > 0 {
		os.Exit(1)
	}
}

func printTable(w *os.File, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "kind\ttrials\tdetected\tharmless\tsilent\tescape\thang\tskipped\t(lost)\t\n")
	var kinds []string
	for k := range rep.Counts {
		kinds = append(kinds, k)
	}
	order := func(k string) int {
		return slices.IndexFunc(kindDefaults, func(d kindDefault) bool { return d.name == k })
	}
	slices.SortFunc(kinds, func(a, b string) int { return order(a) - order(b) })
	lost := map[string]int{}
	for _, t := range rep.Trials {
		if t.Lost {
			lost[t.Kind]++
		}
	}
	row := func(name string, m map[Outcome]int, l int) {
		n := 0
		for _, v := range m {
			n += v
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, n, m[Detected], m[Harmless], m[Silent], m[Escape], m[Hang], m[Skipped], l)
	}
	for _, k := range kinds {
		row(k, rep.Counts[k], lost[k])
	}
	row("TOTAL", rep.Totals, rep.Lost)
	tw.Flush()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "faults:", err)
	os.Exit(1)
}
