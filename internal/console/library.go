package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/units"
)

// The library pages: a picture of each library (its slots, drives and mail
// slots, and which tape is where), a tape's details, and the actions on
// them. Every action is one short api.Service call (load, unload, export,
// import, label, add tapes, drive settings) or a queued job (erase); none
// holds the request for long.

// slotView is a slot of the picture with the tape in it.
type slotView struct {
	api.Slot
	Tape *api.Tape // nil when empty
}

// driveView is a drive of the picture with the tape in it.
type driveView struct {
	api.Drive
	Tape *api.Tape
}

// libraries lists the libraries; with one library it shows that one.
func (c *Console) libraries(w http.ResponseWriter, r *http.Request, s *session) error {
	libs, err := c.opts.Backend.Libraries(r.Context())
	if err != nil {
		return err
	}
	if len(libs) == 1 && libs[0].Error == "" {
		http.Redirect(w, r, "/libraries/"+url.PathEscape(libs[0].Name), http.StatusSeeOther)
		return nil
	}
	return c.render(w, "libraries", s, map[string]any{"Libraries": libs})
}

// library is the picture of one library.
func (c *Console) library(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	name := r.PathValue("name")
	lib, err := c.opts.Backend.Library(ctx, name)
	if err != nil {
		return err
	}
	tapes, err := c.opts.Backend.Tapes(ctx, api.TapeQuery{Library: lib.Name})
	if err != nil {
		return err
	}
	byCode := map[string]*api.Tape{}
	for i := range tapes {
		byCode[tapes[i].Barcode] = &tapes[i]
	}
	var slots, mail []slotView
	for _, sl := range lib.Slots {
		slots = append(slots, slotView{Slot: sl, Tape: byCode[sl.Barcode]})
	}
	if lib.MailSlots != nil {
		for _, sl := range *lib.MailSlots {
			mail = append(mail, slotView{Slot: sl, Tape: byCode[sl.Barcode]})
		}
	}
	var drives []driveView
	for _, d := range lib.Drives {
		drives = append(drives, driveView{Drive: d, Tape: byCode[d.Barcode]})
	}
	// Exported tapes not in a mail slot are on the shelf: listed below.
	var shelf []api.Tape
	for _, t := range tapes {
		if t.Slot == 0 && t.Drive == 0 && t.MailSlot == 0 {
			shelf = append(shelf, t)
		}
	}
	return c.render(w, "library", s, map[string]any{"Library": lib, "Slots": slots, "Drives": drives, "Mail": mail,
		"Shelf": shelf, "Tapes": len(tapes), "Admin": s.role == RoleAdmin})
}

// tape is one tape's details and the actions on it.
func (c *Console) tape(w http.ResponseWriter, r *http.Request, s *session) error {
	t, err := c.opts.Backend.Tape(r.Context(), r.PathValue("barcode"))
	if err != nil {
		return err
	}
	drives, err := c.opts.Backend.Drives(r.Context(), t.Library)
	if err != nil {
		return err
	}
	return c.render(w, "tape", s, map[string]any{"Tape": t, "Drives": drives, "Admin": s.role == RoleAdmin})
}

// tapeAction does one short action on a tape (admins; CSRF-checked) and
// goes back to its library's picture.
func (c *Console) tapeAction(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	b := c.opts.Backend
	barcode, action := r.PathValue("barcode"), r.PathValue("action")
	var t *api.Tape
	var err error
	switch action {
	case "load":
		n, perr := formInt(r, "drive", "the drive to load into")
		if perr != nil {
			return perr
		}
		req := api.TapeLoad{Drive: n}
		if err := req.Validate(); err != nil {
			return refuse(http.StatusBadRequest, "%v", err)
		}
		t, err = b.LoadTape(ctx, barcode, req)
	case "unload":
		t, err = b.UnloadTape(ctx, barcode)
	case "export":
		t, err = b.ExportTape(ctx, barcode)
	case "import":
		t, err = b.ImportTape(ctx, barcode)
	case "label":
		req := api.TapeLabelRequest{Pool: strings.TrimSpace(r.PostFormValue("pool"))}
		if err := req.Validate(); err != nil {
			return refuse(http.StatusBadRequest, "%v", err)
		}
		t, err = b.LabelTape(ctx, barcode, req)
	default:
		return refuse(http.StatusNotFound, "no tape action %q", action)
	}
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: tape "+action, "tape", barcode, "user", s.who())
	http.Redirect(w, r, "/libraries/"+url.PathEscape(t.Library)+"#tape-"+url.PathEscape(t.Barcode), http.StatusSeeOther)
	return nil
}

// eraseTape queues an erase of a tape (a job: it writes a new label and
// may expire savesets) and shows the job.
func (c *Console) eraseTape(w http.ResponseWriter, r *http.Request, s *session) error {
	req := api.JobRequest{Kind: api.KindErase, Barcode: r.PathValue("barcode"), Force: r.PostFormValue("force") == "on"}
	job, err := c.submit(r, req, "the erase of "+req.Barcode)
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: erase started", "job", job, "tape", req.Barcode, "force", req.Force, "user", s.who())
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", job), http.StatusSeeOther)
	return nil
}

// addTapes adds blank tapes to a library.
func (c *Console) addTapes(w http.ResponseWriter, r *http.Request, s *session) error {
	n, err := formInt(r, "count", "how many tapes to add")
	if err != nil {
		return err
	}
	req := api.TapeAdd{Count: n}
	if err := req.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	name := r.PathValue("name")
	added, err := c.opts.Backend.AddTapes(r.Context(), name, req)
	if err != nil {
		return err
	}
	c.opts.Log.Info("console: tapes added", "library", name, "count", len(added), "user", s.who())
	http.Redirect(w, r, "/libraries/"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

// setDrive changes a drive's block size and transfer-buffer memory, given
// with units (256KiB, 8193 KiB; a bare number is bytes).
func (c *Console) setDrive(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("name")
	n, err := strconv.Atoi(r.PathValue("drive"))
	if err != nil || n < 1 {
		return refuse(http.StatusNotFound, "no drive %q", r.PathValue("drive"))
	}
	var req api.DriveUpdate
	for field, to := range map[string]*int{"block_size": &req.BlockSizeBytes, "buffer_size": &req.BufferSizeBytes} {
		v := strings.TrimSpace(r.PostFormValue(field))
		if v == "" {
			continue
		}
		b, err := units.ParseSize(v)
		if err != nil || b > 1<<31-1 {
			return refuse(http.StatusBadRequest, "%s: %q is not a size (say 256KiB or 8193 KiB)", strings.ReplaceAll(field, "_", " "), v)
		}
		*to = int(b)
	}
	if err := req.Validate(); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	if _, err := c.opts.Backend.SetDrive(r.Context(), name, n, req); err != nil {
		return err
	}
	c.opts.Log.Info("console: drive tuned", "library", name, "drive", n, "block", req.BlockSizeBytes, "buffer", req.BufferSizeBytes, "user", s.who())
	http.Redirect(w, r, "/libraries/"+url.PathEscape(name)+"#drive-"+strconv.Itoa(n), http.StatusSeeOther)
	return nil
}

// formInt is a whole number of a form, or a 400 that says what it is.
func formInt(r *http.Request, field, what string) (int, error) {
	v := strings.TrimSpace(r.PostFormValue(field))
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, refuse(http.StatusBadRequest, "%s: %q is not a whole number (%s)", field, v, what)
	}
	return n, nil
}

func init() {
	// kib is a block or buffer size as the seeds write it (256 KiB).
	funcs["kib"] = func(n int) string { return units.FormatKiB(int64(n)) }
}
