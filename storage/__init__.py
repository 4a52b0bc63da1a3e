"""storage layer (not built yet; see ../shared/DESIGN.md)."""
