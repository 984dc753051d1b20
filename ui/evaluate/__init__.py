"""The Evaluate page's panels: eval data, tables, curves and gold."""
