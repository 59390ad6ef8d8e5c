"""airspeed velocity suites of scatterx: backends, peers, small calls, start-up, memory."""
