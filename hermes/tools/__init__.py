"""Tools the model can call: the built-ins, argument checks, workspace safety, search, file edits, MCP and plugins."""
