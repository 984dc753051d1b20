"""The Documents page's panels: upload and review, the tree editor, family builds."""
