"""Offline variation algorithms: how a plan changes a seed while keeping its profile."""
