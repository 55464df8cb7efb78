"""latency-diff: how much time each Java HTTP server adds to one request/response round trip.

Two stacks meet through the run's files: measure/ writes a run, analysis/ reads it. Here, between them: the
run's records and folder (records, rundir), its settings and servers (settings, servers, variants, catalog,
shard), the facts of the host (envinfo, scrub), the client outputs' parsers (lean, abparse, histogram), and
the statistics both use (stats, paired, stopping, prior, gate). bench/ holds the kit's benchmarks of its method."""

from pathlib import Path

#: The kit's top folder (this package sits directly below it).
KIT_ROOT = Path(__file__).resolve().parent.parent
