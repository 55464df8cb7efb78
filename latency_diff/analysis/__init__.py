"""Analysis: a run's records into its results (evaluate, model, warnings, controls), the exporters that format
them (export/), and the tables across runs and hosts (analyze's compare, hosts, merge). It reads what the
measurement wrote (../records.py, ../rundir.py); the run's verdicts (checks, warnings, targets) are evaluate's."""
