"""Building blocks every page uses: session slots, resources, the tree graph, tables, errors."""
