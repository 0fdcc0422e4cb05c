package api

// Service is every admin action of Kura as typed calls on wire types. It
// has two implementations with the same behaviour: service.Local runs the
// action in this process on a Kura home (the CLI without a server, and the
// server's own handlers), and apiclient.Client sends it to a server. The
// CLI holds a Service and cannot tell which one it has, so a verb prints
// the same and exits the same in local and in server mode.
//
// Errors are *Error values (a stable code, a message, the field at fault),
// or errors that wrap one; the CLI maps the code to its exit code and adds
// the words that say which command to run next (docs/api.md, "Errors").
//
// Each resource group is its own interface, in the file of its wire types.
type Service interface {
	LibraryService
	TapeService
	DriveService
	SavesetService
	SelectionService
	JobService
	PolicyService
	CatalogCopyService
	PlanService
}
