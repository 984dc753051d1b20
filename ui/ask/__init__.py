"""The Ask page's panels: the question's story, Compare, trace panels, family evidence views."""
