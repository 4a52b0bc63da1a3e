"""The kcat driver: see ../SCENARIOS.md."""
