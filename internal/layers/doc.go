// Package layers holds no code: its test checks the layering of Kura's
// packages, drawn here and in docs/design.md ("Layers"). A package may
// import packages of its own layer or of the layers below it, never above;
// a new package must be placed in the table (layers_test.go) to build.
//
//	7  commands     cmd/kura
//	                  │ local mode: service in process · server mode: apiclient
//	6  edges        server (HTTP → service)  console (+browsertest, for tests)  metrics  bench
//	5  services     service (api.Service on an engine.Env)
//	4  engine       engine (backup, restore, verify, copy, prune, scan, catalog DR)
//	3  jobs, agent  job (leases, phases, figures)   agent (producer/restorer over apiclient)   node (a storage node: its libraries over a tunnel)
//	2  records,     catalog  library  producer  restorer  apiclient
//	   movers
//	1  formats,     tape (+tapetest, faultfs, faultdev, memtape, sttape, mtx(+mtxtest), s3tape(+versitygw, for tests))  span  stream  walk  catalogbackup  plugin
//	   wire         api (wire types + api.Service; imports only rules, compress)
//	0  foundations  units rules private compress index retention schedule home pki planner monitor seal  pgtest (for tests and bench) mariadbtest (for tests)
//
// Two further rules are checked by their own packages' tests: internal/api
// imports nothing of the catalog, the engine, the index or the monitor
// (TestAPIDependencies), and the agent links no SQLite driver and no
// catalog (TestAgentDependencies).
package layers
