package retention

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

var update = flag.Bool("update", false, "rewrite the decisions in testdata/*.txt")

// separator divides a scenario from its golden decisions.
const separator = "== decisions"

const timeLayout = "2006-01-02T15:04"

// scenario is one testdata file: rules, now, savesets.
type scenario struct {
	rules Rules
	now   time.Time
	sets  []Saveset
}

// parseScenario reads the part of a testdata file above the separator:
//
//	# comment
//	rules generations=2 days=14
//	now 2026-11-30T12:00
//	12 full complete 2026-11-01T01:00
//	13 incr base=12 complete 2026-11-02T01:00 expired
//
// A saveset line is ID, level, status and creation time (UTC), with base=N,
// policy=NAME and expired anywhere after the ID.
func parseScenario(text string) (scenario, error) {
	var sc scenario
	sc.now = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := bufio.NewScanner(strings.NewReader(text))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		var err error
		switch f[0] {
		case "rules":
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				var i int
				i, err = strconv.Atoi(v)
				switch k {
				case "generations":
					sc.rules.KeepGenerations = i
				case "days":
					sc.rules.KeepDays = i
				default:
					err = fmt.Errorf("unknown rule %q", k)
				}
				if err != nil {
					break
				}
			}
		case "now":
			if len(f) != 2 {
				err = errors.New("want: now TIME")
			} else {
				sc.now, err = time.Parse(timeLayout, f[1])
			}
		default:
			var ss Saveset
			ss, err = parseSaveset(f)
			sc.sets = append(sc.sets, ss)
		}
		if err != nil {
			return sc, fmt.Errorf("line %d %q: %w", n, line, err)
		}
	}
	return sc, nil
}

func parseSaveset(f []string) (Saveset, error) {
	var ss Saveset
	var err error
	if ss.ID, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return ss, err
	}
	var pos []string
	for _, tok := range f[1:] {
		switch {
		case strings.HasPrefix(tok, "base="):
			if ss.BaseID, err = strconv.ParseInt(tok[len("base="):], 10, 64); err != nil {
				return ss, err
			}
		case strings.HasPrefix(tok, "policy="):
			ss.Policy = tok[len("policy="):]
		case tok == "expired":
			ss.Expired = true
		default:
			pos = append(pos, tok)
		}
	}
	if len(pos) != 3 {
		return ss, errors.New("want: ID LEVEL [base=N] STATUS TIME [expired]")
	}
	ss.Level, ss.Status = pos[0], pos[1]
	ss.Created, err = time.Parse(timeLayout, pos[2])
	return ss, err
}

// render draws the validation result and the decisions as aligned columns.
func render(sc scenario, ds []Decision) string {
	var b strings.Builder
	if err := sc.rules.Validate(); err != nil {
		fmt.Fprintf(&b, "validate: %v\n", err)
	} else {
		fmt.Fprintf(&b, "validate: ok (%v)\n", sc.rules)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		verdict := "expire"
		if d.Keep {
			verdict = "keep"
		}
		g := "-"
		if d.Generation > 0 {
			g = "g" + strconv.Itoa(d.Generation)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", d.ID, verdict, g, d.Rule, d.Reason)
	}
	tw.Flush()
	return b.String()
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txt")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, found := strings.Cut(string(raw), separator+"\n")
			sc, err := parseScenario(input)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			ds := Decide(sc.sets, sc.rules, sc.now)
			if len(ds) != len(sc.sets) {
				t.Fatalf("%d decisions for %d savesets", len(ds), len(sc.sets))
			}
			checkInvariants(t, sc.sets, sc.rules, ds)
			got := render(sc, ds)
			if *update {
				if !found && !strings.HasSuffix(input, "\n") {
					input += "\n"
				}
				if err := os.WriteFile(file, []byte(input+separator+"\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !found {
				t.Fatalf("%s has no %q section (run go test -update)", file, separator)
			}
			if got != want {
				t.Errorf("%s: decisions differ (run go test -update and review the diff)\n got:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		r    Rules
		want string // "" = valid
	}{
		{Rules{KeepGenerations: 3}, ""},
		{Rules{KeepDays: 14}, ""},
		{Rules{KeepGenerations: 2, KeepDays: 30}, ""},
		{Rules{}, ErrKeepsNothing.Error()},
		{Rules{KeepGenerations: -1, KeepDays: 7}, "--keep-generations -1: must not be negative"},
		{Rules{KeepGenerations: 2, KeepDays: -7}, "--keep-days -7: must not be negative"},
	} {
		err := c.r.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", c.r, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	if err := (Rules{}).Validate(); !errors.Is(err, ErrKeepsNothing) {
		t.Errorf("empty rules: %v, want ErrKeepsNothing", err)
	}
	if got, want := (Rules{KeepGenerations: 3, KeepDays: 14}).String(), "--keep-generations 3 --keep-days 14"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// A huge KeepDays must not overflow into the future and expire everything.
func TestHugeKeepDays(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sets := []Saveset{
		{ID: 1, Level: LevelFull, Status: StatusComplete, Created: time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: 2, Level: LevelIncr, BaseID: 1, Status: StatusFailed, Created: time.Date(1991, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, d := range Decide(sets, Rules{KeepDays: 1 << 40}, now) {
		if !d.Keep || d.Rule != RuleAge {
			t.Errorf("%+v: want kept by age", d)
		}
	}
}

func TestDecideDoesNotModifyInput(t *testing.T) {
	sc, err := parseScenario(`
12 full complete 2026-11-01T01:00
14 incr base=13 complete 2026-11-03T01:00
13 incr base=12 complete 2026-11-02T01:00
`)
	if err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprint(sc.sets)
	Decide(sc.sets, Rules{KeepGenerations: 1}, sc.now)
	if after := fmt.Sprint(sc.sets); after != before {
		t.Errorf("input changed:\n%s\n%s", before, after)
	}
}
