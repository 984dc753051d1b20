"""Base layer: shared types, names, settings, errors, text rules, the checked artifact reader."""
