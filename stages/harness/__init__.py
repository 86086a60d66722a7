"""The harness: the only code that compiles, launches, verifies, times, inspects and reports."""
