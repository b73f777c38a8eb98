"""The mnemo command: operators' and developers' entry point."""
