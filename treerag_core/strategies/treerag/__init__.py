"""The TreeRAG family: locate leaves, then retrieve inside them; its flat and oracle kin."""

STRATEGY_MODULES = ("strategy", "oracle")  # oracle-sections: the routing ceiling (evaluation)
