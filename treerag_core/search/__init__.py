"""Search stage: fusion, retrieval in leaves, structure signals, locators, routing, rerank."""
