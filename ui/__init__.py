"""Explorer view components shared by the pages (no engine logic here)."""
