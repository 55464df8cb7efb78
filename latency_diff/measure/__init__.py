"""Measuring: the run's command line (cli), its rounds of process pairs (driver, lanes, pair, schedule), the
clients and processes, the warm-up, and the counting and profiling windows after a pair. It writes the run's
records (../records.py, ../rundir.py); the analysis reads only those."""
