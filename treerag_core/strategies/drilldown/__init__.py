"""The drill-down family (seed 001): document by K-Type summary, parent section, passages."""
