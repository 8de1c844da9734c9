"""Configuration: settings from config.toml, paths under HERMES_HOME, keys and the keys file, URL policy and MCP server entries."""
