"""Command groups of the `mnemo` command, one module each."""
