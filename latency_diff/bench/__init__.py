"""The kit's benchmarks of its own method: one entry point, `scripts/bench.sh NAME` (python3 -m latency_diff.bench).

    robustness  quiet against the stall and drift injectors: diffs agree, intervals at most 1.5x as wide
    interleave  how finely to interleave: the run length's effect on precision per minute and on the diff
    warmup      a pair's preparation: warm-up length, the JIT wait, preparing ahead; time and diffs
    pinning     precision per minute of shared, split and no pinning
    matrix      one server against itself across JDKs, library releases or settings (jdks, releases, settings)
    coverage    K default runs: how often each run's 95% interval holds the truth (other runs' mean, a control's)
    sensitivity each choice of the method (run length, warm-up, JIT wait, ...) against the default, by ratio
    windows     what counting and profiling cost: the same pairs with their windows and without
    independent the kit's ratio against a measurement made apart from it (own client, statistics, processes)
    firstrun    a newcomer's first run: a fresh clone, an empty HOME, the quick run of Undertow; minutes to the table
    lend        lending the measured CPU while a process is prepared: the same pairs with --lend-cpu on and off
    gate        the CI gate on known cases: an old JDK's known regression must fail, A/A runs must not

Targets are measured here and in committed runs, never in tests. Each writes results/<name>-<time>/.
"""
