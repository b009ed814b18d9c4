// Package browser is the RUBiS emulated browser: one simulated user at a
// time, walking the client's Markov chain (workload.MarkovWalk) over the
// PHP site's pages and sending, for each state, the request the original
// Java client (edu.rice.rubis.client.UserSession) sends: the same script,
// the same parameter names and order, GET always, with the ids taken from
// the links and forms of the page last received, as the original takes
// them, and the same random choices for what it makes up (bids, items,
// comments, registrations).
//
// The original's quirks are kept by default and documented where they are
// made: ids drawn from the population (category, region, the user id in
// forms) are 0-based indexes, while nicknames count from 1; a page saying
// "Sorry" sends the next request back through the history; a page saying
// "ERROR" is an error page: counted, and the session goes back to Home at
// once. Flags turn the few that hurt a modern server off (OneBasedIDs,
// UniqueNicknames, SkipImages).
//
// It talks HTTP to any implementation of the site, reads pages as the
// original does (a search of the raw reply for the keys it extracts), and
// knows nothing of the database,
// the driver or the CLI: it depends on the workload package (for the walk)
// and the standard library only.
package browser
