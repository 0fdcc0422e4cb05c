package catalog

import "fmt"

// MoveLibrary records that the library called name is now in folder dir: a
// library folder that was moved, or found elsewhere when a catalog is
// restored from tape. ErrNotFound if there is no such library.
func (c *Catalog) MoveLibrary(name, dir string) error {
	if dir == "" {
		return fmt.Errorf("catalog: library %q needs a folder: %w", name, ErrInvalid)
	}
	if err := execOne(c.db, "library "+quote(name), `UPDATE libraries SET dir = ? WHERE name = ?`, dir, name); err != nil {
		return fmt.Errorf("catalog: moving library: %w", err)
	}
	return nil
}
