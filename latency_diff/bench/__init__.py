"""The kit's benchmarks of its own method: one entry point, `scripts/bench.sh NAME` (python3 -m latency_diff.bench).

Each is a module here, listed once in __main__.BENCHMARKS; its docstring's first line is its summary in
`bench.sh --help`. Targets are measured here and in committed runs, never in tests. Each writes
results/<name>-<time>/.
"""
