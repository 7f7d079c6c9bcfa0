"""Outbox consumers: background work that PocketBase queues (indexing, AI cost events)."""
