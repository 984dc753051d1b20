"""Explorer components that are not pages (each renders one view of the engine's output)."""
