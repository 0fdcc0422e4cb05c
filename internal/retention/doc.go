// Package retention decides which savesets of one policy to keep and which to
// expire, and says why. Decide is a pure function: it reads the savesets, the
// rules and the time "now", and returns one Decision per saveset, sorted by
// ID, each with a human reason and a stable rule code. It never looks at the
// clock, the catalog or the media; the caller groups savesets by policy,
// marks the expired ones in the catalog and recycles tapes.
//
// # Chains and generations
//
// Every saveset except a full names its base in BaseID: an incremental the
// previous saveset of any level, a differential the last full. Restoring a
// saveset needs its whole chain, base after base, down to the full. BaseID is
// taken as given; a full's BaseID is ignored.
//
// A link of a chain is usable when the base exists in the input, is
// complete, is not already expired and has a known level. A generation is one
// usable full (complete, not expired) and every complete, not expired diff or
// incr whose chain of usable links leads to it. Generations are numbered
// from the newest full (by Created, then ID): generation 1 is the newest.
//
// A complete diff or incr whose chain breaks before it reaches a full is an
// orphan: its base is missing, failed, incomplete, still running or already
// expired, it has no base at all, or the chain loops. An orphan cannot be
// restored completely, so no generation holds it (Generation 0) and the
// generation rule never keeps it; the reason names the broken link. Failed
// and incomplete savesets never belong to a generation either.
//
// # Rules
//
// A saveset is kept if any of these keeps it; the first that applies, in
// this order, is the one reported:
//
//   - running: a running backup is never expired, whatever its age.
//   - generation: it belongs to one of the Rules.KeepGenerations newest
//     generations.
//   - age: it was created less than Rules.KeepDays days ago, that is after
//     now - KeepDays×24h. This is the only rule that keeps failed,
//     incomplete and orphan savesets on their own.
//   - dependency: a kept saveset depends on it. Whenever a saveset is kept,
//     for whatever reason, its base is kept too if the link is usable, and
//     so on down the chain, so a young incr keeps its old full even with
//     only KeepDays, and a young diff keeps a full that lies beyond the
//     generation count. Failed, incomplete, running and expired bases are
//     broken links: dependency does not pass through them.
//
// Everything else is expired, with rule code expired-generation (its
// generation is beyond KeepGenerations), expired-age (KeepGenerations is 0,
// so only age could have kept it), expired-failed (a failed or incomplete
// backup) or expired-orphan. A saveset that is already expired stays expired
// (already-expired); nothing resurrects it.
//
// # Invariants
//
//   - No kept saveset depends, over a usable link, on a saveset that this
//     decision expires: expiring never breaks a chain that is kept.
//   - The result depends only on the set of savesets, not on their order.
//   - With KeepGenerations ≥ 1 and at least one usable full, the newest
//     usable full is kept as generation 1.
//   - Deciding again at the same time, with the expired savesets marked as
//     expired, keeps exactly the same savesets.
//
// Retention must never lose data by misunderstanding it. Decide keeps, with
// rule code unknown, a saveset whose level or status it does not know, and
// a complete saveset whose chain breaks at such a saveset; and
// when the rules fail Validate (which a caller must check first) it keeps
// every saveset that is not already expired, with rule code invalid-rules,
// instead of expiring everything.
//
// IDs must be unique within the input; with duplicate IDs the decisions are
// deterministic but otherwise unspecified.
package retention
