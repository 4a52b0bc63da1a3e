"""controller layer (not built yet; see ../shared/DESIGN.md)."""
