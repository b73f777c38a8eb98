"""Audit service: appends audit events to the per-tenant hash chain."""
