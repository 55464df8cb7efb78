"""latency-diff: how much time each Java HTTP server adds to one request/response round trip."""

from pathlib import Path

#: The kit's top folder (this package sits directly below it).
KIT_ROOT = Path(__file__).resolve().parent.parent
