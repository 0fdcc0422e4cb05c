package catalog

import (
	"strings"
	"testing"
)

// Listing the savesets on one tape must not scan every saveset: the query
// starts from the barcode index of saveset_parts.
// (SQLite's planner: SQLite only.)
func TestSavesetsByBarcodeUsesIndex(t *testing.T) {
	c, _ := openTemp(t)
	where, args := SavesetFilter{Barcode: "T1"}.where()
	rows, err := c.db.Query(`EXPLAIN QUERY PLAN `+savesetsQuery(where), args...)
	must(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		must(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	must(t, rows.Err())
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "saveset_parts_barcode") {
		t.Errorf("barcode index not used:\n%s", text)
	}
	for _, p := range plan {
		if strings.HasPrefix(p, "SCAN s") {
			t.Errorf("query scans all savesets:\n%s", text)
		}
	}
}
