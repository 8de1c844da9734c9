"""Routing facts as data: the route table, model profiles, resolving a provider/model/URL to a target, and tool-id rules."""
