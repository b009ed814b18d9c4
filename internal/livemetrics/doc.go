// Package livemetrics serves a run's measurements as Prometheus metrics
// while it runs (--metrics-listen): operations by outcome, latency, queue
// and service time, operations in flight, the entity container's counters
// and the run's stage. It reads the recorder and the container when
// scraped, so it costs the run nothing between scrapes.
package livemetrics
