"""Explorer components that pages compose (no page logic here)."""
