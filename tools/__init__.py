"""Developer tools that are not part of the millpond package (see tools/capture)."""
